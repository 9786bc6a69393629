"""Index upkeep beyond a sync, for `memctl index` and a server's idle time.

Writes already fold their own rows in (store/index_maintenance.py); this pass does the rest at
once: the rows no write has folded yet, fragments that are mostly deleted rows, the vector
index (an ANN index from `index.ann_min_rows` rows, none below), and old table versions.
"""

from __future__ import annotations

from memctl.config import Store
from memctl.service.retrieval.indexing import local_index
from memctl.store.files import file_lock
from memctl.store.index_maintenance import MaintenanceReport


def maintain_index(store: Store, *, vectors: bool = True) -> dict[str, MaintenanceReport]:
    """Tidy the main and the archive index; `vectors` False leaves the vector index alone
    (building it can take a minute at 100k rows). Returns a report per table."""
    reports: dict[str, MaintenanceReport] = {}
    with file_lock(store.state_dir / "index.lock"):
        for archive in (False, True):
            index = local_index(store, archive)
            if index.exists():
                reports[index.table] = index.maintain(vectors=vectors)
    return reports
