"""Text for the full-text index: Chinese, Japanese and Korean runs cut into words or bigrams.

LanceDB's tokenizer splits on whitespace and punctuation, so a Chinese sentence is one token
(and dropped whole when it is over 40 bytes): BM25 never matches it. Here each CJK run is
rewritten as space-separated tokens, for the indexed text and for the query alike. Latin text
is left exactly as it is, so LanceDB still stems and drops stop words there; digits are not
part of a run, so phone and ID numbers stay whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# Han (with extension A and compatibility ideographs), kana, half-width katakana, Hangul.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
CJK_RUN = re.compile(f"[{_HAN}{_KANA}{_HANGUL}]+")
HAN_ONLY = re.compile(f"[{_HAN}]+")

# Chinese words so common they carry no topic; a query made only of them matches nothing.
CHINESE_STOP_WORDS = frozenset(
    "的 了 是 在 和 与 及 或 也 都 就 要 会 能 可 把 被 让 给 对 从 向 到 为 以 于 由 将 而 "
    "我 你 他 她 它 我们 你们 他们 这 那 这个 那个 这些 那些 什么 怎么 怎样 如何 哪 哪个 哪里 "
    "吗 呢 吧 啊 呀 嘛 么 之 其 该 个 些 一个 有 没有 不 没 很 还 又 再 等 着 过 地 得".split()
)

Splitter = Callable[[str], Iterable[str]]


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def bigrams(run: str) -> list[str]:
    """Overlapping character pairs; a single character stands alone."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def searchable_text(text: str, split_han: Splitter | None = None) -> str:
    """`text` with every CJK run replaced by its tokens, space-separated.

    `split_han` cuts a run of Chinese characters into words (a dictionary segmenter); without
    one, and for kana and Hangul, runs become overlapping bigrams.
    """
    if not has_cjk(text):
        return text

    def tokens(match: re.Match) -> str:
        run = match.group(0)
        if split_han is not None and HAN_ONLY.fullmatch(run):
            words = [w for w in split_han(run) if w.strip()]
        else:
            words = bigrams(run)
        kept = [w for w in words if w not in CHINESE_STOP_WORDS]
        return " " + " ".join(kept) + " "

    return CJK_RUN.sub(tokens, text)


# A CJK character carries about as much as a short Latin word: weigh it like write.min_chars.
_NON_LATIN_WEIGHT = 3


def non_latin_share(text: str) -> float:
    """Share of `text`'s letters outside the Latin script, a CJK character counting 3 letters."""
    latin = other = 0
    for char in text:
        if not char.isalpha():
            continue
        if char.isascii() or "\u00c0" <= char <= "\u024f":
            latin += 1
        else:
            other += _NON_LATIN_WEIGHT if CJK_RUN.match(char) else 1
    return other / (latin + other) if latin + other else 0.0
