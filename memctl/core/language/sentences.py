"""Sentence splitting for English and Chinese text (no numpy, no models)."""

from __future__ import annotations

import re

# Words whose trailing period does not end a sentence.
ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "st",
    "sr",
    "jr",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "inc",
    "ltd",
    "co",
    "corp",
    "approx",
    "dept",
    "fig",
    "no",
    "vol",
    "cf",
    "al",
    "est",
    "min",
    "max",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
}

_BOUNDARY = re.compile(
    r"[.!?]+[\"'”’)\]]*(?=\s|$)"  # Western end punctuation, then space or end
    r"|[。！？]+[”」』）\"']*"  # Chinese end punctuation needs no space
    r"|[!?]+(?=[\u3400-\u9fff])"  # ASCII ! or ? directly followed by Chinese
)
_LIST_MARKER = re.compile(r"^\s*(?:>\s*)*(?:[-*•+]\s+|\d{1,3}[.)]\s+|#{1,6}\s+)?")
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CJK = re.compile(r"[\u3400-\u9fff]")


def strip_code_blocks(text: str) -> str:
    """Text with closed fenced code blocks removed (an unclosed fence is left as is)."""
    return _FENCE.sub("\n", text)


def split_sentences(text: str) -> list[str]:
    """Sentences in order; line breaks end a sentence unless the line obviously wraps."""
    sentences: list[str] = []
    for line in _logical_lines(text):
        sentences.extend(_split_line(line))
    return sentences


def _logical_lines(text: str) -> list[str]:
    """Lines with list markers removed and hard-wrapped lines rejoined."""
    lines: list[str] = []
    previous_blank = True
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not raw.strip():
            previous_blank = True
            continue
        marker = _LIST_MARKER.match(raw)
        is_item = bool(marker and marker.group(0).strip())
        line = raw[marker.end() :].strip() if marker else raw.strip()
        if not line:
            continue
        if lines and not previous_blank and not is_item and _continues(lines[-1], line):
            lines[-1] = f"{lines[-1]} {line}"
        else:
            lines.append(line)
        previous_blank = False
    return lines


def _continues(previous: str, line: str) -> bool:
    """A hard-wrapped sentence: the previous line stops mid-sentence and this one goes on."""
    return bool(re.search(r"[a-z,;]$", previous)) and line[0].islower()


def _split_line(line: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(line):
        end = match.end()
        if match.group(0)[0] == "." and not _ends_sentence(line, start, match.start(), end):
            continue
        piece = line[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    rest = line[start:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def _ends_sentence(line: str, start: int, dot: int, end: int) -> bool:
    words = line[start:dot].split()
    word = words[-1].lower().lstrip("(\"'") if words else ""
    if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
        return False
    # "a.m. the" or "U.S. law": a dotted abbreviation followed by more of the sentence.
    following = line[end:].lstrip()
    return not ("." in word and following[:1].islower())


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def join_sentences(sentences: list[str]) -> str:
    """Sentences back into text: a space between Western sentences, none after Chinese ones."""
    out = ""
    for sentence in sentences:
        if out and not re.search(r"[。！？”」』）]$", out):
            out += " "
        out += sentence
    return out
