"""Token estimates without a tokenizer: what budgets fall back on when tiktoken is missing."""

from __future__ import annotations

import math
import re

# CJK ideographs, kana and hangul: roughly one token each in BPE tokenizers.
_WIDE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    """About four characters per token, one per CJK character; never zero for non-empty text."""
    if not text:
        return 0
    wide = len(_WIDE.findall(text))
    return max(1, wide + math.ceil((len(text) - wide) / 4))
