"""The index on object storage (`index.uri: s3://bucket/prefix`, gs://, az://): published once,
read by every clone without embedding the store again.

`memctl index --publish` uploads the local table (`memories.lance`, less private memories) and
then `files.lance`: which file (path and content hash) each memory id came from, with the
version of `memories.lance` it belongs to in its schema metadata, so a reader never sees a
half-published index. A clone with `index.mode: remote` pins the version it pulled
(`.index/published.json`), keeps only the rows of files it changed or added in its local
table (the overlay), and hides the published rows of those files and of files it deleted.

LanceDB and Lance read and write the bucket themselves. Credentials come only from the
environment or the cloud profile (AWS_ACCESS_KEY_ID, AWS_PROFILE, GOOGLE_APPLICATION_CREDENTIALS,
AZURE_STORAGE_ACCOUNT_KEY ...); config.yaml may carry only options that are not secret.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memctl.core.errors import MemctlError
from memctl.core.ports import MemoryFilter
from memctl.store.files import atomic_write
from memctl.store.index import TABLE, MemoryIndex, filter_sql
from memctl.store.index_maintenance import ensure_text_indexes

FILES_TABLE = "files"
PUBLISHED = "published.json"  # what this clone pulled: versions and the published files
COVER = "remote-cover.json"  # which local files the published index covers, by stat
SCHEMES = ("s3://", "s3+ddb://", "gs://", "az://", "abfs://", "memory://", "file://")
_SECRET_WORDS = ("secret", "access_key", "key_id", "token", "password", "sas", "credential")


class RemoteIndexError(MemctlError):
    kind = "remote_index"


def index_settings(section: dict[str, Any]) -> tuple[str | None, str, dict[str, str]]:
    """(uri, mode, storage options) from config's `index:` section, checked."""
    uri = section.get("uri") or None
    mode = str(section.get("mode") or "local")
    if mode not in ("local", "remote"):
        raise RemoteIndexError(f"config.yaml: index.mode is '{mode}'; expected local or remote.")
    if uri is not None and not str(uri).startswith(SCHEMES):
        raise RemoteIndexError(
            f"config.yaml: index.uri '{uri}' is not an object store URI (s3://, gs://, az://)."
        )
    if mode == "remote" and uri is None:
        raise RemoteIndexError("config.yaml: index.mode is remote but index.uri is not set.")
    options = {
        str(k): str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in (section.get("storage_options") or {}).items()
    }
    for key in options:
        if any(word in key.lower() for word in _SECRET_WORDS):
            raise RemoteIndexError(
                f"config.yaml: index.storage_options.{key} looks like a credential; config.yaml "
                "is committed. Set it in the environment (e.g. AWS_SECRET_ACCESS_KEY) instead."
            )
    return (str(uri).rstrip("/") if uri else None), mode, options


class PublishedIndex(MemoryIndex):
    """The published table, read through pylance at a pinned version; never written here."""

    def __init__(self, uri: str, dim: int, options: dict[str, str], version: int | None):
        super().__init__(Path("."), dim, TABLE)
        self.uri = uri
        self.options = options
        self.version = version
        self.hidden: list[str] = []  # ids whose published rows a local change replaces
        self._published: Any = None

    @property
    def table_uri(self) -> str:
        return f"{self.uri}/{TABLE}.lance"

    def exists(self) -> bool:
        return self.version is not None

    def dataset(self):
        if self._published is None:
            import lance

            self._published = lance.dataset(
                self.table_uri, version=self.version, storage_options=self.options or None
            )
        return self._published

    def _resident(self) -> None:
        return None  # Why: the published table is read from object storage, at a pinned version

    def drop(self) -> None:
        raise RemoteIndexError("The published index is read-only here; publish to replace it.")

    def apply(self, delete_ids, rows, vectors=None) -> None:
        raise RemoteIndexError("The published index is read-only here; publish to replace it.")

    def _visible(self, where: MemoryFilter | None) -> MemoryFilter | None:
        if not self.hidden:
            return where
        base = where or MemoryFilter()
        return dataclasses.replace(base, exclude_ids=(*base.exclude_ids, *self.hidden))

    def search_vector(
        self, query_vector, limit: int, where: MemoryFilter | None = None
    ) -> list[dict]:
        return super().search_vector(query_vector, limit, self._visible(where))

    def search_text(self, query: str, limit: int, where: MemoryFilter | None = None) -> list[dict]:
        return super().search_text(query, limit, self._visible(where))

    def rows_for_ids(self, ids: Sequence[str]) -> list[dict]:
        return super().rows_for_ids([i for i in ids if i not in set(self.hidden)])

    def vectors_for_ids(self, ids: Sequence[str]) -> dict[str, Any]:
        return super().vectors_for_ids([i for i in ids if i not in set(self.hidden)])

    def sequence_rows(self, sequences: Sequence[str]) -> list[dict]:
        hidden = set(self.hidden)
        return [row for row in super().sequence_rows(sequences) if row["id"] not in hidden]


class _Rows:
    """What readers ask of `index.dataset()`, answered from the overlay and the published table."""

    def __init__(self, parts: list[tuple[MemoryIndex, str | None]]):
        self.parts = parts

    def to_table(self, columns=None, filter=None):
        import pyarrow as pa

        tables = []
        for index, hidden in self.parts:
            if index.exists():
                where = filter if not hidden else (f"({filter}) AND {hidden}" if filter else hidden)
                tables.append(index.dataset().to_table(columns=columns, filter=where))
        if not tables:
            raise RemoteIndexError("No index yet: run `memctl index`.")
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def count_rows(self) -> int:
        return self.to_table(columns=["id"]).num_rows

    def versions(self) -> list:
        """The overlay's versions: the published table's are the publisher's to keep."""
        overlay = self.parts[0][0]
        return overlay.dataset().versions() if overlay.exists() else []


class LayeredIndex:
    """The local overlay over the published index, read as one index (recall, context, add)."""

    def __init__(self, overlay: MemoryIndex, published: PublishedIndex):
        self.overlay = overlay
        self.published = published
        self.dim = overlay.dim
        self.table = overlay.table

    def __getattr__(self, name: str) -> Any:
        # Why: maintenance (purge, drop, apply, table_dir) acts on the local overlay only; the
        # published table changes when someone publishes again.
        return getattr(self.overlay, name)

    def _layers(self) -> list[MemoryIndex]:
        return [index for index in (self.overlay, self.published) if index.exists()]

    def exists(self) -> bool:
        return bool(self._layers())

    def count(self) -> int:
        return self.dataset().count_rows() if self.exists() else 0

    def dataset(self) -> _Rows:
        hidden = filter_sql(self.published._visible(None))
        return _Rows([(self.overlay, None), (self.published, hidden)])

    def search_vector(
        self, query_vector, limit: int, where: MemoryFilter | None = None
    ) -> list[dict]:
        rows = [r for i in self._layers() for r in i.search_vector(query_vector, limit, where)]
        return sorted(rows, key=lambda row: row["_distance"])[:limit]

    def search_text(self, query: str, limit: int, where: MemoryFilter | None = None) -> list[dict]:
        rows = [r for i in self._layers() for r in i.search_text(query, limit, where)]
        return sorted(rows, key=lambda row: -row["_score"])[:limit]

    def sequence_rows(self, sequences: list[str]) -> list[dict]:
        return [row for index in self._layers() for row in index.sequence_rows(sequences)]

    def rows_for_ids(self, ids: list[str]) -> list[dict]:
        return [row for index in self._layers() for row in index.rows_for_ids(ids)]

    def vectors_for_ids(self, ids: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for index in reversed(self._layers()):  # Why: the overlay's row is the current one
            found.update(index.vectors_for_ids(ids))
        return found

    def vectors_for(self, embed_hashes: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for index in reversed(self._layers()):
            found.update(index.vectors_for(embed_hashes))
        return found


# --- publishing ------------------------------------------------------------------------------


def publish(
    local: MemoryIndex, uri: str, options: dict[str, str], files: list[dict], meta: dict[str, Any]
) -> dict[str, Any]:
    """Upload the local table (less private memories), index its text, then the file list that
    points at it. Returns what was published."""
    import lance
    import pyarrow as pa

    if not local.exists():
        raise RemoteIndexError("Nothing to publish: the local index is empty.")
    shared = "scope != 'private' AND NOT (path LIKE 'private/%')"
    reader = local.dataset().scanner(filter=shared, batch_size=4096).to_reader()
    storage = options or None
    try:
        lance.write_dataset(
            reader,
            f"{uri}/{TABLE}.lance",
            mode=_write_mode(f"{uri}/{TABLE}.lance", storage),
            storage_options=storage,
        )
        published = lance.dataset(f"{uri}/{TABLE}.lance", storage_options=storage)
        ensure_text_indexes(published)  # Why: the same full-text settings as the local index
        version = lance.dataset(f"{uri}/{TABLE}.lance", storage_options=storage).version
        shared_files = [f for f in files if not f["path"].startswith("private/")]
        schema = pa.schema(
            [pa.field(name, pa.string()) for name in ("path", "file_hash", "id")],
            metadata={"memctl": json.dumps({**meta, "memories_version": version})},
        )
        columns = {name: [f[name] for f in shared_files] for name in schema.names}
        lance.write_dataset(
            pa.Table.from_pydict(columns, schema=schema),
            f"{uri}/{FILES_TABLE}.lance",
            mode=_write_mode(f"{uri}/{FILES_TABLE}.lance", storage),
            storage_options=storage,
        )
    except OSError as exc:
        raise RemoteIndexError(f"Could not publish to {uri}: {exc}") from None
    rows = lance.dataset(f"{uri}/{TABLE}.lance", storage_options=storage).count_rows()
    return {"uri": uri, "version": version, "rows": rows, "files": len(shared_files)}


def _write_mode(table_uri: str, storage: dict[str, str] | None) -> str:
    """ "overwrite" (a new version; readers pinned to an older one keep it) or "create"."""
    import lance

    try:
        lance.dataset(table_uri, storage_options=storage)
    except (OSError, ValueError):
        return "create"
    return "overwrite"


# --- pulling ---------------------------------------------------------------------------------


def pull(uri: str, options: dict[str, str], index_dir: Path) -> dict[str, Any]:
    """Fetch the latest published file list and pin its version in `.index/published.json`."""
    import lance

    try:
        files = lance.dataset(f"{uri}/{FILES_TABLE}.lance", storage_options=options or None)
    except (OSError, ValueError) as exc:
        raise RemoteIndexError(
            f"No published index at {uri} ({exc}). Publish one with `memctl index --publish`."
        ) from None
    meta = json.loads((files.schema.metadata or {}).get(b"memctl", b"{}"))
    table = files.to_table(columns=["path", "file_hash", "id"])
    published = {
        "uri": uri,
        **meta,
        "files": {
            path: [file_hash, memory_id]
            for path, file_hash, memory_id in zip(
                *(table.column(name).to_pylist() for name in ("path", "file_hash", "id")),
                strict=True,
            )
        },
    }
    index_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(index_dir / PUBLISHED, json.dumps(published, separators=(",", ":")).encode())
    (index_dir / COVER).unlink(missing_ok=True)  # Why: the cover was worked out for another version
    return published


def load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(data, separators=(",", ":")).encode())


# --- a clone in remote mode ------------------------------------------------------------------


def pulled(index_dir: Path, uri: str, options: dict[str, str], expected: dict) -> dict[str, Any]:
    """The published state this clone pinned (pulled now if it has none for `uri`), checked
    against the model and recipe this memctl embeds with."""
    published = load_json(index_dir / PUBLISHED)
    if published.get("uri") != uri:
        published = pull(uri, options, index_dir)
    made = {key: published.get(key) for key in expected}
    if made != expected:
        raise RemoteIndexError(
            f"The index published at {uri} was made with {made}; this memctl needs {expected}. "
            "Publish it again with this version (`memctl index --publish`)."
        )
    return published


def layered(
    index_dir: Path, overlay: MemoryIndex, section: dict[str, Any], expected: dict
) -> LayeredIndex:
    """The overlay over the pinned published table, hiding what local changes replace."""
    uri, _, options = index_settings(section)
    assert uri is not None  # Why: index_settings refuses remote mode without a uri
    published = pulled(index_dir, uri, options, expected)
    remote = PublishedIndex(uri, overlay.dim, options, int(published["memories_version"]))
    remote.hidden = list(load_json(index_dir / COVER).get("hidden") or [])
    return LayeredIndex(overlay, remote)


def local_changes(
    root: Path, index_dir: Path, section: dict[str, Any], stats: dict, expected: dict
) -> dict:
    """The files (of `stats`, relpath -> FileStat) the published index does not hold as they
    are here: new, or changed since it was published. Also records which published ids they
    (and deleted files) hide. A file is hashed only when its stat changed since the last call."""
    from memctl.core.files.sync import file_hash

    uri, _, options = index_settings(section)
    assert uri is not None
    published = pulled(index_dir, uri, options, expected)
    files: dict[str, list] = published["files"]
    cover = load_json(index_dir / COVER)
    known = (
        cover.get("files") or {} if cover.get("version") == published["memories_version"] else {}
    )
    entries: dict[str, list] = {}
    for relpath, stat in stats.items():
        seen = known.get(relpath)
        if seen and seen[0] == stat.mtime_ns and seen[1] == stat.size:
            covered = bool(seen[2])
        elif relpath in files:
            try:
                covered = file_hash((root / relpath).read_bytes()) == files[relpath][0]
            except OSError:
                covered = False
        else:
            covered = False
        entries[relpath] = [stat.mtime_ns, stat.size, covered]
    hidden = sorted({files[p][1] for p in files if not (entries.get(p) or [0, 0, False])[2]})
    if entries != known or hidden != cover.get("hidden"):
        save_json(
            index_dir / COVER,
            {"version": published["memories_version"], "files": entries, "hidden": hidden},
        )
    return {relpath: stats[relpath] for relpath, entry in entries.items() if not entry[2]}
