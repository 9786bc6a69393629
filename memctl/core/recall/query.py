"""A recall query parsed once: what every ranking stage reads instead of the query string.

The words to search, the exact identifiers and paths, the time it names, its script and the
kind of answer it asks for are read here, at the edge; a stage that needs one of them takes it
from the `ParsedQuery` (see service.retrieval.stages). Pure: the word-frequency list that weighs
the terms is passed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from memctl.core.language.text_tokens import non_latin_share, searchable_text
from memctl.core.recall.answer_kinds import asked_kind
from memctl.core.recall.evidence import Zipf, query_terms, term_weights
from memctl.core.recall.ranking import query_identifiers
from memctl.core.recall.when import Window

# A file or folder path as people type it: two or more parts joined by "/", or a file name with
# a known-looking extension ("recall.py", "config.yaml").
_PATH = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+|(?<![\w/.-])[\w-]+\.[A-Za-z]{1,5}(?![\w.])")


def query_paths(text: str) -> tuple[str, ...]:
    """Paths and file names the query names, in order, without repeats."""
    seen: dict[str, None] = {}
    for found in _PATH.findall(text):
        token = found.strip(".,;:")
        if ("/" in token or "." in token) and not token.replace(".", "").isdigit():
            seen.setdefault(token, None)
    return tuple(seen)


def mostly_cjk(text: str) -> bool:
    return non_latin_share(text) > 0.5


@dataclass(frozen=True)
class ParsedQuery:
    """One query as the ranking reads it.

    `terms` and `weights` leave out the words that named the time (`window.phrase`): the date
    answers them, not a memory's words.
    """

    text: str
    searchable: str  # what the full-text index is asked (CJK runs cut into its tokens)
    identifiers: tuple[str, ...]
    paths: tuple[str, ...]
    cjk: bool  # mostly in a CJK script
    asked_kind: str | None  # answer_kinds.TIME / PLACE when it asks when / where
    window: Window | None = None
    terms: tuple[str, ...] = ()
    weights: Mapping[str, float] = field(default_factory=dict)

    @property
    def language(self) -> str:
        return "cjk" if self.cjk else "latin"

    def with_window(self, window: Window | None, zipf: Zipf) -> ParsedQuery:
        """The same query read with `window` as the time it names."""
        terms = tuple(query_terms(without_phrase(self.text, window)))
        return replace(self, window=window, terms=terms, weights=term_weights(terms, zipf))

    def to_dict(self) -> dict:
        window = self.window
        return {
            "terms": list(self.terms),
            "identifiers": list(self.identifiers),
            "paths": list(self.paths),
            "language": self.language,
            "asked_kind": self.asked_kind,
            "time": None
            if window is None
            else {
                "since": window.since.isoformat() if window.since else None,
                "until": window.until.isoformat() if window.until else None,
                "phrase": window.phrase,
            },
        }


def parse_query(text: str, zipf: Zipf, window: Window | None = None) -> ParsedQuery:
    parsed = ParsedQuery(
        text=text,
        searchable=searchable_text(text),
        identifiers=tuple(query_identifiers(text)),
        paths=query_paths(text),
        cjk=mostly_cjk(text),
        asked_kind=asked_kind(text),
    )
    return parsed.with_window(window, zipf)


def without_phrase(query: str, window: Window | None) -> str:
    """The query without the words that named its time."""
    if window is None or not window.phrase:
        return query
    start = query.lower().find(window.phrase)
    if start < 0:
        return query
    return (query[:start] + " " + query[start + len(window.phrase) :]).strip() or query
