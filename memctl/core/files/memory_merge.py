"""Two edits of one memory, merged field by field (the git merge driver's front matter half).

memctl knows what its fields mean, so a change on both branches is not a conflict:
`version` = the higher + 1, `updated` = the later, `created` = the earlier, `mentions` = the
ancestor's plus each side's increase, `importance` and `confidence` = the higher, `tags` and
`relations` = united (less what one side removed from the ancestor). Any other field changed
on one side takes that side's value; changed on both to different values, the side updated
last wins (ours on a tie). The body is merged as text by git (see agents/merge_driver).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memctl.core.files.memory import Memory
from memctl.core.trust.provenance import ORIGIN_KEY, least_trusted, origin_of

MENTIONS = "mentions"
# Fields without a rule of their own merge three-way (so do unknown keys, in `extra`).
_THREE_WAY = ("id", "title", "type", "source", "scope", "agent", "expires", "pinned")


def merge_memories(base: Memory | None, ours: Memory, theirs: Memory, body: str) -> Memory:
    """The merged memory, with `body` (already merged) as its body."""
    newer_is_theirs = (theirs.updated or "") > (ours.updated or "")
    merged = replace(
        ours,
        body=body,
        version=max(ours.version, theirs.version) + 1,
        updated=_latest(ours.updated, theirs.updated),
        created=_earliest(ours.created, theirs.created),
        importance=max(ours.importance, theirs.importance),
        confidence=max(ours.confidence, theirs.confidence),
        tags=_united(base.tags if base else None, ours.tags, theirs.tags),
        relations=_united(base.relations if base else None, ours.relations, theirs.relations),
        extra=_merged_extra(base, ours, theirs, newer_is_theirs),
        present=ours.present | theirs.present | {"version"},
    )
    for name in _THREE_WAY:
        value = _three_way(
            getattr(base, name) if base else None,
            getattr(ours, name),
            getattr(theirs, name),
            newer_is_theirs,
        )
        merged = replace(merged, **{name: value})
    return merged


def _latest(a: str | None, b: str | None) -> str | None:
    return max((v for v in (a, b) if v), default=None)


def _earliest(a: str | None, b: str | None) -> str | None:
    return min((v for v in (a, b) if v), default=None)


def _three_way(base: Any, ours: Any, theirs: Any, newer_is_theirs: bool) -> Any:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return theirs if newer_is_theirs else ours


def _united(base: list | None, ours: list, theirs: list) -> list:
    """Ours then theirs' new items, without what one side removed from the ancestor."""
    removed = [item for item in (base or []) if item not in ours or item not in theirs]
    united: list = []
    for item in [*ours, *theirs]:
        if item not in united and item not in removed:
            united.append(item)
    return united


def _mentions(memory: Memory | None) -> int:
    if memory is None:
        return 0
    try:
        return int(memory.extra.get(MENTIONS, 1))
    except (TypeError, ValueError):
        return 1


def _merged_extra(
    base: Memory | None, ours: Memory, theirs: Memory, newer_is_theirs: bool
) -> dict[str, Any]:
    keys = [*ours.extra, *(key for key in theirs.extra if key not in ours.extra)]
    extra: dict[str, Any] = {}
    for key in keys:
        if key == MENTIONS:
            continue
        value = _three_way(
            base.extra.get(key) if base else None,
            ours.extra.get(key),
            theirs.extra.get(key),
            newer_is_theirs,
        )
        if value is not None:
            extra[key] = value
    if MENTIONS in ours.extra or MENTIONS in theirs.extra:
        # Why: both sides counted from the ancestor's mentions; add both increases, once.
        ancestor = _mentions(base)
        extra[MENTIONS] = ancestor + (_mentions(ours) - ancestor) + (_mentions(theirs) - ancestor)
    _merge_origin(base, ours, theirs, extra)
    return extra


def _merge_origin(base: Memory | None, ours: Memory, theirs: Memory, extra: dict[str, Any]) -> None:
    """The merged words come from every side that changed them: the least trusted origin of
    those sides (core.trust.provenance). A memory whose sides record no origin stays without one."""
    if ORIGIN_KEY not in ours.extra and ORIGIN_KEY not in theirs.extra:
        return
    changed = [m for m in (ours, theirs) if base is None or m.body != base.body]
    origin = least_trusted(origin_of(m) for m in (changed or [ours, theirs]))
    if origin is not None:
        extra[ORIGIN_KEY] = origin
