"""How a new statement meets the memories already stored: merge, update or add (pure).

The seed rules: a statement that repeats a stored memory (cosine >= the dedup threshold)
reinforces it (mentions +1, confidence +0.05, capped at 1); a statement with another value on
the same subject replaces the stored value only if its confidence is at least as high, and the
value that loses is never dropped: it goes into the memory's `## History` section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memctl.core.files.history import current_text, history_entry, join_history, split_history
from memctl.core.files.memory import Memory, derived_title, first_line
from memctl.core.language.sentences import split_sentences
from memctl.core.learning.extract_rules import extract_sentence
from memctl.core.learning.facts import distinct_facts
from memctl.core.learning.subjects import FACETS, content_words, find_facet, subject_key
from memctl.core.trust.provenance import least_trusted, origin_of, stamp_origin

REINFORCE_STEP = 0.05
# Types whose memories state one value of something (a preference, a fact, a rule).
SUBJECT_TYPES = ("preference", "profile", "semantic", "procedural")
# Words in FACETS that name the facet rather than one of its values.
_FACET_NAMES = {"indent", "indentation", "缩进"}


@dataclass(frozen=True)
class Neighbor:
    memory: Memory
    relpath: str
    similarity: float | None  # cosine to the new text; None for a target named by the caller

    @property
    def cosine(self) -> float:
        """The similarity, 0 when none was measured (a target named by the caller)."""
        return 0.0 if self.similarity is None else self.similarity


@dataclass(frozen=True)
class Decision:
    """`add` a new file, `merge` into a near duplicate, or `update` a memory's value."""

    op: str
    target: Neighbor | None = None
    reason: str = "new"


@dataclass(frozen=True)
class Thresholds:
    dedup: float = 0.95
    subject: float = 0.4  # same subject key of a reliable kind (profile field, facet)
    loose_subject: float = 0.6  # same subject key guessed from a head word


def decide(
    new: Memory, subject: str | None, neighbors: list[Neighbor], limits: Thresholds
) -> Decision:
    """What writing `new` should do, given its nearest stored memories (most similar first)."""
    ranked = sorted(neighbors, key=lambda n: n.cosine, reverse=True)
    text = current_text(new.body)
    if ranked and ranked[0].cosine >= limits.dedup:
        top = ranked[0]
        top_text = current_text(top.memory.body)
        if not values_conflict(top_text, text):
            return Decision("merge", top, "near duplicate")
        if subject and memory_subject(top.memory) == subject and not distinct_facts(top_text, text):
            return Decision("update", top, "near duplicate with a different value")
        # Why: alike but naming another thing ("error TW-E4001 means..." vs "TW-E4002"):
        # neither a repeat nor a new value of the same subject.
    if not subject or new.type not in SUBJECT_TYPES:
        return Decision("add")
    for neighbor in ranked:
        memory = neighbor.memory
        if memory.type not in SUBJECT_TYPES or memory_subject(memory) != subject:
            continue
        floor = limits.subject if is_reliable_subject(subject) else limits.loose_subject
        if neighbor.cosine < floor:
            continue
        old = current_text(memory.body)
        if distinct_facts(old, text):
            continue  # Why: another ticket, region or team: a second fact with a like subject
        if same_value(old, text):
            return Decision("merge", neighbor, f"same subject ({subject}), same value")
        return Decision("update", neighbor, f"same subject ({subject}), different value")
    return Decision("add")


# --- subjects -----------------------------------------------------------------------------


def memory_subject(memory: Memory) -> str | None:
    stored = memory.extra.get("subject")
    if isinstance(stored, str) and stored:
        return stored
    return derive_subject(current_text(memory.body), memory.type)


MAX_SUBJECT_CHARS = 160


def derive_subject(text: str, type_: str) -> str | None:
    """The subject key of a stored statement, as the rule extractor would key it; None if unclear."""
    if type_ not in SUBJECT_TYPES:
        return None
    sentences = split_sentences(text)
    if not sentences:
        return None
    first = sentences[0]
    attempts = [first, first_person(first)]
    if type_ in ("semantic", "procedural"):
        attempts.append("remember that " + first_person(first))
    for attempt in attempts:
        found = extract_sentence(attempt)
        if found:
            key = found[0].subject_key
            # Why: a key is a few words; one that copies a long word (a pasted blob) would
            # double the file's size and keys nothing anyone would say again.
            return key if len(key) <= MAX_SUBJECT_CHARS else None
    facet = find_facet(first)
    if facet and type_ == "preference":
        return subject_key("preference", facet)
    return None


_THIRD_PERSON = (
    (re.compile(r"^(?:the\s+)?user's\s+", re.IGNORECASE), "my "),
    (re.compile(r"^(?:the\s+)?user\s+is\s+", re.IGNORECASE), "I am "),
    (re.compile(r"^(?:the\s+)?user\s+has\s+", re.IGNORECASE), "I have "),
    (re.compile(r"^(?:the\s+)?user\s+(?:doesn't|does not)\s+", re.IGNORECASE), "I don't "),
    (
        re.compile(
            r"^(?:the\s+)?team\s+(?=(?:has\s+)?(?:decided|agreed|settled|chose|went)\b)",
            re.IGNORECASE,
        ),
        "we ",
    ),
    (re.compile(r"^用户"), "我"),
    (re.compile(r"^团队(?=决定|商定|约定|同意|确定)"), "我们"),
)
_THIRD_PERSON_VERB = re.compile(
    r"^(?:the\s+)?user\s+((?:(?:always|never|usually|often|really|strongly|also|generally|"
    r"mostly|still)\s+)*)([a-z]+)\b",
    re.IGNORECASE,
)


def first_person(sentence: str) -> str:
    """'The user prefers tabs' -> 'I prefer tabs': stored memories back into a user's words."""
    text = sentence.strip()
    for pattern, replacement in _THIRD_PERSON:
        if pattern.search(text):
            return pattern.sub(replacement, text, count=1)
    match = _THIRD_PERSON_VERB.match(text)
    if match:
        return f"I {match.group(1)}{_base_verb(match.group(2))}{text[match.end() :]}"
    return text


def _base_verb(verb: str) -> str:
    lower = verb.lower()
    if lower.endswith("ies") and len(lower) > 4:
        return verb[:-3] + "y"
    if re.search(r"(?:sh|ch|x|z|ss|o)es$", lower):
        return verb[:-2]
    if lower.endswith("s") and not lower.endswith("ss"):
        return verb[:-1]
    return verb


def is_reliable_subject(key: str) -> bool:
    """Profile fields and facets (indentation, package manager, ...) name a subject precisely."""
    kind, _, subject = key.partition(":")
    if kind == "profile":
        return True
    return any(re.search(rf"(?:^|-){re.escape(facet)}(?:-|$)", subject) for facet in FACETS)


# --- values -------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[.:,]\d+)*")
_CODE = re.compile(r"`([^`\n]+)`")
_NEGATION = re.compile(
    r"\b(?:not|never|no|don't|doesn't|didn't|isn't|aren't|won't|can't|cannot|shouldn't|avoid|"
    r"avoids|dislike|dislikes|hate|hates)\b|[不没别]|禁止|从不",
    re.IGNORECASE,
)


def facet_values(text: str) -> list[str]:
    """Facet values in order of appearance: 'pnpm over npm' -> ['pnpm', 'npm']."""
    lower = f" {text.lower()} "
    found: list[tuple[int, str]] = []
    for values in FACETS.values():
        for value in values:
            if value in _FACET_NAMES:
                continue
            if re.search(r"[\u3400-\u9fff]", value):
                found += [(m.start(), value) for m in re.finditer(re.escape(value), lower)]
            else:
                pattern = rf"(?<![a-z0-9]){re.escape(value)}(?![a-z0-9])"
                found += [(m.start(), value) for m in re.finditer(pattern, lower)]
    found.sort()
    # Why: "vs code" also matches inside "visual studio code"-like overlaps; keep the first.
    ordered, last_end = [], -1
    for start, value in found:
        if start >= last_end:
            ordered.append(value)
            last_end = start + len(value)
    return ordered


def same_value(a: str, b: str) -> bool:
    """Two statements on one subject say the same: same options named, or the same words."""
    if values_conflict(a, b):
        return False
    values_a = facet_values(a)
    if values_a and values_a == facet_values(b):
        return True
    return set(content_words(a)) == set(content_words(b))


def values_conflict(a: str, b: str) -> bool:
    """Do two near-identical statements give different values (numbers, code, options, polarity)?"""
    for extract in (_NUMBER.findall, _CODE.findall, facet_values):
        found_a, found_b = extract(a.lower()), extract(b.lower())
        if found_a and found_b and found_a != found_b:
            return True
    return bool(_NEGATION.search(a)) != bool(_NEGATION.search(b))


# --- the three ways an existing memory changes --------------------------------------------


def mentions(memory: Memory) -> int:
    try:
        return max(int(memory.extra.get("mentions") or 1), 1)
    except (TypeError, ValueError):
        return 1


def _combined(existing: Memory, new: Memory) -> dict:
    """What a merge keeps from both statements: every tag, the higher importance, any pin."""
    return {
        "tags": sorted(set(existing.tags) | set(new.tags)),
        "importance": max(existing.importance, new.importance),
        "pinned": existing.pinned or new.pinned,
    }


def reinforced(existing: Memory, new: Memory, now: str) -> Memory:
    """The same statement again: one more mention, a little more confidence."""
    extra = dict(existing.extra)
    extra["mentions"] = mentions(existing) + 1
    if "subject" in new.extra and "subject" not in extra:
        extra["subject"] = new.extra["subject"]
    return replace(
        existing,
        confidence=min(1.0, round(existing.confidence + REINFORCE_STEP, 4)),
        updated=now,
        extra=extra,
        **_combined(existing, new),
    )


def superseded(existing: Memory, new: Memory, now: str) -> Memory:
    """A new value replaces the old one in place; the old value moves into `## History`."""
    old_text, entries = split_history(existing.body)
    details = [f"confidence {existing.confidence:.2f}"]
    if mentions(existing) > 1:
        details.append(f"mentions {mentions(existing)}")
    details.append(f"source {existing.source}")
    entries = entries + [history_entry(now, "replaced", details, old_text)]
    new_text = current_text(new.body)
    automatic_title = is_derived_title(existing.title, old_text)
    extra = {k: v for k, v in existing.extra.items() if k != "mentions"}
    if "subject" in new.extra:
        extra["subject"] = new.extra["subject"]
    result = replace(
        existing,
        title=derived_title(new_text) if automatic_title else existing.title,
        body=join_history(new_text, entries),
        confidence=new.confidence,
        source="corrected_memory",
        updated=now,
        extra=extra,
        **_combined(existing, new),
    )
    return stamp_origin(result, least_trusted([origin_of(existing), origin_of(new)]))


def is_derived_title(title: str, text: str) -> bool:
    """Was `title` made from the text's first line (whole, or cut with "…" anywhere, as older
    versions cut it mid-word), rather than written by someone?"""
    title = title.strip()
    line = first_line(text, max_len=len(text) + 1)
    if not title or title == line or title in (first_line(text), derived_title(text)):
        return True
    return title.endswith("…") and line.startswith(title[:-1].rstrip())


def not_adopted(existing: Memory, new: Memory, now: str) -> Memory:
    """A new value with lower confidence: the stored value stays; the new one is noted in history."""
    current, entries = split_history(existing.body)
    details = [
        f"confidence {new.confidence:.2f} below {existing.confidence:.2f}",
        f"source {new.source}",
    ]
    entries = entries + [history_entry(now, "not adopted", details, current_text(new.body))]
    result = replace(
        existing, body=join_history(current, entries), updated=now, extra=dict(existing.extra)
    )
    return stamp_origin(result, least_trusted([origin_of(existing), origin_of(new)]))


def revised(existing: Memory, new: Memory, now: str) -> tuple[Memory, str]:
    """Apply the seed rule: the new value wins only if its confidence is at least as high."""
    if new.confidence >= existing.confidence:
        return superseded(existing, new, now), "updated"
    return not_adopted(existing, new, now), "not_adopted"
