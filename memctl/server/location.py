"""Where the user's engine lives and whether a store uses it, found without importing anything heavy.

The client runs this on every hot command, so it mirrors `memctl.config.find_store` and reads
`server.auto` from config.yaml with a small line reader instead of importing yaml (~25 ms).
Paths are plain strings (os.path), not pathlib: on a clean install `import pathlib` (with
urllib.parse, ipaddress, fnmatch) is a good share of the client's start-up.
"""

from __future__ import annotations

import os
import stat
import zlib

TYPE_CHECKING = False  # Why not typing.TYPE_CHECKING: `import typing` costs the client ~5 ms
if TYPE_CHECKING:
    from collections.abc import Mapping

    StrPath = str | os.PathLike[str]

STORE_DIRNAME = ".memory"  # memctl.config.STORE_DIRNAME (not imported: config imports yaml)
STATE_DIRNAME = ".state"
SOCKET_NAME = "server.sock"
# sun_path holds 108 bytes with the terminating NUL on Linux (104 on macOS).
MAX_SOCKET_PATH_BYTES = 103 if os.uname().sysname == "Darwin" else 107
SHORT_SOCKET_ROOT = "/tmp"  # the long-path fallback's parent (tests point it at a tmp folder)
TRUE_WORDS = {"true", "yes", "on", "1"}
FALSE_WORDS = {"false", "no", "off", "0"}


def server_disabled(env: Mapping[str, str]) -> bool:
    """MEMCTL_NO_SERVER=1 keeps every command in-process."""
    return env.get("MEMCTL_NO_SERVER", "").strip().lower() not in ("", *FALSE_WORDS)


def find_store_root(
    explicit: str | None, cwd: StrPath, env: Mapping[str, str], upward: bool = True
) -> str | None:
    """Like config.find_store: --store, then MEMCTL_STORE, then the nearest .memory/ upward.
    None where config.find_store would raise (the in-process path then reports it)."""
    chosen = explicit or env.get("MEMCTL_STORE")
    if chosen:
        path = os.path.realpath(os.path.expanduser(chosen))
        inner = os.path.join(path, STORE_DIRNAME)
        if os.path.basename(path) != STORE_DIRNAME and os.path.isdir(inner):
            path = inner
        if os.path.basename(path) != STORE_DIRNAME and not os.path.isfile(
            os.path.join(path, "config.yaml")
        ):
            return None  # not a store: the in-process path says so
        return path if os.path.isdir(path) else None
    if not upward:
        return None
    folder = os.path.realpath(cwd)
    while True:
        candidate = os.path.join(folder, STORE_DIRNAME)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def state_dir(root: StrPath) -> str:
    return os.path.join(root, STATE_DIRNAME)


RUNTIME_DIR_ENV = "MEMCTL_RUNTIME_DIR"  # where the engine's socket lives (tests point it at tmp)
ENGINE_SOCKET = "engine.sock"


def engine_dir(env: Mapping[str, str]) -> str:
    """The user's engine folder: $MEMCTL_RUNTIME_DIR, else $XDG_RUNTIME_DIR/memctl, else the
    user's cache dir ($XDG_CACHE_HOME or ~/.cache)/memctl. Its socket, lock, pid file and log.

    Read here, not in memctl.config, because the client runs this on every hot command and
    config imports yaml (see the module's docstring)."""
    chosen = env.get(RUNTIME_DIR_ENV, "")
    if chosen:
        return os.path.realpath(os.path.expanduser(chosen))
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "memctl")
    cache = env.get("XDG_CACHE_HOME", "")
    if not (cache and os.path.isabs(cache)):
        cache = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "memctl")


def socket_path(env: Mapping[str, str]) -> str:
    """The engine's socket: `engine.sock` in engine_dir, or when that path is too long for a
    Unix socket, a name made from a hash of the folder under /tmp/memctl-<uid>."""
    folder = engine_dir(env)
    candidate = os.path.join(folder, ENGINE_SOCKET)
    if len(os.fsencode(candidate)) <= MAX_SOCKET_PATH_BYTES:
        return candidate
    name = f"{zlib.crc32(os.fsencode(folder)):08x}{zlib.adler32(os.fsencode(folder)):08x}.sock"
    return os.path.join(SHORT_SOCKET_ROOT, f"memctl-{os.getuid()}", name)


def lock_path(env: Mapping[str, str]) -> str:
    """Held (flock) by the running engine for its whole life: one engine per user."""
    return os.path.join(engine_dir(env), "engine.lock")


def info_path(env: Mapping[str, str]) -> str:
    """The running engine's pid and socket, for `memctl server stop` when it does not answer."""
    return os.path.join(engine_dir(env), "engine.json")


def log_path(env: Mapping[str, str]) -> str:
    return os.path.join(engine_dir(env), "engine.log")


def starting_marker(env: Mapping[str, str]) -> str:
    """Present while a client-started engine is starting, so other clients do not start more."""
    return os.path.join(engine_dir(env), "engine.starting")


def private_dir(folder: StrPath) -> bool:
    """Make `folder` if needed (0700); False if it is not ours alone (owner, mode, a real
    folder rather than a symlink planted by someone else)."""
    folder = os.fspath(folder)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and (info.st_mode & 0o077) == 0


NO_ENGINE = "no engine yet"


def _owned_private(path: str, kind: str) -> str | None:
    """None when `path` is this user's own (lstat: a symlink is never followed) and closed to
    group and others; else why not. FileNotFoundError passes through."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return f"{kind} {path} is a symlink"
    if info.st_uid != os.getuid():
        return f"{kind} {path} belongs to uid {info.st_uid}"
    if kind == "folder" and not stat.S_ISDIR(info.st_mode):
        return f"{kind} {path} is not a folder"
    if kind == "folder" and info.st_mode & 0o077:
        return f"{kind} {path} is open to other users (mode {stat.S_IMODE(info.st_mode):o})"
    if kind == "socket" and not stat.S_ISSOCK(info.st_mode):
        return f"{kind} {path} is not a socket"
    return None


def trusted_folder(folder: StrPath) -> bool:
    """An existing real folder (not a symlink) owned by this user and closed to others; never
    creates it. Only such a folder holds a socket the client talks to, or a log it writes."""
    try:
        return _owned_private(os.fspath(folder), "folder") is None
    except OSError:
        return False


def engine_problem(env: Mapping[str, str]) -> str | None:
    """Why the client must not talk to the socket it would use (NO_ENGINE: none is there yet);
    None when the engine's folder, the socket's folder and the socket file pass the checks the
    engine itself makes: owned by this user, not open to group or others, not a symlink."""
    path = socket_path(env)
    try:
        for folder in dict.fromkeys((engine_dir(env), os.path.dirname(path))):
            problem = _owned_private(folder, "folder")
            if problem:
                return problem
        return _owned_private(path, "socket")
    except FileNotFoundError:
        return NO_ENGINE
    except OSError as exc:
        return f"cannot check {path}: {exc.strerror}"


def private_socket_dir(path: StrPath) -> bool:
    """The socket's folder made if needed (0700); False if it is not ours alone."""
    return private_dir(os.path.dirname(os.fspath(path)))


def config_bytes(root: StrPath) -> bytes:
    """config.yaml's bytes; empty when it is missing or not a regular file (a FIFO would block
    a plain open; the command itself then reports the config as broken)."""
    try:
        fd = os.open(os.path.join(root, "config.yaml"), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        with os.fdopen(fd, "rb", closefd=False) as config:
            return config.read(1024 * 1024 + 1)
    except OSError:
        return b""
    finally:
        os.close(fd)


def config_digest(raw: bytes) -> str:
    """Names the config a server was started with; any byte changed starts a new server."""
    return f"{zlib.crc32(raw):08x}-{len(raw)}"


def _after(text: bytes, word: bytes) -> bytes | None:
    """What follows `word`, optional blanks and a colon, stripped; None if that is not there.
    (The plain-bytes form of `^word\\s*:\\s*`: `re` is not imported on the client's path.)"""
    if not text.startswith(word):
        return None
    rest = text[len(word) :].lstrip()
    return rest[1:].strip() if rest.startswith(b":") else None


def _is_comment_or_empty(text: bytes) -> bool:
    return text == b"" or text.startswith(b"#")


def _flow_body(line: bytes) -> bytes | None:
    """`server: {BODY}` (a comment may follow): BODY; None for any other line."""
    rest = _after(line, b"server")
    if rest is None or not rest.startswith(b"{"):
        return None
    body, closed, tail = rest[1:].partition(b"}")
    if not closed or b"#" in body or not _is_comment_or_empty(tail.strip()):
        return None
    return body


def _auto_value(inner: bytes) -> bytes | None:
    """The value of an indented `auto: VALUE` line (a comment may follow); None otherwise."""
    if not inner[:1].isspace():
        return None
    rest = _after(inner.lstrip(), b"auto")
    if not rest:
        return None
    value = rest.split(None, 1)[0].split(b"#", 1)[0]
    tail = rest[len(value) :].strip()
    return value if value and _is_comment_or_empty(tail) else None


def server_auto(raw: bytes, root: StrPath) -> bool:
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
        flow = _flow_body(line)
        if flow is not None:
            for item in flow.split(b","):
                key, _, value = item.partition(b":")
                if key.strip() == b"auto":
                    return _truth(value.strip(), root)
            return True
        rest = _after(line, b"server")
        if rest is None or not _is_comment_or_empty(rest):
            return _auto_from_config(root)
        indent: bytes | None = None  # the section's own keys; deeper lines belong to others
        for inner in lines[number + 1 :]:
            if inner.strip() == b"" or inner.lstrip().startswith(b"#"):
                continue
            if not inner[:1].isspace():
                break
            own = inner[: len(inner) - len(inner.lstrip())]
            indent = own if indent is None else indent
            found = _auto_value(inner)
            if found is not None and own == indent:
                return _truth(found, root)
        return True
    return True


NO_VALUE_WORDS = {b"", b"null", b"~", b"none", b"''", b'""'}


def llm_configured(raw: bytes, env: Mapping[str, str]) -> bool:
    """Might this store's commands call a model (MEMCTL_LLM_MODEL, or an `llm:` section with a
    `model:` value)? When the config is written in a way this line reader does not follow, yes:
    the model keys then travel, as a model would need them."""
    if env.get("MEMCTL_LLM_MODEL", "").strip():
        return True
    if b"llm" not in raw:
        return False
    lines = raw.splitlines()
    for number, line in enumerate(lines):
        rest = _after(line, b"llm")
        if rest is None:
            continue
        if not _is_comment_or_empty(rest):
            return True  # a flow mapping or something stranger: assume a model
        for inner in lines[number + 1 :]:
            if inner.strip() == b"" or inner.lstrip().startswith(b"#"):
                continue
            if not inner[:1].isspace():
                break
            value = _after(inner.lstrip(), b"model")
            if value is not None:
                word = value.split(b"#", 1)[0].strip().lower()
                if word not in NO_VALUE_WORDS:
                    return True
    return False


def _truth(value: bytes, root: StrPath) -> bool:
    word = value.decode("utf-8", "replace").strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return _auto_from_config(root)


def _auto_from_config(root: StrPath) -> bool:
    from pathlib import Path

    from memctl.config import load_config

    try:
        section = load_config(Path(root)).get("server")
    except Exception:  # noqa: BLE001 - a broken config.yaml: in-process reports it at once
        return False
    return not (isinstance(section, dict) and not section.get("auto", True))
