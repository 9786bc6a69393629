"""What a process that lives on (the server) keeps in memory between requests to read faster:
each table's rows and vectors (store.resident_vectors) and parsed memory files
(store.parsed_memories). Both follow every change; a one-shot process keeps neither."""

from __future__ import annotations

from memctl.store.parsed_memories import keep_parsed
from memctl.store.resident_vectors import keep_resident


def keep_reads_resident() -> None:
    keep_resident()
    keep_parsed()
