"""The index manifest: what the index remembers of each file (stat, hashes, id), in SQLite.

A sync writes one row per file it looked at, in one transaction, so an `add` costs the same at
100 memories or 100,000 (the JSON manifest it replaces was parsed and rewritten whole by every
write: ~90 ms at 10k). Beside it, a small JSON stamp (model, a fingerprint of every file's
stat, counts) lets a sync that finds nothing changed finish without opening the database.

The fingerprint is a sum of one digest per file, so a write updates it from the rows it
changes. Everything here is a cache of the files: a missing or unreadable manifest is an empty
one (the next sync rebuilds the index, reusing its vectors by embed hash), and an index made
with the JSON manifest is read once and carried over (migrated, nothing re-embedded).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from memctl.core.files.sync import IndexedFile, add_digests, entry_digest, stat_fingerprint
from memctl.store.files import atomic_write

MANIFEST = (
    "manifest.json"  # the manifest's name; its files are manifest.sqlite, manifest.stamp.json
)
LEGACY_VERSION = 2  # the JSON manifest (memctl before the SQLite one), migrated when found
FORMAT = 3
_COLUMNS = "path, mtime_ns, size, file_hash, embed_hash, id, problem, sequence, ord"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER,"
    " file_hash TEXT, embed_hash TEXT, id TEXT, problem TEXT, sequence TEXT, ord TEXT)",
    "CREATE INDEX IF NOT EXISTS files_id ON files (id)",
    "CREATE INDEX IF NOT EXISTS files_sequence ON files (sequence)",
    "CREATE INDEX IF NOT EXISTS files_problem ON files (path) WHERE problem IS NOT NULL",
)
_BATCH = 500  # values per IN (...) query


def db_name(filename: str) -> str:
    return filename.replace(".json", ".sqlite")


# Stamps read by this process: path -> (file identity, contents).
_read_stamps: dict[str, tuple[tuple, str]] = {}


def stamp_name(filename: str) -> str:
    return filename.replace(".json", ".stamp.json")


@dataclass(frozen=True)
class ManifestHead:
    """The manifest's model, recipe and fingerprint, without its rows."""

    model: str | None
    dim: int | None
    recipe: int | None
    fingerprint: str
    entries: int


def _row(entry: IndexedFile) -> tuple:
    problem = None if entry.problem is None else json.dumps(entry.problem, sort_keys=True)
    return (
        entry.mtime_ns,
        entry.size,
        entry.file_hash,
        entry.embed_hash,
        entry.id,
        problem,
        entry.sequence,
        entry.order,
    )


def _entry(row: tuple) -> IndexedFile:
    mtime_ns, size, file_hash, ehash, memory_id, problem, sequence, order = row
    return IndexedFile(
        int(mtime_ns),
        int(size),
        file_hash or "",
        ehash,
        memory_id,
        None if problem is None else json.loads(problem),
        sequence or "",
        order or "",
    )


def id_in_use(index_dir: Path, memory_id: str) -> bool:
    """Does an indexed file (outside archive/) hold this id? False without an index."""
    try:
        return bool(ManifestFile(index_dir).paths_of_ids([memory_id]).get(memory_id))
    except (OSError, sqlite3.Error):
        return False


class ManifestFile:
    """One manifest on disk (`filename` names it, e.g. manifest.json). Writers hold the index
    lock; a reader may read while a writer commits (SQLite's own locking)."""

    def __init__(self, index_dir: Path, filename: str = MANIFEST):
        self.index_dir = index_dir
        self.filename = filename
        self.path = index_dir / db_name(filename)

    # -- reads ------------------------------------------------------------------------

    def _connect(self, write: bool = False) -> sqlite3.Connection | None:
        if not write and not self.path.is_file():
            return None
        if write:
            self.index_dir.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        else:
            db = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, timeout=30)
        # Why not durable: a manifest lost in an OS crash costs one sync that reuses vectors.
        db.execute("PRAGMA synchronous=OFF")
        return db

    def _meta(self, db: sqlite3.Connection) -> dict[str, str]:
        return dict(db.execute("SELECT key, value FROM meta").fetchall())

    def head(self) -> ManifestHead | None:
        """Model, recipe and fingerprint; None when there is no readable manifest."""
        try:
            db = self._connect()
            if db is None:
                return None
            with closing(db):
                meta = self._meta(db)
                if meta.get("format") != str(FORMAT):
                    return None
                return ManifestHead(
                    meta.get("model") or None,
                    int(meta["dim"]) if meta.get("dim") else None,
                    int(meta["recipe"]) if meta.get("recipe") else None,
                    meta.get("fingerprint", ""),
                    int(meta.get("entries", "0")),
                )
        except (sqlite3.Error, OSError, ValueError, KeyError):
            return None

    def entries(self, paths: Iterable[str]) -> dict[str, IndexedFile]:
        """The entries of these paths (those it has)."""
        return self._select("path", list(paths))

    def sequence_entries(self, sequences: Iterable[str]) -> dict[str, IndexedFile]:
        """Every entry in these sequences."""
        return self._select("sequence", [s for s in sequences if s])

    def paths_of_ids(self, ids: Iterable[str]) -> dict[str, list[str]]:
        """id -> the paths whose entry holds it (a duplicate id has several)."""
        found: dict[str, list[str]] = {}
        for path, entry in self._select("id", list(ids)).items():
            found.setdefault(entry.id or "", []).append(path)
        return found

    def _select(self, column: str, values: list[str]) -> dict[str, IndexedFile]:
        if not values:
            return {}
        db = self._connect()
        if db is None:
            return {}
        with closing(db):
            return self._select_in(db, column, values)

    def load(self) -> Manifest:
        """The whole manifest (an empty one when there is none, or it cannot be read)."""
        try:
            db = self._connect()
            if db is None:
                return _load_legacy(self.index_dir, self.filename)
            with closing(db):
                meta = self._meta(db)
                if meta.get("format") != str(FORMAT):
                    return _load_legacy(self.index_dir, self.filename)
                files = {
                    row[0]: _entry(row[1:])
                    for row in db.execute(f"SELECT {_COLUMNS} FROM files")  # noqa: S608
                }
                return Manifest(
                    meta.get("model") or None,
                    int(meta["dim"]) if meta.get("dim") else None,
                    files,
                    int(meta["recipe"]) if meta.get("recipe") else None,
                )
        except (sqlite3.Error, OSError, ValueError, KeyError, TypeError):
            return Manifest(None, None, {})

    # -- writes (hold the index lock) ---------------------------------------------------

    def update(
        self,
        changed: Mapping[str, IndexedFile],
        removed: Iterable[str],
        model: str | None,
        dim: int | None,
        recipe: int | None,
        replace_all: bool = False,
    ) -> dict:
        """Write these entries and drop these paths in one transaction (every entry, when
        `replace_all`), then the stamp. Returns the stamp."""
        stamp_path = self.index_dir / stamp_name(self.filename)
        stamp_path.unlink(missing_ok=True)  # Why: a stamp never outlives the manifest it sums up
        try:
            stamp = self._write(changed, list(removed), model, dim, recipe, replace_all)
        except (sqlite3.DatabaseError, _NoBase) as exc:
            # Why: a JSON manifest to carry over, or an unreadable database (only a cache):
            # write everything known.
            full = Manifest(model, dim, {}) if replace_all else self.load()
            if isinstance(exc, sqlite3.DatabaseError):
                self.path.unlink(missing_ok=True)
            full.files.update(changed)
            for path in removed:
                full.files.pop(path, None)
            stamp = self._write(full.files, [], model, dim, recipe, True)
        atomic_write(stamp_path, json.dumps(stamp).encode(), durable=False)
        legacy = self.index_dir / self.filename
        legacy.unlink(missing_ok=True)  # Why: carried over into the database; never read again
        return stamp

    def _write(self, changed, removed, model, dim, recipe, replace_all: bool) -> dict:
        db = self._connect(write=True)
        assert db is not None
        with closing(db):
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("BEGIN IMMEDIATE")
            try:
                meta = self._meta(db)
                if not replace_all and meta.get("format") != str(FORMAT):
                    raise _NoBase
                if replace_all:
                    db.execute("DELETE FROM files")
                    total, entries = 0, len(changed)
                else:
                    total = int(meta.get("fingerprint") or "0", 16)
                    touched = list(changed) + [p for p in removed if p not in changed]
                    old = self._select_in(db, "path", touched)
                    entries = int(meta.get("entries") or 0) - len(old) + len(changed)
                    total = add_digests(
                        total, [entry_digest(p, e.mtime_ns, e.size) for p, e in old.items()], -1
                    )
                    for start in range(0, len(removed), _BATCH):
                        batch = removed[start : start + _BATCH]
                        marks = ",".join("?" * len(batch))
                        db.execute(f"DELETE FROM files WHERE path IN ({marks})", batch)  # noqa: S608
                db.executemany(
                    f"INSERT OR REPLACE INTO files ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",  # noqa: S608
                    [(p, *_row(e)) for p, e in changed.items()],
                )
                total = add_digests(
                    total, [entry_digest(p, e.mtime_ns, e.size) for p, e in changed.items()]
                )
                stamp = self._stamp(db, model, dim, recipe, f"{total:016x}", entries)
                values = {
                    "format": str(FORMAT),
                    "model": model or "",
                    "dim": "" if dim is None else str(dim),
                    "recipe": "" if recipe is None else str(recipe),
                    "fingerprint": stamp["fingerprint"],
                    "entries": str(stamp["entries"]),
                }
                db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return stamp

    @staticmethod
    def _select_in(
        db: sqlite3.Connection, column: str, values: list[str]
    ) -> dict[str, IndexedFile]:
        """Path -> entry of the rows whose `column` is one of `values`, in batches."""
        found: dict[str, IndexedFile] = {}
        for start in range(0, len(values), _BATCH):
            batch = values[start : start + _BATCH]
            marks = ",".join("?" * len(batch))
            query = f"SELECT {_COLUMNS} FROM files WHERE {column} IN ({marks})"  # noqa: S608
            for row in db.execute(query, batch):
                found[row[0]] = _entry(row[1:])
        return found

    @staticmethod
    def _stamp(db, model, dim, recipe, fingerprint: str, entries: int) -> dict:
        """The stamp, from counts kept as entries change (no walk over every entry)."""
        problems = [
            json.loads(row[0])
            for row in db.execute(
                "SELECT problem FROM files WHERE problem IS NOT NULL ORDER BY path"
            )
        ]
        return {
            "format": FORMAT,
            "model": model,
            "dim": dim,
            "recipe": recipe,
            "fingerprint": fingerprint,
            "entries": entries,
            "unchanged": entries - len(problems),
            "problems": problems,
        }


class _NoBase(Exception):
    """An update found no manifest in the database to update."""


def _load_legacy(index_dir: Path, filename: str) -> Manifest:
    """The JSON manifest of an index made before the SQLite one (empty when there is none)."""
    try:
        data = json.loads((index_dir / filename).read_text(encoding="utf-8"))
        if data.get("version") != LEGACY_VERSION:
            raise ValueError("old manifest")
        files = {p: IndexedFile(*entry) for p, entry in data["files"].items()}
        return Manifest(data.get("model"), data.get("dim"), files, data.get("recipe"))
    except (OSError, ValueError, KeyError, TypeError):
        return Manifest(None, None, {})


class Manifest:
    """Per-file stat and hashes, plus the model the vectors came from (all of it in memory)."""

    def __init__(
        self,
        model: str | None,
        dim: int | None,
        files: dict[str, IndexedFile],
        recipe: int | None = None,
    ):
        self.model = model
        self.dim = dim
        self.files = files
        # which version of memctl's "what text represents a memory" made the rows
        self.recipe = recipe

    @classmethod
    def load(cls, index_dir: Path, filename: str = MANIFEST) -> Manifest:
        return ManifestFile(index_dir, filename).load()

    def save(self, index_dir: Path, filename: str = MANIFEST) -> None:
        """Replace the manifest on disk with this one (and its stamp)."""
        ManifestFile(index_dir, filename).update(
            self.files, [], self.model, self.dim, self.recipe, replace_all=True
        )

    def save_stamp(self, index_dir: Path, filename: str = MANIFEST) -> None:
        atomic_write(
            index_dir / stamp_name(filename), json.dumps(self.stamp()).encode(), durable=False
        )

    def stamp(self) -> dict:
        """What a sync that finds every file as the manifest saw it reports, without the manifest.

        Why: at 10k memories, reading the manifest costs a no-op sync more than the stat calls do.
        """
        return {
            "format": FORMAT,
            "model": self.model,
            "dim": self.dim,
            "recipe": self.recipe,
            "fingerprint": stat_fingerprint(
                {p: (e.mtime_ns, e.size) for p, e in self.files.items()}
            ),
            "entries": len(self.files),
            "unchanged": sum(1 for e in self.files.values() if e.problem is None),
            "problems": [e.problem for _, e in sorted(self.files.items()) if e.problem],
        }

    @staticmethod
    def load_stamp(index_dir: Path, filename: str = MANIFEST) -> dict:
        path = index_dir / stamp_name(filename)
        try:
            # Why by identity: a warm recall asks ~5 times; a stat is 20x cheaper than a read.
            info = os.stat(path)
            identity = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            kept = _read_stamps.get(str(path))
            if kept is not None and kept[0] == identity:
                text = kept[1]
            else:
                text = path.read_text(encoding="utf-8")
                _read_stamps[str(path)] = (identity, text)
            data = json.loads(text)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}  # Why: a stamp of the JSON manifest sums the files another way
        return data
