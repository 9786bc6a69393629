"""The word-frequency lists shipped in memctl/data/wordfreq (from the wordfreq package).

Each list has one line per Zipf value (times ten): `z31<TAB> word word ... `. A lookup searches
the text for ` word ` instead of building a dictionary of 67k words first: recall asks for a
handful of words per query, and a fresh `memctl recall` should not pay to index the lists.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "wordfreq"
LANGUAGES = ("en", "zh")


@lru_cache(maxsize=1)
def _lists() -> tuple[str, ...]:
    found = []
    for language in LANGUAGES:
        try:
            found.append((DATA / f"{language}.txt").read_text(encoding="utf-8"))
        except OSError:
            continue  # Why: a missing list only makes weights flatter; recall still works.
    return tuple(found)


@lru_cache(maxsize=4096)
def zipf(word: str) -> float | None:
    """log10 of the word's frequency per billion words; None when no shipped list has it."""
    if not word or any(c.isspace() for c in word):
        return None
    needle = f" {word} "
    for text in _lists():
        position = text.find(needle)
        if position >= 0:
            start = text.rfind("\n", 0, position) + 1
            return int(text[start + 1 : text.index("\t", start)]) / 10
    return None
