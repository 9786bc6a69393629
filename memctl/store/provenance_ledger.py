"""This clone's own record of provenance, in `<state>/` (never committed), signed with a key
that lives outside the project.

`provenance-writes.log`: one line per memory text memctl wrote on this machine (id, digest of
title and body, the origin memctl gave it, signature). A memory whose text has no signed line
was not written here by memctl: it came through git (pull, merge, rebase, clone) or another
program, and is untrusted until a person approves it.

`provenance.json`: `arrivals` (id -> origin `git:<author>`, commit), noted by the post-merge /
post-checkout hooks or when memctl next sees HEAD moved (`seen_head`), used to name where an
unvouched memory came from; `approved` (id -> signed digest of the text a person released);
`joined` (id -> why: an instruction split over two memories of one origin).

Why a key outside the project (`$XDG_STATE_HOME/memctl/provenance.key`): git can write any file
in the work tree, a forced-in `.state/` file included; it cannot sign with a key it never saw.
Lost or broken records, or a lost key, leave memories unvouched: fail closed, never open.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.store.files import atomic_write, file_lock

LEDGER_NAME = "provenance.json"
WRITES_NAME = "provenance-writes.log"
KEY_NAME = "provenance.key"
COMPACT_STEP = 1 << 18  # bytes; past each such step the log is rewritten with one line per memory


@dataclass
class Ledger:
    arrivals: dict[str, dict[str, str]] = field(default_factory=dict)
    approved: dict[str, str] = field(default_factory=dict)
    seen_head: str = ""  # the git commit whose memory files were last checked for arrivals
    joined: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "arrivals": self.arrivals,
            "approved": self.approved,
            "seen_head": self.seen_head,
            "joined": self.joined,
        }


def ledger_path(state_dir: Path) -> Path:
    return state_dir / LEDGER_NAME


def load_ledger(state_dir: Path) -> Ledger:
    """The ledger; empty when there is none. An unreadable one is empty too: approvals are
    lost (memories wait in quarantine again), never granted."""
    try:
        data = json.loads(ledger_path(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Ledger()
    if not isinstance(data, dict):
        return Ledger()
    arrivals, approved, joined = data.get("arrivals"), data.get("approved"), data.get("joined")
    arrivals = arrivals if isinstance(arrivals, dict) else {}
    approved = approved if isinstance(approved, dict) else {}
    joined = joined if isinstance(joined, dict) else {}
    return Ledger(
        {str(k): dict(v) for k, v in arrivals.items() if isinstance(v, dict)},
        {str(k): str(v) for k, v in approved.items()},
        str(data.get("seen_head") or ""),
        {str(k): str(v) for k, v in joined.items()},
    )


def save_ledger(state_dir: Path, ledger: Ledger) -> None:
    text = json.dumps(ledger.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write(ledger_path(state_dir), text.encode("utf-8"))


# --- the machine's key ---------------------------------------------------------------------


def key_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME", "")
    folder = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return folder / "memctl" / KEY_NAME


_KEYS: dict[Path, bytes] = {}


def machine_key(create: bool = False) -> bytes | None:
    """This user's signing key (created 0600 on the first write); None when unreadable."""
    path = key_path()
    if path in _KEYS:
        return _KEYS[path]
    try:
        if path.is_symlink():
            return None  # never follow a planted link to someone else's bytes
        key = path.read_bytes()
    except FileNotFoundError:
        if not create:
            return None
        key = _create_key(path)
    except OSError:
        return None
    if len(key) < 32:
        return None
    _KEYS[path] = key
    return key


def _create_key(path: Path) -> bytes:
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return path.read_bytes()  # another process made it first
    except OSError:
        return b""
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def sign(*parts: str) -> str:
    """A signature of `parts` with this user's key ("" when there is no key)."""
    key = machine_key(create=True)
    if not key:
        return ""
    return hmac.new(key, "\0".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def signed_by_me(signature: str, *parts: str) -> bool:
    key = machine_key()
    if not key or not signature:
        return False
    wanted = hmac.new(key, "\0".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()[:32]
    return hmac.compare_digest(wanted, signature)


# --- what memctl wrote here ----------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    digest: str
    origin: str
    signature: str

    def genuine(self, memory_id: str) -> bool:
        return signed_by_me(self.signature, "written", memory_id, self.digest, self.origin)


def writes_path(state_dir: Path) -> Path:
    return state_dir / WRITES_NAME


def _line(memory_id: str, digest: str, origin: str) -> str:
    origin = " ".join(origin.split())
    signature = sign("written", memory_id, digest, origin)
    return f"{memory_id}\t{digest}\t{origin}\t{signature}\n"


def note_written(state_dir: Path, entries: list[tuple[str, str, str]]) -> None:
    """Record (id, digest, origin) of texts memctl just wrote (appended under the store lock)."""
    if not entries:
        return
    text = "".join(_line(*entry) for entry in entries)
    path = writes_path(state_dir)
    with file_lock(state_dir / "locks" / "provenance.lock"):
        with open(path, "a", encoding="utf-8") as handle:
            before = handle.tell()
            handle.write(text)
            after = handle.tell()
    if after // COMPACT_STEP > before // COMPACT_STEP:
        compact_writes(state_dir)


def load_writes(state_dir: Path) -> dict[str, Written]:
    """id -> the last text memctl wrote for it (signatures checked when asked)."""
    try:
        text = writes_path(state_dir).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    found: dict[str, Written] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 4:
            found[fields[0]] = Written(fields[1], fields[2], fields[3])
    return found


def compact_writes(state_dir: Path, forget: set[str] | frozenset[str] = frozenset()) -> None:
    """Rewrite the log with one line per memory, without the `forget` ids."""
    with file_lock(state_dir / "locks" / "provenance.lock"):
        writes = load_writes(state_dir)
        if not writes and not writes_path(state_dir).exists():
            return
        kept = "".join(
            f"{memory_id}\t{w.digest}\t{w.origin}\t{w.signature}\n"
            for memory_id, w in writes.items()
            if memory_id not in forget
        )
        with contextlib.suppress(OSError):
            atomic_write(writes_path(state_dir), kept.encode("utf-8"))
