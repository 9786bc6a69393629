"""Split a long memory body into overlapping chunks for the index (one memory id, many rows).

Sizes follow the seed: a body over ~2,000 tokens becomes chunks of at most ~2,000 tokens that
overlap by ~200. Tokens are estimated (`memctl.core.language.tokens.estimate_tokens`: ~4 characters per
token, one per CJK character), which needs no tokenizer, keeps sync fast and gives the same
chunks on every machine, so recall can re-derive a row's chunk from the file.

Chunks end at a paragraph break when one falls in the second half of the chunk, otherwise at a
sentence end, otherwise at a line break or a space; a chunk is always a slice of the body.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memctl.core.language.tokens import estimate_tokens

CHUNK_TOKENS = 2000
OVERLAP_TOKENS = 200

_PARAGRAPH_END = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = re.compile(r"(?:[.!?]+[\"'”’)\]]*[ \t]+|[。！？；]+[”」』）]*\s*|\n\s*)")
_SPACE = re.compile(r"\s+")


def needs_chunks(
    body: str, max_tokens: int = CHUNK_TOKENS, count: Callable[[str], int] = estimate_tokens
) -> bool:
    return count(body) > max_tokens


def split_chunks(
    body: str,
    max_tokens: int = CHUNK_TOKENS,
    overlap: int = OVERLAP_TOKENS,
    count: Callable[[str], int] = estimate_tokens,
) -> list[str]:
    """The body itself if it fits in `max_tokens`, else overlapping slices of it, in order."""
    if not needs_chunks(body, max_tokens, count):
        return [body]
    overlap = max(0, min(overlap, max_tokens // 2))
    units = _units(body, max(1, min(max_tokens, overlap or max_tokens) // 2), count)
    prefix = [0]  # prefix[i]: tokens in units[:i]
    for text, _ in units:
        prefix.append(prefix[-1] + count(text))
    chunks: list[str] = []
    start = 0
    while start < len(units):
        end = start + 1
        while end < len(units) and prefix[end + 1] - prefix[start] <= max_tokens:
            end += 1
        if end < len(units):
            end = _paragraph_cut(units, prefix, start, end, max_tokens)
        text = "".join(text for text, _ in units[start:end]).strip()
        if text:
            chunks.append(text)
        if end >= len(units):
            break
        start = _overlap_start(prefix, start, end, overlap)
    return chunks


def _paragraph_cut(units, prefix: list[int], start: int, end: int, max_tokens: int) -> int:
    """Move the end back to the last paragraph break if that keeps at least half a chunk."""
    for i in range(end - 1, start, -1):
        if units[i - 1][1]:
            return i if prefix[i] - prefix[start] >= max_tokens // 2 else end
    return end


def _overlap_start(prefix: list[int], start: int, end: int, overlap: int) -> int:
    """The first unit of the next chunk: as many trailing units as fit in `overlap` tokens."""
    begin = end
    while begin - 1 > start and prefix[end] - prefix[begin - 1] <= overlap:
        begin -= 1
    return begin


def _units(body: str, piece_tokens: int, count: Callable[[str], int]) -> list[tuple[str, bool]]:
    """(text, ends a paragraph) pieces whose concatenation is the body; none over piece_tokens."""
    units: list[tuple[str, bool]] = []
    for paragraph in _split_keep(body, _PARAGRAPH_END):
        pieces = []
        for sentence in _split_keep(paragraph, _SENTENCE_END):
            pieces.extend(_split_long(sentence, piece_tokens, count))
        units.extend((piece, False) for piece in pieces[:-1])
        units.append((pieces[-1], True))
    return units


def _split_keep(text: str, separator: re.Pattern) -> list[str]:
    """Split after each separator match, keeping it on the left piece (no text is lost)."""
    pieces, cursor = [], 0
    for match in separator.finditer(text):
        if match.end() > cursor:
            pieces.append(text[cursor : match.end()])
            cursor = match.end()
    if cursor < len(text):
        pieces.append(text[cursor:])
    return pieces or [text]


def _split_long(text: str, limit: int, count: Callable[[str], int]) -> list[str]:
    """A sentence over `limit` tokens, cut at spaces (or, with none, every `limit` characters)."""
    if count(text) <= limit:
        return [text]
    pieces: list[str] = []
    current: list[str] = []
    total = 0
    for word in _split_keep(text, _SPACE):
        size = count(word)
        if current and total + size > limit:
            pieces.append("".join(current))
            current, total = [], 0
        if size > limit:
            pieces.extend(word[i : i + limit] for i in range(0, len(word), limit))
        else:
            current.append(word)
            total += size
    if current:
        pieces.append("".join(current))
    return pieces
