"""The automatic judge: what each written memory is worth against the session's labels.

A memory is `useful` when its title and body satisfy the `yes` check of a current item of its
session, `partly` when only some item's `partly` check holds, `wrong` when it satisfies the `yes`
check of an item the labels mark refuted (whatever else it holds), `noise` otherwise. Narration is
counted per sentence: a sentence that opens the way an agent narrates its own steps ("Let me...",
"Now I...", "I'll...", "Done.").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from benchmarks.sessions.labels import Item, grade

NARRATION = re.compile(
    r"^(?:let me|let's|now,? (?:i|let|we|that|the)\b|now\b|i'll|i will|i'm going to|i am going to"
    r"|i need to|i can see|i see\b|i found|i've|i have (?:updated|added|made|created|fixed)"
    r"|done\b|all done|perfect\b|great\b|good\b|excellent\b|okay\b|ok[,.!]|alright\b|first,? i"
    r"|next,? i|looks like\b|found it\b|got it\b|sure\b)",
    re.IGNORECASE,
)
_LABEL = re.compile(
    r"^(?:[-*>#\s]+|\d+[.)]\s+)*(?:\*\*)?(?:user|assistant|human|agent)(?:\*\*)?:\s*", re.I
)
_LEAD = re.compile(r"^(?:[-*>#\s]+|\d+[.)]\s+)+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """Sentences of a memory's body: per line, split after . ! or ?; headings dropped."""
    found: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("---"):
            continue
        for part in _SENTENCE_END.split(stripped):
            part = _LABEL.sub("", part)
            part = _LEAD.sub("", part).strip().strip("*_`").strip()
            if re.search(r"[A-Za-z\u4e00-\u9fff]", part):
                found.append(part)
    return found


def is_narration(sentence: str) -> bool:
    return bool(NARRATION.match(sentence))


@dataclass(frozen=True)
class Verdict:
    verdict: str  # useful | partly | noise | wrong
    items: tuple[str, ...]  # item ids it satisfies (yes)


def judge_memory(text: str, items: Iterable[Item]) -> Verdict:
    current_yes: list[str] = []
    current_partly: list[str] = []
    refuted: list[str] = []
    for item in items:
        mark = grade(text, item)
        if item.refuted:
            if mark == "yes":
                refuted.append(item.id)
        elif mark == "yes":
            current_yes.append(item.id)
        elif mark == "partly":
            current_partly.append(item.id)
    if refuted:  # Why first: a memory that carries a refuted claim misleads, whatever else it says
        return Verdict("wrong", tuple(refuted))
    if current_yes:
        return Verdict("useful", tuple(current_yes))
    if current_partly:
        return Verdict("partly", tuple(current_partly))
    return Verdict("noise", ())
