"""Who said a turn of a conversation, and whether a question asks about them.

A conversation written turn by turn ("Caroline: I went to a support group", "User: we moved CI
to GitLab") names its speaker in a leading label. A question about a person ("what did Caroline
research") is answered by that person's own words far more often than by what others said to
them, yet both hold the name: the other side says "Hey Caroline!". The label tells them apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from memctl.core.language.text_tokens import HAN_ONLY

# One to three capitalised words (a name, a role: "Caroline", "Mary Ann", "User") or a short
# CJK name, then a colon (ASCII or full-width) and the words said.
_LABEL = re.compile(
    r"\s*(?P<label>[A-Z][\w'’.-]{0,30}(?: [A-Z][\w'’.-]{0,30}){0,2}|[\u4e00-\u9fff]{1,4})"
    r"\s*[:：]\s*\S"
)


def speaker_of(text: str) -> str | None:
    """The label a turn begins with ("Caroline" of "Caroline: ..."), or None."""
    found = _LABEL.match(text or "")
    return found.group("label") if found else None


def names(query: str, label: str) -> bool:
    """Whether the query names the speaker: the label's first word as a whole word, any case
    ("user" names "User"; "Mary" names "Mary Ann"); a CJK label anywhere in the query."""
    if HAN_ONLY.match(label):
        return label in query
    first = label.split()[0]
    return (
        re.search(rf"(?<![\w'’-]){re.escape(first)}(?![\w'’-])", query, re.IGNORECASE) is not None
    )


def asked_speakers(query: str, labels: Iterable[str]) -> set[str]:
    """The speakers a question is about, among those of the candidate turns.

    Empty unless it tells speakers apart: at least two speakers, and the query names some of
    them but not all (a question naming both sides of a conversation favours neither)."""
    present = set(labels)
    if len(present) < 2:
        return set()
    asked = {label for label in present if names(query, label)}
    return asked if asked != present else set()


def turns_of_asked(query: str, turn_labels: Mapping[str, str | None]) -> set[str]:
    """Of these turns (id -> its speaker label, None when it has none), those spoken by a
    speaker the query asks about."""
    asked = asked_speakers(query, [label for label in turn_labels.values() if label])
    return {turn for turn, label in turn_labels.items() if label in asked}
