"""The recorded sessions: manifest, where each transcript lives, and its integrity.

Sessions whose project license allows redistribution are committed gzip-compressed under
`data/<project>/`; the others are fetched into the cache by `python -m benchmarks.sessions.fetch`.
Every transcript is checked against the sha256 in the manifest before use.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
DATA = HERE / "data"
CACHE_ENV = "MEMCTL_BENCH_SESSIONS_CACHE"


class CorpusError(Exception):
    """A transcript is missing or does not match the manifest."""


@dataclass(frozen=True)
class Session:
    id: str  # <project>/<date>-<session id prefix>
    project: str
    half: str  # dev | test
    repository: str
    ref: str
    commit: str
    path: str  # path of the transcript in the repository at `commit`
    git_blob: str
    license: str
    committed: bool
    sha256: str
    bytes: int
    session_id: str
    started: str
    lines: int

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    @property
    def raw_url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repository}/{self.commit}/{self.path}"


def cache_dir() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "memctl-bench",
        "sessions",
    )
    return Path(base)


def load_sessions(manifest: Path = MANIFEST) -> list[Session]:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    return [Session(**entry) for entry in data["sessions"]]


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def committed_copy(session: Session) -> Path:
    return DATA / session.project / f"{session.name}.jsonl.gz"


def cached_copy(session: Session, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / session.project / f"{session.name}.jsonl"


def transcript_path(session: Session, cache: Path | None = None) -> Path:
    """A plain JSONL copy of the transcript, verified against the manifest's sha256.

    Committed sessions are unpacked into the cache on first use; the others must have been
    fetched (`python -m benchmarks.sessions.fetch`)."""
    target = cached_copy(session, cache)
    if target.is_file() and digest(target.read_bytes()) == session.sha256:
        return target
    if not session.committed:
        raise CorpusError(
            f"{session.id}: not in the cache ({target}); run `python -m benchmarks.sessions.fetch` "
            f"(its license, '{session.license}', keeps it out of the repository)"
        )
    raw = gzip.decompress(committed_copy(session).read_bytes())
    if digest(raw) != session.sha256:
        raise CorpusError(f"{session.id}: committed copy does not match the manifest's sha256")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(raw)
    tmp.replace(target)
    return target


def available(
    sessions: list[Session], cache: Path | None = None
) -> tuple[list[Session], list[str]]:
    """The sessions whose transcripts can be had now, and a message for each one that cannot."""
    ok: list[Session] = []
    missing: list[str] = []
    for session in sessions:
        try:
            transcript_path(session, cache)
        except (CorpusError, OSError) as exc:
            missing.append(str(exc))
            continue
        ok.append(session)
    return ok, missing
