"""Run a client's command line inside the user's engine, exactly as `memctl` would have.

The engine (memctl.server.daemon) hands each request here with the session of its store
(memctl.server.stores: the store opened once, its model settings); the request's store is
pinned (MEMCTL_STORE) so the command cannot reach another one. The command runs through the same
click command tree with the client's argv, working directory, environment and standard input;
its standard output and error are captured in the order written, through text streams with the
client's encodings that report the client's `isatty()`, and the rich consoles are rebuilt for
the client's terminal size. That is what makes the output byte-identical to the in-process run.
These are process-wide settings, so the server runs one command at a time.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
import threading
import traceback
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from memctl.server.client import CommandLine
from memctl.server.stores import StoreSession
from memctl.service import after_reply
from memctl.service.memories import write_queue
from memctl.service.retrieval import query_vectors, text_prefetch

# Commands that change no memory file before their first freshness check (see reads_first).
READS_FIRST = frozenset({"recall", "context"})
# Modules the hot commands import on first use; importing them at start-up keeps that cost off
# the first request.
WARM_MODULES = (
    "memctl.agents.claude_code_events",
    "memctl.agents.hook_runner",
    "memctl.agents.claude_code",
    "memctl.core.learning.quality",
    "memctl.service.memories.add",
    "memctl.service.memories.redaction",
    "memctl.service.retrieval.context",
    "memctl.service.retrieval.recall",
)


class _Tap(io.RawIOBase):
    """The bytes side of a captured stream: appends (stream number, bytes) to a shared list."""

    def __init__(self, number: int, chunks: list[tuple[int, bytes]], isatty: bool):
        super().__init__()
        self.number, self.chunks, self._isatty = number, chunks, isatty

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.chunks.append((self.number, bytes(data)))
        return len(data)

    def isatty(self) -> bool:
        return self._isatty


class _Input(io.BytesIO):
    def __init__(self, data: bytes, isatty: bool):
        super().__init__(data)
        self._isatty = isatty

    def isatty(self) -> bool:
        return self._isatty


def _text(raw: io.IOBase, facts: dict[str, Any], write_through: bool) -> io.TextIOWrapper:
    return io.TextIOWrapper(
        raw,  # type: ignore[arg-type]
        encoding=facts.get("encoding") or "utf-8",
        errors=facts.get("errors") or "strict",
        write_through=write_through,
    )


def _size(facts: dict[str, Any]) -> tuple[int, int]:
    return int(facts.get("width") or 80), int(facts.get("height") or 25)


def _replace_environ(wanted: dict[str, str]) -> None:
    """Make os.environ equal `wanted`, touching only what differs (each change is a putenv)."""
    for key in [key for key in os.environ if key not in wanted]:
        del os.environ[key]
    for key, value in wanted.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def merged(chunks: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Adjacent writes to one stream joined: fewer, larger blobs on the wire."""
    out: list[tuple[int, bytes]] = []
    for number, data in chunks:
        if out and out[-1][0] == number:
            out[-1] = (number, out[-1][1] + data)
        elif data:
            out.append((number, data))
    return out


@contextlib.contextmanager
def _as_client(
    request: dict[str, Any], stdin: bytes, chunks: list[tuple[int, bytes]]
) -> Iterator[None]:
    """The process as the client's: its working directory, environment, standard streams
    (captured into `chunks`), argv and terminal size; restored afterwards."""
    from memctl.cli import output

    streams = request.get("streams") or {}
    out_facts, err_facts = streams.get("stdout") or {}, streams.get("stderr") or {}
    in_facts = streams.get("stdin") or {}
    saved = (os.getcwd(), dict(os.environ), sys.stdin, sys.stdout, sys.stderr, sys.argv)
    try:
        os.chdir(request["cwd"])
        _replace_environ(request.get("env") or {})
        sys.stdin = _text(_Input(stdin, bool(in_facts.get("isatty"))), in_facts, False)
        sys.stdout = _text(_Tap(1, chunks, bool(out_facts.get("isatty"))), out_facts, True)
        sys.stderr = _text(_Tap(2, chunks, bool(err_facts.get("isatty"))), err_facts, True)
        sys.argv = [request.get("argv0") or "memctl", *request["argv"]]
        output.fit_consoles(_size(out_facts), _size(err_facts))
        yield
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    finally:
        cwd, environ, sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
        _replace_environ(environ)
        os.chdir(cwd)
        output.fit_consoles(None, None)


def recall_fields(request: dict[str, Any]) -> dict[str, Any] | None:
    """The recall request's fields as the client read them (memctl.server.typed), or None:
    not a recall the engine runs as a use-case."""
    typed = request.get("typed")
    if isinstance(typed, dict) and typed.get("use_case") == "recall":
        fields = typed.get("request")
        return fields if isinstance(fields, dict) else None
    return None


def query_to_embed(request: dict[str, Any], stdin: bytes) -> str | None:
    """The text the command will embed as its query, when it is plain from the request: the
    query of a typed `recall` (in every mode: recall weighs a hit's cosine in bm25 mode too)
    or the prompt of the prompt hook. A wrong guess only wastes an embedding."""
    fields = recall_fields(request)
    if fields is not None:
        query = fields.get("query")
        return query if isinstance(query, str) else None
    command = CommandLine(list(request.get("argv") or []))
    if command.name == "hook" and command.hook_event in ("user-prompt-submit", "UserPromptSubmit"):
        try:
            prompt = json.loads(stdin).get("prompt")
        except (ValueError, AttributeError):
            return None
        return prompt.strip()[:2000] if isinstance(prompt, str) else None
    return None


def recall_limit(request: dict[str, Any]) -> int | None:
    """recall's `-k`/`--limit` as the typed request gives it (None: not given)."""
    k = (recall_fields(request) or {}).get("k")
    return k if isinstance(k, int) else None


class ResidentCommands:
    """memctl.server.daemon.CommandRunner over the typer app of memctl.cli.app."""

    def __init__(self) -> None:
        self._command: Any = None
        self._pending: list[tuple[dict[str, Any], list[after_reply.Work]]] = []
        # Requests answered by use-case ("recall", "hook") or by replaying argv ("argv").
        self.counts: dict[str, int] = {"recall": 0, "hook": 0, "argv": 0}

    def prepare(self) -> None:
        import typer

        from memctl.cli.app import build_app

        self._command = typer.main.get_command(build_app())
        for name in WARM_MODULES:
            importlib.import_module(name)

    def run(
        self, request: dict[str, Any], stdin: bytes, session: StoreSession | None
    ) -> tuple[int, list[tuple[int, bytes]]]:
        chunks: list[tuple[int, bytes]] = []
        try:
            if session is not None:
                self._prefetch(request, stdin, session)
            typed = _typed(request, session)
            with _as_client(request, stdin, chunks), after_reply.collected() as pending:
                if typed is not None and session is not None:
                    self.counts[typed["use_case"]] += 1
                    code = run_typed(typed, request, session)
                else:
                    self.counts["argv"] += 1
                    code = self._invoke(request)
        finally:
            query_vectors.drop_prefetched()
            text_prefetch.drop_prefetched()
        self._pending.append((request, pending))
        return code, merged(chunks)

    def _prefetch(self, request: dict[str, Any], stdin: bytes, session: StoreSession) -> None:
        """Start embedding the request's query now: the model runs while the command parses its
        arguments and opens the store (~1.5 ms before it would ask, more on a busy machine).
        Only a guess: it never fails the request."""
        if session.embedding is None:
            return
        with contextlib.suppress(Exception):
            query = query_to_embed(request, stdin)
            if query and query.strip():
                query_vectors.prefetch_query_embedding(query, session.embedding)
                fields = recall_fields(request)
                if fields is not None and "mode" not in fields:
                    self._prefetch_text_search(session, query, recall_limit(request))

    def _prefetch_text_search(self, session: StoreSession, query: str, k: int | None) -> None:
        """Start the full-text search a default recall of `query` makes (see
        service.retrieval.text_prefetch): recall's pool of candidates, no filter."""
        from memctl.core.language.text_tokens import searchable_text
        from memctl.service.retrieval.indexing import open_index
        from memctl.service.retrieval.recall import build_filter
        from memctl.service.retrieval.text_prefetch import prefetch_text_search

        settings = session.store.settings.recall
        pool = max(settings.candidates, (k or settings.k) * 3)
        prefetch_text_search(
            open_index(session.store), searchable_text(query), pool, build_filter()
        )

    def batchable(self, request: dict[str, Any]) -> bool:
        """May this command run in a burst with others (see run_burst)?"""
        return CommandLine(list(request.get("argv") or [])).name == "add"

    def reads_first(self, request: dict[str, Any], session: StoreSession | None) -> bool:
        """recall and context write no memory file before their first sync (see
        memctl.server.daemon.CommandRunner.reads_first), unless a forget killed midway is
        there to finish first (cli.state.current_store)."""
        if session is None or CommandLine(list(request.get("argv") or [])).name not in READS_FIRST:
            return False
        from memctl.store.forget_journal import journal_path

        return not journal_path(session.store.state_dir).is_file()

    def run_burst(
        self, requests: list[tuple[dict[str, Any], bytes]], session: StoreSession | None
    ) -> list[tuple[int, list[tuple[int, bytes]]]]:
        """Run several `add` commands as one burst: what `run` would give for each in turn,
        with their writes saved together (memctl.service.memories.burst).

        Each command runs in a thread of its own, one at a time, as the client's process: up
        to the point where it hands its write over (or to its end); then the burst saves every
        write; then each command in turn finishes (prints its result) as the client's process
        again. Only one thread runs at any moment, so the process-wide settings hold."""
        from memctl.service.memories.burst import WriteBurst

        steps = [_Step(request, stdin) for request, stdin in requests]
        current: list[_Step] = []
        burst = WriteBurst(on_submit=lambda: current[-1].paused.set())
        saved: list[after_reply.Work] = []
        with write_queue.queued_writes(burst):
            try:
                for step in steps:
                    current.append(step)
                    queued = len(burst.queued)
                    with self._client(step):
                        step.start(self._invoke)
                        step.paused.wait()
                    if len(burst.queued) > queued:
                        step.write = burst.queued[-1]
                with after_reply.collected() as saved:
                    burst.save()
                for step in steps:
                    with self._client(step):
                        if step.write is not None:
                            burst.release(step.write)
                        step.thread.join()
            finally:
                burst.release()  # Why: no command thread is left waiting, whatever went wrong
        self._pending.append((steps[0].request, saved))
        return [(step.code, merged(step.chunks)) for step in steps]

    @contextlib.contextmanager
    def _client(self, step: _Step) -> Iterator[list[after_reply.Work]]:
        with _as_client(step.request, step.stdin, step.chunks), after_reply.collected() as pending:
            yield pending
        self._pending.append((step.request, pending))

    def after_reply(self) -> list[str]:
        """Run the work the last command left for after its reply (see service.after_reply), in
        its working directory and environment; what it writes is dropped. The problems met."""
        problems = []
        while self._pending:
            request, pending = self._pending.pop(0)
            for work in pending:
                try:
                    with _as_client(request, b"", []):
                        work()
                except BaseException as exc:  # noqa: BLE001 - the reply is out; log and go on
                    problems.append(f"{type(exc).__name__}: {exc}")
        return problems

    def _invoke(self, request: dict[str, Any]) -> int:
        from click.utils import _detect_program_name

        from memctl.cli import output
        from memctl.cli.app import exit_code

        main = SimpleNamespace(__package__=request.get("main_package"))
        prog = _detect_program_name(request.get("argv0") or "memctl", _main=main)  # type: ignore[arg-type]
        try:
            self._command.main(args=list(request["argv"]), prog_name=prog, standalone_mode=True)
            return 0
        except SystemExit as exc:
            return exit_code(exc)
        except Exception as error:  # noqa: BLE001 - what main() does with it (see cli.output)
            return output.unexpected_error(error, "--json" in request["argv"])
        except BaseException:  # noqa: BLE001 - what the interpreter would print, then exit 1
            traceback.print_exc()
            return 1


def _typed(request: dict[str, Any], session: StoreSession | None) -> dict[str, Any] | None:
    """The request's typed use-case when the engine can run it as such (see memctl.server.typed),
    else None: replay the command line."""
    typed = request.get("typed")
    if session is None or session.config_warnings or not isinstance(typed, dict):
        return None
    return typed if typed.get("use_case") in ("recall", "hook") else None


def run_typed(typed: dict[str, Any], request: dict[str, Any], session: StoreSession) -> int:
    """Run a typed request's use-case against the store the engine has open, printing what the
    command prints (its own render code); the exit code. Errors as the command reports them."""
    from click.exceptions import Exit as ClickExit
    from typer import Exit

    from memctl.cli.app import exit_code
    from memctl.cli.output import handles_errors, unexpected_error

    as_json = bool((typed.get("request") or {}).get("as_json"))
    try:
        if typed["use_case"] == "recall":
            handles_errors(_typed_recall)(typed["request"], session, as_json=as_json)
        else:
            _typed_hook(typed, request, session)
        return 0
    except (Exit, ClickExit) as exc:  # what click's main turns them into
        return exc.exit_code
    except SystemExit as exc:
        return exit_code(exc)
    except Exception as error:  # noqa: BLE001 - what main() does with it (see cli.output)
        return unexpected_error(error, as_json)


def _typed_recall(fields: dict[str, Any], session: StoreSession, as_json: bool) -> None:
    from memctl.cli.commands.recall import answer_recall

    answer_recall(fields, lambda only: _pinned_stores(session, only))


def _pinned_stores(session: StoreSession, store_only: bool) -> list[tuple[str, Any]]:
    """cli.state.current_stores, with the project store the engine has open."""
    from memctl.cli.state import finish_interrupted_forget
    from memctl.config import open_user_store

    project = session.store
    finish_interrupted_forget(project)
    user = None if store_only else open_user_store(besides=project)
    return [("project", project)] + ([("user", user)] if user is not None else [])


def _typed_hook(typed: dict[str, Any], request: dict[str, Any], session: StoreSession) -> None:
    from memctl.cli.commands.hook import answer_claude_code_hook

    explicit = CommandLine(list(request.get("argv") or [])).store
    answer_claude_code_hook(
        str(typed.get("event") or ""),
        explicit,
        bool(typed.get("plain")),
        bool(typed.get("foreground")),
        bool(typed.get("store_only")),
        store=session.store,
    )


class _Step:
    """One command of a burst, run in a thread the burst steps through (see run_burst)."""

    def __init__(self, request: dict[str, Any], stdin: bytes):
        self.request, self.stdin = request, stdin
        self.chunks: list[tuple[int, bytes]] = []
        self.paused = threading.Event()  # handed its write over, or ended
        self.write: Any = None  # its QueuedWrite, if it made one
        self.code = 1
        self.thread = threading.Thread(name="memctl-burst", daemon=True)

    def start(self, invoke: Any) -> None:
        def run() -> None:
            try:
                self.code = invoke(self.request)
            finally:
                self.paused.set()

        self.thread = threading.Thread(target=run, name="memctl-burst", daemon=True)
        self.thread.start()
