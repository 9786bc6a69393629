"""Consolidation: which episodes belong together, and the knowledge they add up to (offline).

Groups form from episodes not yet consolidated: first by a shared `target`, then by a shared
tag, then by embedding similarity (every member at least `threshold` to every other). A group
needs `min_size` members (the seeds' N). The extractive draft keeps the episodes' own words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memctl.core.files.memory import Memory
from memctl.core.language.sentences import split_sentences

if TYPE_CHECKING:
    from memctl.core.learning.summarize import Embed

LIST_SECTIONS = ("Decisions", "Facts", "Preferences", "Outcomes", "Lessons")
MAX_KEY_POINTS = 8
_HEADING = re.compile(r"^##\s+(.+?)\s*$")


@dataclass(frozen=True)
class EpisodeInfo:
    id: str
    target: str | None = None
    tags: tuple[str, ...] = ()
    occurred: str = ""


@dataclass
class EpisodeGroup:
    reason: str  # "target", "tag" or "similarity"
    key: str
    ids: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "key": self.key, "ids": list(self.ids)}


@dataclass
class KnowledgeDraft:
    title: str
    topic: str
    body: str
    key_points: list[str] = field(default_factory=list)
    confidence: float = 0.8
    writer: str = "extractive"


def group_episodes(
    episodes: Sequence[EpisodeInfo],
    *,
    min_size: int = 3,
    similarity: Any = None,
    threshold: float = 0.7,
    ignore_tags: Sequence[str] = (),
) -> list[EpisodeGroup]:
    """Disjoint groups of at least `min_size` episodes; `similarity` is an n x n matrix or None."""
    order = sorted(range(len(episodes)), key=lambda i: (episodes[i].occurred, episodes[i].id))
    free = set(range(len(episodes)))
    groups: list[EpisodeGroup] = []

    def take(reason: str, key: str, members: list[int]) -> None:
        members = sorted(members, key=order.index)
        groups.append(EpisodeGroup(reason, key, [episodes[i].id for i in members]))
        free.difference_update(members)

    by_target: dict[str, list[int]] = {}
    for i in order:
        target = (episodes[i].target or "").strip()
        if target:
            by_target.setdefault(target.casefold(), []).append(i)
    for key in sorted(by_target):
        members = by_target[key]
        if len(members) >= min_size:
            take("target", (episodes[members[0]].target or "").strip(), members)

    ignored = {t.casefold() for t in ignore_tags}
    while True:
        counts = Counter(
            t for i in free for t in set(episodes[i].tags) if t.casefold() not in ignored
        )
        best = sorted(
            (tag for tag, n in counts.items() if n >= min_size), key=lambda t: (-counts[t], t)
        )
        if not best:
            break
        take("tag", best[0], [i for i in order if i in free and best[0] in episodes[i].tags])

    if similarity is not None:
        for seed in order:
            if seed not in free:
                continue
            candidates = sorted(
                (i for i in order if i in free and i != seed and similarity[seed][i] >= threshold),
                key=lambda i: (-float(similarity[seed][i]), order.index(i)),
            )
            members = [seed]
            for i in candidates:
                if all(similarity[i][j] >= threshold for j in members):
                    members.append(i)
            if len(members) >= min_size:
                take("similarity", "", members)
    return groups


def markdown_sections(body: str) -> dict[str, str]:
    """`## Heading` -> text under it; text before any heading goes under ''."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in body.splitlines():
        match = _HEADING.match(line)
        if match:
            current = match.group(1)
            sections.setdefault(current, [])
        else:
            sections[current].append(line)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}


def _bullets(text: str) -> list[str]:
    return [
        line.strip()[2:].strip()
        for line in text.splitlines()
        if line.strip().startswith(("- ", "* "))
    ]


def episode_points(memory: Memory) -> list[str]:
    """Decisions, facts, outcomes and lessons an episode lists, from its body or front matter."""
    sections = markdown_sections(memory.body)
    points: list[str] = []
    for name in LIST_SECTIONS:
        points += _bullets(sections.get(name, ""))
        extra = memory.extra.get(name.lower())
        if isinstance(extra, list):
            points += [str(item) for item in extra]
    seen: set[str] = set()
    unique = []
    for point in points:
        key = " ".join(point.casefold().split())
        if point and key not in seen:
            seen.add(key)
            unique.append(point)
    return unique


def episode_summary(memory: Memory) -> str:
    """An episode in a few sentences: its summary, or a task's goal and outcome."""
    sections = markdown_sections(memory.body)
    if sections.get("Summary"):
        return sections["Summary"]
    if sections.get("Goal"):
        goal = sections["Goal"].splitlines()[0].rstrip(".")
        outcome = (sections.get("Outcome") or "").split(" ")[0]
        return f"{goal} ({outcome})." if outcome else f"{goal}."
    return sections.get("") or memory.title


def group_topic(group: EpisodeGroup, members: Sequence[Memory]) -> str:
    if group.key:
        return group.key
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for memory in members:
        for topic in memory.extra.get("key_topics") or []:
            counts[str(topic)] += 1
            first.setdefault(str(topic), len(first))
    if counts:
        return min(counts, key=lambda t: (-counts[t], first[t]))
    from memctl.core.learning.summarize import key_topics

    topics = key_topics("\n".join(_unlabel(episode_summary(m)) for m in members), 2)
    return " and ".join(topics) if topics else members[0].display_title


def draft_knowledge(
    group: EpisodeGroup, members: Sequence[Memory], *, embed: Embed | None = None
) -> KnowledgeDraft:
    """Knowledge from episodes without an LLM: their central sentences and recurring points."""
    from memctl.core.learning.summarize import summarize

    topic = group_topic(group, members)
    sentences = [
        s for memory in members for s in split_sentences(_unlabel(episode_summary(memory)))
    ]
    summary = summarize(sentences, ratio=0.4, embed=embed) if sentences else ""
    outcomes = Counter(str(m.extra["outcome"]) for m in members if m.extra.get("outcome"))
    if outcomes:
        tally = ", ".join(f"{name} {count}" for name, count in sorted(outcomes.items()))
        summary = f"{summary}\nOutcomes of the {len(members)} episodes: {tally}.".strip()
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for memory in members:
        for point in episode_points(memory):
            key = " ".join(point.casefold().split())
            counts[key] += 1
            surface.setdefault(key, point)
    ranked = sorted(counts, key=lambda k: (-counts[k], list(surface).index(k)))
    key_points = [surface[k] for k in ranked[:MAX_KEY_POINTS]]
    n = len(members)
    draft = KnowledgeDraft(
        title=f"About {topic} (from {n} episodes)",
        topic=topic,
        body="",
        key_points=key_points,
        confidence=round(min(0.9, 0.5 + 0.1 * n), 2),
    )
    draft.body = render_knowledge_body(summary, key_points, members)
    return draft


def render_knowledge_body(
    summary: str, key_points: Sequence[str], members: Sequence[Memory]
) -> str:
    lines = ["## Summary", summary.strip() or "_(no summary)_"]
    if key_points:
        lines += ["", "## Key points", *(f"- {point}" for point in key_points)]
    lines += ["", "## Sources"]
    for memory in members:
        when = str(memory.extra.get("occurred_at") or memory.created or "")[:10]
        lines.append(f"- {when} {memory.display_title} ({memory.id})".replace("-  ", "- "))
    return "\n".join(lines) + "\n"


def _unlabel(text: str) -> str:
    """Drop `User:` / `Assistant:` speaker labels so sentences stand alone."""
    return re.sub(r"^(?:User|Assistant|Tool|System):\s*", "", text, flags=re.MULTILINE)
