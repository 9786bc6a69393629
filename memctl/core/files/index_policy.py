"""When the index table is tidied: which segments merge, which fragments are rewritten, which old
versions go. Pure; the lance side is store/index_maintenance.py.

Every write appends a small fragment (a data file) and leaves it out of the full-text index.
Searches still see those rows (lance scans unindexed rows on the fly), but each fragment costs a
search some time, so once a few have piled up they are rewritten as one fragment and indexed as
one new segment of the full-text index. Segments are merged size-tiered, like an LSM tree: as
soon as `fanout` segments of about the same size sit at the end, they become one, and the
fragments they cover are rewritten as one. A row is so rewritten about log_fanout(rows) times
in its life, and the number of segments and fragments stays logarithmic in the number of rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FANOUT = 8  # segments of one size class merged at once; also the tail length that is folded in


def size_class(rows: int, fanout: int = FANOUT) -> int:
    """0 for 1 to fanout-1 rows, 1 up to fanout**2-1, and so on."""
    rows, level = max(rows, 1), 0
    while rows >= fanout:
        rows //= fanout
        level += 1
    return level


def segments_to_merge(segment_rows: Sequence[int], new_rows: int, fanout: int = FANOUT) -> int:
    """How many of the newest segments (oldest first in `segment_rows`) to merge with the rows
    being indexed now, so that no size class ends up with `fanout` segments at the end.

    Merging cascades: the merged segment may complete the class above it.
    """
    taken, rows = 0, new_rows
    remaining = list(segment_rows)
    while True:
        level = size_class(rows, fanout)
        run = 0
        for size in reversed(remaining[: len(remaining) - taken]):
            if size_class(size, fanout) > level:
                break
            run += 1
        if run + 1 < fanout:
            return taken
        merged = remaining[len(remaining) - taken - run : len(remaining) - taken]
        taken += run
        rows += sum(merged)


# A segment whose live rows are fewer than this share of the documents it counted is merged
# away with every newer one.
STALE_SEGMENT_SHARE = 0.5


def stale_segments_to_merge(
    live_rows: Sequence[int], documents: Sequence[int], fanout: int = FANOUT
) -> int:
    """How many of the newest segments to merge so that none is left counting mostly deleted
    rows, at least `fanout` of them (oldest first in both lists, which pair up); 0 when none is.

    Why: a segment keeps its deleted rows in the statistics BM25 scores with (how many
    documents hold a word, how long they are) until it is merged, so a store whose rows were
    rewritten at once (an upgrade's re-sync) or largely deleted ranks unlike a fresh build. A
    small segment's few deleted rows weigh little and the size-tiered merge takes it soon.
    """
    if len(live_rows) != len(documents):
        return 0
    for position, (live, counted) in enumerate(zip(live_rows, documents, strict=True)):
        if counted - live >= fanout and live < STALE_SEGMENT_SHARE * counted:
            return len(live_rows) - position
    return 0


@dataclass(frozen=True)
class FragmentInfo:
    id: int
    rows: int  # physical rows, deleted ones included
    deleted: int
    indexed: bool  # covered by the full-text index


def tail_to_fold(fragments: Sequence[FragmentInfo], fanout: int = FANOUT, force: bool = False):
    """Ids of the unindexed fragments to rewrite as one and index, or [] while there are fewer
    than `fanout` of them (any number when `force`)."""
    tail = [f.id for f in fragments if not f.indexed]
    if not tail or (len(tail) < fanout and not force):
        return []
    return tail


def wasteful_fragments(fragments: Sequence[FragmentInfo], ratio: float = 0.5) -> list[int]:
    """Fragments whose rows are mostly deleted: rewriting them gives the space back."""
    return [f.id for f in fragments if f.rows and f.deleted / f.rows >= ratio]


def versions_to_remove(
    versions: Sequence[tuple[int, float]], now: float, keep_seconds: float
) -> list[int]:
    """Old versions no reader can still be reading: those replaced by a newer version more
    than `keep_seconds` ago. `versions` are (version, commit time in epoch seconds), in order;
    the newest is always kept.

    Why "replaced", not "created": a reader opens the newest version, which may be old; it
    must not lose its files the moment a writer commits the next one.
    """
    ordered = sorted(versions)
    return [
        version
        for (version, _), (_, replaced_at) in zip(ordered, ordered[1:], strict=False)
        if replaced_at <= now - keep_seconds
    ]
