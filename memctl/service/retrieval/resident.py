"""What a process that lives on (the server) keeps in memory between requests to read faster:
each table's rows and vectors (store.resident_vectors), parsed memory files
(store.parsed_memories) and each row text's word stems (core.recall.evidence). All follow every
change; a one-shot process keeps neither rows nor files."""

from __future__ import annotations

from memctl.config import Store
from memctl.core.recall.evidence import TEXT_CACHE_SIZE, stem_counts
from memctl.service.retrieval.indexing import open_index
from memctl.store.parsed_memories import keep_parsed
from memctl.store.resident_vectors import keep_resident


def keep_reads_resident() -> None:
    keep_resident()
    keep_parsed()


def warm_word_stems(store: Store) -> int:
    """Stem the indexed texts now (as many as the stem cache holds), so that recall's word
    matching of its candidates is a lookup from the first request on; how many were stemmed.
    ~50 us a text: half a second at 10k rows, paid at start-up."""
    index = open_index(store)
    if not index.exists():
        return 0
    texts = [row["text"] for row in index.rows(None, ["text"])[:TEXT_CACHE_SIZE]]
    for text in texts:
        stem_counts(text)
    return len(texts)
