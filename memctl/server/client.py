"""The thin client: hand a hot command to the user's engine and print its answer.

`memctl` calls `run_via_server(argv)` before it builds the typer app. It returns the exit code
when the engine answered, or None when the command should run in-process as it always did:
the engine is off for this store (`server.auto: false`, MEMCTL_NO_SERVER=1), not running yet
(one is started in the background for the next call), busy being replaced, dead or hung.
Every request names its store (the root found here); one engine serves all of a user's stores.
Nothing here imports typer, rich, yaml, lancedb, lance, onnxruntime or fastembed; the socket is
the C `_socket` module (the `socket` wrapper costs ~10 ms to import), and paths are strings:
typing, pathlib and collections cost a clean install's client process ~10 ms between them.
"""

from __future__ import annotations

import _socket
import io
import os
import sys
import time

from memctl.server import location
from memctl.server.identity import code_identity
from memctl.server.protocol import PROTOCOL, loads, recv_message, send_message
from memctl.server.typed import typed_request

TYPE_CHECKING = False  # Why not typing.TYPE_CHECKING: see the module's docstring
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, BinaryIO

SERVED_COMMANDS = frozenset({"recall", "add", "context", "index", "hook", "list", "stats"})
GLOBAL_OPTIONS_WITH_VALUE = ("--store", "-s")
CONNECT_TIMEOUT_S = 0.2
ACCEPT_TIMEOUT_S = 2.0  # the server accepts from its connection thread, whatever else it runs
REPLY_TIMEOUT_S = 300.0  # the command itself: generous (a write may wait its turn), but bounded
# A hook must answer inside Claude Code's timeout (see agents.claude_code.HOOK_SPECS): past
# these it prints nothing and exits 0, as a hook that overruns in-process does.
HOOK_REPLY_TIMEOUT_S = {
    "session-start": 13.0,
    "user-prompt-submit": 8.0,
    "pre-compact": 55.0,
    "session-end": 27.0,
}
STARTING_GRACE_S = 30.0  # a start marker older than this belongs to a start that failed
LOG_ROTATE_BYTES = 1024 * 1024
REQUEST_ID_ENV = "MEMCTL_REQUEST_ID"  # config.Environment.request_id


class CommandLine:
    """What the client needs from argv: the command word, `--store`, and its arguments."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.store: str | None = None
        self.name: str | None = None
        self.rest: list[str] = []
        position = 0
        while position < len(argv):
            arg = argv[position]
            if arg in GLOBAL_OPTIONS_WITH_VALUE:
                self.store = argv[position + 1] if position + 1 < len(argv) else None
                position += 2
            elif arg.startswith("--store="):
                self.store, position = arg.split("=", 1)[1], position + 1
            elif arg.startswith("-s") and not arg.startswith("--"):
                self.store, position = arg[2:], position + 1
            elif arg.startswith("-"):
                position += 1
            else:
                self.name, self.rest = arg, argv[position + 1 :]
                break

    @property
    def served(self) -> bool:
        if self.name not in SERVED_COMMANDS or "--help" in self.rest:
            return False
        # Why: `hook git` and `hook ingest` are not on an agent's hot path.
        return self.name != "hook" or self.rest[:1] == ["claude-code"]

    @property
    def reads_stdin(self) -> bool:
        return self.name == "hook" or (self.name == "add" and "-" in self.rest)

    @property
    def hook_event(self) -> str:
        events = [arg for arg in self.rest[1:] if not arg.startswith("-")]
        return events[0] if events else ""


def run_via_server(argv: list[str]) -> int | None:
    """The exit code of `memctl ARGV` answered by the store's server; None: run it in-process."""
    if location.server_disabled(os.environ):
        return None
    command = CommandLine(argv)
    if not command.served:
        return None
    if command.name == "add" and not os.environ.get(REQUEST_ID_ENV):
        # Why in os.environ: the engine gets it with the request, and an in-process run after
        # the engine died mid-add uses the same id, so an add that landed is not written twice.
        os.environ[REQUEST_ID_ENV] = os.urandom(16).hex()
    try:
        stdin = _take_stdin(command)
        root = _store_root(command, stdin)
        if root is None:
            return None
        raw_config = location.config_bytes(root)
        if not location.server_auto(raw_config, root):
            return None
        problem = location.engine_problem(os.environ)
        if problem == location.NO_ENGINE:
            start_server()
            return None
        if problem is not None:
            _note_refused(problem)
            return None
        sock = _connect(location.socket_path(os.environ))
        if sock is None:
            start_server()
            return None
        try:
            return _exchange(sock, command, root, stdin, raw_config)
        finally:
            sock.close()
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the in-process path answers
        note(f"client: {type(exc).__name__}: {exc}; ran `{command.name}` in-process")
        return None


def _exchange(sock, command: CommandLine, root: str, stdin: bytes, raw_config: bytes) -> int | None:
    header = {
        "op": "run",
        "protocol": PROTOCOL,
        "code": code_identity(),
        "config": location.config_digest(raw_config),
        "store": root,
        "argv": command.argv,
        "argv0": sys.argv[0] if sys.argv else "memctl",
        "main_package": getattr(sys.modules.get("__main__"), "__package__", None),
        "cwd": os.getcwd(),
        "env": request_environment(os.environ, location.llm_configured(raw_config, os.environ)),
        "streams": terminal_facts(os.environ),
    }
    typed = typed_request(command.argv)
    if typed is not None:
        header["typed"] = typed  # the engine runs the use-case; argv stays for its log
    send_message(sock, header, (stdin,))
    sock.settimeout(ACCEPT_TIMEOUT_S)
    try:
        answer, _ = recv_message(sock)
    except (TimeoutError, ConnectionError, OSError) as exc:
        note(f"client: the engine did not accept `{command.name}` ({exc}); ran in-process")
        start_server()  # Why: a hung server is replaced by the one this starts
        return None
    if answer.get("accepted") is not True:
        note(f"client: engine declined ({answer.get('reason')}); ran in-process")
        if answer.get("restart", True):
            start_server()  # the declining engine is on its way out; this is its successor
        return None
    timeout = REPLY_TIMEOUT_S
    if command.name == "hook":
        timeout = HOOK_REPLY_TIMEOUT_S.get(command.hook_event, 8.0)
    sock.settimeout(timeout)
    try:
        result, blobs = recv_message(sock)
    except (TimeoutError, ConnectionError, OSError) as exc:
        if command.name == "hook":
            _log_hook(root, command.hook_event, f"resident server gave no answer ({exc})")
            return 0  # the hook rule: exit 0, print nothing
        note(f"client: no answer to `{command.name}` ({exc}); ran in-process")
        start_server()
        return None
    return _print_result(result, blobs)


# What a served command may read of the client's environment (docs/engine.md lists it): memctl's
# own settings, where things live, the locale and terminal, git's and Claude Code's variables.
ENVIRONMENT_NAMES = frozenset(
    {
        "HOME", "PATH", "PWD", "USER", "LOGNAME", "TMPDIR", "TZ", "LANG", "LANGUAGE", "TERM",
        "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
        "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
    }
)  # fmt: skip
ENVIRONMENT_PREFIXES = ("MEMCTL_", "XDG_", "LC_", "GIT_", "CLAUDE_", "HF_")
# Only when the store may call a model (llm.model or MEMCTL_LLM_MODEL): what litellm reads.
MODEL_NAMES = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
     "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"}
)  # fmt: skip
MODEL_PREFIXES = (
    "LITELLM_", "OPENAI_", "ANTHROPIC_", "AZURE_", "AWS_", "GEMINI_", "GOOGLE_", "VERTEX",
    "OLLAMA_", "MISTRAL_", "GROQ_", "COHERE_", "DEEPSEEK_", "OPENROUTER_", "TOGETHER",
)  # fmt: skip
MODEL_SUFFIXES = ("_API_KEY", "_API_BASE", "_BASE_URL", "_API_VERSION", "_API_TOKEN")


def request_environment(env: Mapping[str, str], with_model_keys: bool) -> dict[str, str]:
    """The part of the client's environment a served command needs, never all of it: tokens
    and keys of other tools stay in the client's process."""
    kept = {}
    for name, value in env.items():
        wanted = name in ENVIRONMENT_NAMES or name.startswith(ENVIRONMENT_PREFIXES)
        if not wanted and with_model_keys:
            wanted = (
                name in MODEL_NAMES
                or name.startswith(MODEL_PREFIXES)
                or name.endswith(MODEL_SUFFIXES)
            )
        if wanted:
            kept[name] = value
    return kept


def _print_result(result: dict[str, Any], blobs: list[bytes]) -> int:
    code = int(result.get("exit", 1))
    for stream_number, data in zip(result.get("streams") or [], blobs, strict=False):
        stream = sys.stdout if stream_number == 1 else sys.stderr
        if stream is None:
            continue
        try:
            stream.flush()
            stream.buffer.write(data)
            stream.buffer.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe: the reader is gone
            code = code or 1
    return code


def terminal_facts(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Per standard stream: is it a terminal, its encoding, and the size rich would give it.

    rich sizes a console from the first of fds 0, 1, 2 that is a terminal, then COLUMNS/LINES,
    else 80x25; a dumb terminal is 80x25. The server builds its consoles from these facts.
    """
    width = height = None
    for fd in (0, 1, 2):
        try:
            width, height = os.get_terminal_size(fd)
            break
        except (OSError, ValueError):
            continue
    columns, lines = env.get("COLUMNS", ""), env.get("LINES", "")
    width = int(columns) if columns.isdigit() else width
    height = int(lines) if lines.isdigit() else height
    facts: dict[str, dict[str, Any]] = {}
    for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout), ("stderr", sys.stderr)):
        isatty = _isatty(stream)
        dumb = isatty and env.get("TERM", "").lower() in ("dumb", "unknown")
        facts[name] = {
            "isatty": isatty,
            "encoding": getattr(stream, "encoding", None) or "utf-8",
            "errors": getattr(stream, "errors", None) or "strict",
            "width": 80 if dumb else (width or 80),
            "height": 25 if dumb else (height or 25),
        }
    return facts


def _isatty(stream) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, OSError):
        return False


def _take_stdin(command: CommandLine) -> bytes:
    """Read what the command would read from standard input, and leave an identical stand-in
    so an in-process fallback reads the same bytes."""
    stream = sys.stdin
    if not command.reads_stdin or stream is None:
        return b""
    if command.name == "hook" and _isatty(stream):
        return b""  # the hook reads no terminal (cli.commands.hook._read_stdin)
    buffer: BinaryIO | None = getattr(stream, "buffer", None)
    try:
        data = buffer.read() if buffer is not None else stream.read().encode()
    except (OSError, ValueError):
        data = b""
    sys.stdin = io.TextIOWrapper(
        io.BytesIO(data),
        encoding=getattr(stream, "encoding", None) or "utf-8",
        errors=getattr(stream, "errors", None) or "strict",
    )
    return data


def _store_root(command: CommandLine, stdin: bytes) -> str | None:
    env = os.environ
    cwd = os.getcwd()
    if command.name != "hook" or command.store or env.get("MEMCTL_STORE"):
        return location.find_store_root(command.store, cwd, env)
    # As agents.claude_code_events.find_hook_store: the payload's cwd, the project, the process.
    places = []
    try:
        payload = loads(stdin.decode("utf-8")) if stdin.strip() else {}
        if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
            places.append(payload["cwd"])
    except ValueError:
        pass
    places += [env.get("CLAUDE_PROJECT_DIR", ""), cwd]
    for place in places:
        if place:
            root = location.find_store_root(None, place, env)
            if root is not None:
                return root
    return None


def _connect(path: str):
    """A connected socket, or None when no server listens there, or when the process that
    listens is another user's (SO_PEERCRED, where the system has it)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(path)
        uid = peer_uid(sock)
    except (FileNotFoundError, ConnectionRefusedError, TimeoutError, OSError):
        sock.close()
        return None
    if uid is not None and uid != os.getuid():
        sock.close()
        _note_refused(f"the process listening on {path} runs as uid {uid}")
        return None
    return sock


def peer_uid(sock) -> int | None:
    """The user id of the process at the other end of a connected Unix socket; None where the
    system does not tell (no SO_PEERCRED): the folder checks then stand alone."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    credentials = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # pid, uid, gid: C ints
    return int.from_bytes(credentials[4:8], sys.byteorder)


def start_server() -> bool:
    """Start the user's engine (`memctl serve`), detached, logging to engine.log in its folder,
    unless another client started one moments ago. True if one was started. Never touches a
    store's folder: the engine's files live in location.engine_dir."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEMCTL_NO_SERVER", "MEMCTL_STORE")}
    folder = location.engine_dir(env)
    if not location.private_dir(folder):
        return False  # not ours alone: in-process only (the engine would refuse it too)
    marker = location.starting_marker(env)
    try:
        try:
            handle = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            if time.time() - os.stat(marker).st_mtime < STARTING_GRACE_S:
                return False
            try:
                os.unlink(marker)
            except FileNotFoundError:
                pass
            handle = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.write(handle, str(os.getpid()).encode())
        os.close(handle)
    except OSError:
        return False  # another client won the race
    import subprocess

    log = location.log_path(env)
    _rotate(log)
    output_fd = _open_log(log)
    if output_fd is None:
        return False
    with os.fdopen(output_fd, "ab") as output:
        subprocess.Popen(
            [sys.executable, "-m", "memctl", "serve"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
            close_fds=True,
        )
    return True


def _rotate(log: str) -> None:
    try:
        if os.lstat(log).st_size > LOG_ROTATE_BYTES:
            os.replace(log, log + ".1")
    except OSError:
        pass


def _open_log(path: str) -> int | None:
    """A descriptor appending to `path`, a regular file of this user's in a folder that passed
    location.trusted_folder; None otherwise. A planted symlink is never followed."""
    if not location.trusted_folder(os.path.dirname(path)):
        return None
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return None
    info = os.fstat(fd)
    if not (info.st_mode & 0o170000 == 0o100000 and info.st_uid == os.getuid()):
        os.close(fd)
        return None
    os.fchmod(fd, 0o600)
    return fd


def one_line(text: str) -> str:
    """`text` as one log line: backslashes, line breaks and other control characters escaped,
    so nothing read from outside can start a line of its own."""
    out = []
    for char in text.replace("\\", "\\\\"):
        code = ord(char)
        if code < 32 or code == 127 or 0x80 <= code < 0xA0 or char in "\u2028\u2029\x85":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, _escaped(code)))
        else:
            out.append(char)
    return "".join(out)


def _escaped(code: int) -> str:
    return f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}"


def _append_line(path: str, line: str) -> None:
    fd = _open_log(path)
    if fd is None:
        return
    try:
        os.write(fd, (one_line(line) + "\n").encode("utf-8", "backslashreplace"))
    finally:
        os.close(fd)


def note(message: str) -> None:
    """One line in the engine's log, only in a verified engine folder; never raises, never
    creates the engine's folder."""
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        _append_line(location.log_path(os.environ), f"{stamp} pid={os.getpid()} {message}")
    except OSError:
        pass


_refusals_noted: set[str] = set()


def _note_refused(problem: str) -> None:
    """Say once (per process) why this client would not talk to the engine's socket."""
    if problem not in _refusals_noted:
        _refusals_noted.add(problem)
        note(f"client: not using the engine: {problem}; running in-process")


def _log_hook(root: str, event: str, message: str) -> None:
    """The entry agents.hook_runner.log_hook_error writes, in the same hooks.log."""
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        hooks_log = os.path.join(location.state_dir(root), "hooks.log")
        fd = os.open(hooks_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            line = f"{stamp} {event or '?'} session=-: {message}; printed nothing"
            os.write(fd, (one_line(line) + "\n").encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def request(
    header: dict[str, Any], timeout: float = 5.0, path: str | None = None
) -> dict[str, Any] | None:
    """A control request (status, stop) to the engine (at `path` if given); None when none
    answers."""
    sock = _connect(path or location.socket_path(os.environ))
    if sock is None:
        return None
    try:
        sock.settimeout(timeout)
        send_message(sock, {"protocol": PROTOCOL, **header})
        answer, _ = recv_message(sock)
        return answer
    except (TimeoutError, ConnectionError, OSError, ValueError):
        return None
    finally:
        sock.close()
