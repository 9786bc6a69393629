"""Where a store's server lives and whether it should run, found without importing anything heavy.

The client runs this on every hot command, so it mirrors `memctl.config.find_store` and reads
`server.auto` from config.yaml with a small line reader instead of importing yaml (~25 ms).
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Mapping
from pathlib import Path

STORE_DIRNAME = ".memory"  # memctl.config.STORE_DIRNAME (not imported: config imports yaml)
STATE_DIRNAME = ".state"
SOCKET_NAME = "server.sock"
# sun_path holds 108 bytes with the terminating NUL on Linux (104 on macOS).
MAX_SOCKET_PATH_BYTES = 103 if os.uname().sysname == "Darwin" else 107
TRUE_WORDS = {"true", "yes", "on", "1"}
FALSE_WORDS = {"false", "no", "off", "0"}


def server_disabled(env: Mapping[str, str]) -> bool:
    """MEMCTL_NO_SERVER=1 keeps every command in-process."""
    return env.get("MEMCTL_NO_SERVER", "").strip().lower() not in ("", *FALSE_WORDS)


def find_store_root(
    explicit: str | None, cwd: Path, env: Mapping[str, str], upward: bool = True
) -> Path | None:
    """Like config.find_store: --store, then MEMCTL_STORE, then the nearest .memory/ upward.
    None where config.find_store would raise (the in-process path then reports it)."""
    chosen = explicit or env.get("MEMCTL_STORE")
    if chosen:
        path = Path(chosen).expanduser().resolve()
        return path if path.is_dir() else None
    if not upward:
        return None
    here = cwd.resolve()
    for folder in (here, *here.parents):
        candidate = folder / STORE_DIRNAME
        if candidate.is_dir():
            return candidate
    return None


def state_dir(root: Path) -> Path:
    return root / STATE_DIRNAME


def lock_path(root: Path) -> Path:
    """Held (flock) by the running server for its whole life: one server per store."""
    return state_dir(root) / "server.lock"


def info_path(root: Path) -> Path:
    """The running server's pid and socket, for `memctl server stop` when it does not answer."""
    return state_dir(root) / "server.json"


def log_path(root: Path) -> Path:
    return state_dir(root) / "server.log"


def starting_marker(root: Path) -> Path:
    """Present while a client-started server is starting, so other clients do not start more."""
    return state_dir(root) / "server.starting"


def socket_path(root: Path, env: Mapping[str, str]) -> Path:
    """`<store>/.state/server.sock`, or when that path is too long for a Unix socket, a name made
    from a hash of the store path under $XDG_RUNTIME_DIR/memctl (else /tmp/memctl-<uid>)."""
    candidate = state_dir(root) / SOCKET_NAME
    if len(os.fsencode(candidate)) <= MAX_SOCKET_PATH_BYTES:
        return candidate
    name = f"{zlib.crc32(os.fsencode(root)):08x}{zlib.adler32(os.fsencode(root)):08x}.sock"
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "memctl" / name
    return Path("/tmp") / f"memctl-{os.getuid()}" / name


def private_socket_dir(path: Path) -> bool:
    """Make the socket's folder if needed (0700); False if it is not ours alone."""
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return False
    if folder.name == STATE_DIRNAME:
        return info.st_uid == os.getuid()
    return info.st_uid == os.getuid() and (info.st_mode & 0o077) == 0 and folder.is_dir()


def config_bytes(root: Path) -> bytes:
    try:
        return (root / "config.yaml").read_bytes()
    except OSError:
        return b""


def config_digest(raw: bytes) -> str:
    """Names the config a server was started with; any byte changed starts a new server."""
    return f"{zlib.crc32(raw):08x}-{len(raw)}"


_SECTION = re.compile(rb"^server\s*:\s*(?:#.*)?$")
_FLOW_SECTION = re.compile(rb"^server\s*:\s*\{(?P<body>[^}#]*)\}\s*(?:#.*)?$")
_KEY = re.compile(rb"^\s+auto\s*:\s*(?P<value>[^#\s]+)\s*(?:#.*)?$")


def server_auto(raw: bytes, root: Path) -> bool:
    """config.yaml's `server.auto` (default true). Plain block and flow mappings are read here;
    anything else is left to memctl.config."""
    if b"server" not in raw:
        return True
    lines = raw.splitlines()
    sections = [n for n, line in enumerate(lines) if line.startswith(b"server")]
    if len(sections) > 1:
        return _auto_from_config(root)  # Why: a repeated key; yaml's rule (the last wins) decides
    for number in sections:
        line = lines[number]
        flow = _FLOW_SECTION.match(line)
        if flow:
            for item in flow.group("body").split(b","):
                key, _, value = item.partition(b":")
                if key.strip() == b"auto":
                    return _truth(value.strip(), root)
            return True
        if not _SECTION.match(line):
            return _auto_from_config(root)
        indent: bytes | None = None  # the section's own keys; deeper lines belong to others
        for inner in lines[number + 1 :]:
            if inner.strip() == b"" or inner.lstrip().startswith(b"#"):
                continue
            if not inner[:1].isspace():
                break
            own = inner[: len(inner) - len(inner.lstrip())]
            indent = own if indent is None else indent
            found = _KEY.match(inner)
            if found and own == indent:
                return _truth(found.group("value"), root)
        return True
    return True


def _truth(value: bytes, root: Path) -> bool:
    word = value.decode("utf-8", "replace").strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return _auto_from_config(root)


def _auto_from_config(root: Path) -> bool:
    from memctl.config import load_config

    try:
        section = load_config(root).get("server")
    except Exception:  # noqa: BLE001 - a broken config.yaml: in-process reports it at once
        return False
    return not (isinstance(section, dict) and not section.get("auto", True))
