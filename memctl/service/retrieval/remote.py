"""Publishing the index to object storage, and pulling what was published (index.mode: remote)."""

from __future__ import annotations

from typing import Any

from memctl.config import Store
from memctl.core.errors import UsageError
from memctl.service.retrieval.indexing import (
    Progress,
    local_index,
    made_with,
    remote_mode,
    sync_index,
)
from memctl.store.index import MANIFEST, Manifest
from memctl.store.remote_index import index_settings, publish, pull


def publish_index(store: Store, progress: Progress | None = None) -> dict[str, Any]:
    """Sync the local index, then upload it to `index.uri` for clones in remote mode."""
    uri, mode, options = index_settings(store.section("index"))
    if uri is None:
        raise UsageError(
            "Set index.uri in config.yaml (e.g. s3://bucket/prefix) to publish the index."
        )
    if mode == "remote":
        raise UsageError(
            "This store reads the published index (index.mode: remote); publish from a clone "
            "with index.mode: local, which holds the whole index."
        )
    report = sync_index(store, progress=progress)
    manifest = Manifest.load(store.index_dir, MANIFEST)
    files = [
        {"path": path, "file_hash": entry.file_hash, "id": entry.id}
        for path, entry in sorted(manifest.files.items())
        if entry.problem is None and entry.id
    ]
    published = publish(local_index(store), uri, options, files, made_with(store))
    return {**published, "sync": report.to_dict()}


def pull_index(store: Store) -> dict[str, Any] | None:
    """In remote mode, pin the latest published version (None otherwise)."""
    if not remote_mode(store):
        return None
    uri, _, options = index_settings(store.section("index"))
    assert uri is not None
    published = pull(uri, options, store.index_dir)
    return {
        "uri": uri,
        "version": published.get("memories_version"),
        "files": len(published["files"]),
    }
