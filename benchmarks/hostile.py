"""Hostile stores and privacy: the cases benchmarks/hardening.py runs after its own.

Each case builds a fresh store, runs the real CLI in subprocesses (see hardening.Runner) and
returns one sentence. FAST_CASES are the ones CI runs (tests/test_hardening_fast.py, ~30 s);
the others need minutes (10,000-line import, 35 racing writers, repeated kill -9, git).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.redaction_cases import CLEAN_LINES, SECRET_CASES

if TYPE_CHECKING:
    from benchmarks.hardening import Done, Runner

GOOD = "Deploys use make release on Tuesdays."
MARKER = "quokkazebra"
TERMINAL = ("\x1b", "\x07", "\x9b")
COMMANDS: list[tuple[str, ...]] = [
    ("index",),
    ("list",),
    ("recall", "deploys"),
    ("context", "deploys"),
    ("show", "title1"),
    ("compact",),
    ("decay", "--apply"),
    ("export",),
    ("stats",),
]

# As root every folder is readable, so a folder without read permission is simulated: the
# child's os.scandir refuses `locked/` as the kernel would refuse another user.
LOCKED_WRAPPER = """
import os, sys
real = os.scandir
def scandir(path='.'):
    if os.fspath(path).rstrip('/').endswith('/locked'):
        raise PermissionError(13, 'Permission denied', os.fspath(path))
    return real(path)
os.scandir = scandir
from memctl.cli.app import main
sys.argv = ['memctl', *sys.argv[1:]]
main()
"""


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _memory(memory_id: str, body: str, extra: str = "") -> str:
    return f"---\nid: {memory_id}\ntitle: {body[:40]}\n{extra}---\n{body}\n"


def _run(r: Runner, project: Path, *args: str, timeout: float = 60) -> Done:
    code = LOCKED_WRAPPER if os.geteuid() == 0 else None
    return r.run(project, *args, timeout=timeout, code=code)


def _failed(done: Done) -> bool:
    return done.code != 0 or done.traceback is not None


def _crashed(done: Done) -> bool:
    """A traceback, a signal, or an error memctl did not expect; exit 1 with a reported
    problem (export naming the files it could not read) is an answer, not a crash."""
    return (
        done.traceback is not None
        or "failed unexpectedly" in done.stderr
        or done.code not in (0, 1)
    )


def _hashes(folder: Path) -> dict[str, str]:
    return {
        os.fsdecode(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink()
    }


def _outside(r: Runner, project: Path) -> set[str]:
    """Files under the scratch folder but outside this project's store."""
    store = project / ".memory"
    return {
        os.fsdecode(p)
        for p in r.scratch.rglob("*")
        if p.is_file() and store not in p.parents and p.parent != project
    }


KINDS = ("markup-type", "markup-id", "markup-title", "latin1", "esc", "locked", "yaml-tags")


def seed_hostile(project: Path, kinds: tuple[str, ...] = KINDS) -> list[Path]:
    """The hostile files (those of `kinds`) beside one good memory; their paths."""
    sem = project / ".memory/semantic"
    every = [
        _write(sem / "markup-type.md", '---\nid: markup1\ntype: "[/bold]"\n---\nType markup.\n'),
        _write(sem / "markup-id.md", '---\nid: "[/bold]"\n---\nId markup.\n'),
        _write(
            sem / "markup-title.md",
            '---\nid: title1\ntitle: "see [/etc/passwd] [link=https://evil.example]x[/link] '
            '\\e]52;c;aGVsbG8=\\a \\e[2J"\n---\n'
            "Title markup body \x1b]52;c;aGVsbG8=\x07 \x1b[31mred\x1b[0m \u009b2J deploys.\n",
        ),
        _write(sem / os.fsdecode(b"\xff\xfe-latin1.md"), _memory("latin1name", "Bad name.")),
        _write(sem / "esc\x1b[31m-name.md", _memory("escname1", "Escape in the name.")),
        _write(sem / "locked/inside.md", _memory("locked01", "Behind a locked folder.")),
        _write(sem / "binary.md", "---\nid: binary1\nblob: !!binary aGVsbG8=\n---\nBinary tag.\n"),
        _write(sem / "set.md", "---\nid: set00001\nitems: !!set {a, b}\n---\nSet tag.\n"),
        _write(
            sem / "merge.md",
            "---\nid: merge001\nbase: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n---\nMerge key.\n",
        ),
    ]
    kind_of = [*KINDS[:6], "yaml-tags", "yaml-tags", "yaml-tags"]
    hostile = []
    for path, kind in zip(every, kind_of, strict=True):
        if kind in kinds:
            hostile.append(path)
        elif kind == "locked":
            shutil.rmtree(path.parent)
        else:
            path.unlink()
    _write(sem / "good.md", _memory("good0001", GOOD))
    if "locked" in kinds:
        os.chmod(sem / "locked", 0)
    return hostile


def hostile_store(r: Runner, kinds: tuple[str, ...] = KINDS) -> str:
    """Every command on one store holding these hostile files at once."""
    project = r.store("hostile-" + "-".join(kinds)[:40])
    hostile = seed_hostile(project, kinds)
    before = {p: p.read_bytes() for p in hostile if "locked" not in p.parts}
    outside_before = _outside(r, project)
    crashed, hung, leaked, codes = [], [], [], []
    recalled = False
    for command in COMMANDS:
        if command[0] == "show" and "markup-title" not in kinds:
            command = ("show", "good0001")
        done = _run(r, project, *command)
        if done.code is None:
            hung.append(command[0])
        elif _crashed(done):
            crashed.append(f"{command[0]} ({done.summary()})")
        codes.append(f"{command[0]} {done.code}")
        if any(c in done.stdout + done.stderr for c in TERMINAL):
            leaked.append(command[0])
        if command[0] == "recall":
            recalled = "make release" in done.stdout
    if "locked" in kinds:
        os.chmod(project / ".memory/semantic/locked", 0o755)
    rewritten = [p.name for p, raw in before.items() if not p.exists() or p.read_bytes() != raw]
    outside = _outside(r, project) - outside_before
    parts = [
        f"{len(COMMANDS)} commands: {len(crashed)} crashed"
        + (f" ({'; '.join(crashed)[:160]})" if crashed else ""),
        "exits " + ", ".join(codes),
        f"{len(hung)} hung",
        f"escape bytes printed by {len(leaked)}" + (f" ({', '.join(leaked)})" if leaked else ""),
        f"{len(rewritten)} hostile files rewritten",
        f"{len(outside)} files written outside",
        "good memory recalled" if recalled else "good memory NOT recalled",
    ]
    return "; ".join(parts)


def config_not_yaml(kind: str) -> Callable[[Runner], str]:
    def run(r: Runner) -> str:
        from benchmarks.hardening import ALIAS_BOMB

        project = r.store("config-" + kind)
        config = project / ".memory/config.yaml"
        config.unlink()
        if kind == "fifo":
            os.mkfifo(config)
        else:
            config.write_text(ALIAS_BOMB + "\n", encoding="utf-8")
        done = r.run(project, "list", timeout=20)
        said = done.stderr.strip().splitlines()[-1:] or [""]
        return f"list {done.summary()}: {said[0][-70:]}"

    return run


def symlinked_folder(folder: str, command: tuple[str, ...]) -> Callable[[Runner], str]:
    """`.memory/<folder>` a symlink to a folder outside the store, then `command`."""

    def run(r: Runner) -> str:
        project = r.store("link-" + folder.strip("."))
        outside = r.scratch / f"outside-{folder.strip('.')}"
        outside.mkdir()
        target = project / ".memory" / folder
        if target.exists():
            shutil.rmtree(target)
        target.symlink_to(outside)
        for n in (1, 2, 3):
            _write(
                project / f".memory/episodic/ep{n}.md",
                f"---\nid: ep0link0{n}\ntype: episodic\ntitle: Payments worker incident {n}\n"
                f"target: payments-worker\ncreated: 2020-03-0{n}\nimportance: 0.05\n---\n"
                f"## Summary\nThe payments worker ran out of memory.\n",
            )
        done = r.run(project, *command)
        written = [p.name for p in outside.rglob("*") if p.is_file()]
        said = [line for line in done.stderr.splitlines() if "refused" in line][:1]
        return f"{' '.join(command)} {done.summary()}; {len(written)} files written outside" + (
            f" ({said[0][-60:]})" if said else ""
        )

    return run


def hook_ingest_any_file(r: Runner) -> str:
    project = r.store("ingest")
    victim = _write(r.scratch / "precious.txt", "my notes\n")
    done = r.run(project, "hook", "ingest", str(victim))
    kept = victim.exists() and victim.read_text() == "my notes\n"
    state = "left as it was" if kept else "renamed or deleted"
    return f"hook ingest {done.summary()}; the file is {state}"


def forget_goal(r: Runner) -> str:
    project = r.store("goal")
    r.run(project, "task", "start", "Upgrade Postgres", "--plan", "dump")
    forgot = r.run(project, "forget", "goal", "--yes")
    shown = r.run(project, "task", "show")
    return f"forget goal {forgot.summary()}; task show {shown.summary()}"


def index_is_a_file(r: Runner) -> str:
    project = r.store("index-file")
    _write(project / ".memory/semantic/good.md", _memory("good0001", GOOD))
    assert r.run(project, "index").code == 0
    shutil.rmtree(project / ".memory/.index")
    _write(project / ".memory/.index", "not a folder\n")
    done = r.run(project, "recall", "deploys")
    found = " (answers)" if "make release" in done.stdout else ""
    return f"next recall {done.summary()}{found}"


def lenient_values(r: Runner) -> str:
    project = r.store("lenient")
    _write(
        project / ".memory/semantic/lenient.md",
        "---\nid: 12345\ntitle: One\ntitle: Two\ncreated: yesterday\nexpires: garbage\n"
        'pinned: "false"\nrelations:\n  - {type: related, target: semantic/x.md}\n'
        "updated: 2999-01-01\n---\nLenient values.\n",
    )
    index = r.run(project, "index")
    fields = ["'id'", "'title'", "'created'", "'expires'", "'pinned'", "relation", "'updated'"]
    named = [f for f in fields if f in index.stderr]
    strict = r.run(project, "index", "--strict")
    return (
        f"index {index.summary()} warning on {len(named)} of {len(fields)} fields; "
        f"index --strict exit {strict.code}"
    )


def export_unreadable(r: Runner) -> str:
    project = r.store("export-unreadable")
    _write(project / ".memory/semantic/good.md", _memory("good0001", GOOD))
    _write(project / ".memory/semantic/broken.md", "---\nid: [broken\n---\nx\n")
    _write(project / ".memory/semantic/locked/in.md", _memory("locked01", "Locked away."))
    os.chmod(project / ".memory/semantic/locked", 0)
    done = _run(r, project, "export")
    os.chmod(project / ".memory/semantic/locked", 0o755)
    named = sum(name in done.stderr for name in ("broken.md", "locked"))
    return f"export exit {done.code}; {named} of 2 unreadable places named on stderr"


FAST_CASES: list[tuple[str, Callable[[Runner], str]]] = [
    ("hostile store, every command", hostile_store),
    ("config.yaml a FIFO, list", config_not_yaml("fifo")),
    ("config.yaml an alias bomb, list", config_not_yaml("bomb")),
    ("hook ingest given any file", hook_ingest_any_file),
    ("forget goal (no such memory)", forget_goal),
]

# --- slow cases ---------------------------------------------------------------------------------


def _git(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(project),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    return subprocess.run(
        ["git", *args], cwd=project, env=env, capture_output=True, text=True, check=False
    )


def _stageable_with(project: Path, word: str) -> list[str]:
    """Files `git add -A` would stage that hold `word`."""
    listed = _git(project, "add", "-A", "-n").stdout.splitlines()
    paths = [line.split("'", 2)[1] for line in listed if line.startswith("add '")]
    return [p for p in paths if word in (project / p).read_text(errors="replace")]


def private_derivations(r: Runner) -> str:
    project = r.store("private-derived")
    _git(project, "init", "-q")
    for n in (1, 2, 3):
        _write(
            project / f".memory/private/episodic/ep{n}.md",
            f"---\nid: ep0priv0{n}\ntype: episodic\ntitle: Visit {n} to the {MARKER} clinic\n"
            f"target: {MARKER}-clinic\ncreated: 2025-03-0{n}\n---\n## Summary\n"
            f"I went to the {MARKER} clinic about my back.\n",
        )
    _write(
        project / ".memory/semantic/old-private.md",
        f"---\nid: oldpriv1\ntitle: My {MARKER} locker code\nscope: private\n"
        f"created: 2020-01-01\nimportance: 0.05\n---\nMy {MARKER} locker code is in my wallet.\n",
    )
    _write(
        project / ".memory/private/semantic/old.md",
        f"---\nid: oldpriv2\ntitle: My {MARKER} bike\ncreated: 2020-01-01\n"
        f"importance: 0.05\n---\nMy {MARKER} bike lock is blue.\n",
    )
    compact = r.run(project, "compact")
    decay = r.run(project, "decay", "--apply")
    export = r.run(project, "export", "--format", "agents-md")
    leaked = _stageable_with(project, MARKER)
    archived = sorted(
        p.relative_to(project / ".memory/archive").as_posix()
        for p in (project / ".memory/archive").rglob("*.md")
    )
    _write(
        project / ".memory/semantic/fresh-private.md",
        f"---\nid: freshpriv\nscope: private\n---\nMy {MARKER} diary.\n",
    )
    _git(project, "add", ".memory/semantic/fresh-private.md")
    hook = r.run(project, "hook", "git", "pre-commit")
    return (
        f"compact {compact.summary()}, decay --apply {decay.summary()}, export {export.summary()}; "
        f"{len(leaked)} stageable files hold the private text"
        + (f" ({', '.join(leaked)})" if leaked else "")
        + f"; archived: {', '.join(archived) or 'none'}"
        + f"; pre-commit on a staged scope: private file: exit {hook.code}"
    )


def forget_short_term(r: Runner) -> str:
    project = r.store("forget-short")
    r.run(project, "session", "add", "-S", "s1", f"My {MARKER} PIN is on the fridge note.")
    r.run(project, "session", "add", "-S", "s1", "-r", "assistant", "Noted.")
    r.run(project, "task", "start", "Tidy the flat", "--plan", "kitchen")
    r.run(project, "task", "note", "where", f"the {MARKER} PIN note is on the fridge")
    r.run(project, "add", f"My {MARKER} PIN is on the fridge note.")
    done = r.run(project, "forget", "--query", MARKER, "--yes")
    left = [
        os.fsdecode(p.relative_to(project))
        for p in (project / ".memory").rglob("*")
        if p.is_file() and MARKER.encode() in p.read_bytes()
    ]
    task = r.run(project, "task", "show")
    return (
        f"forget {done.summary()}; text left in {len(left)} files"
        + (f" ({', '.join(left)[:120]})" if left else "")
        + f"; task show {task.summary()}"
    )


def redaction_cli(r: Runner) -> str:
    project = r.store("redaction-cli")
    text = "\n".join(t for t, _ in SECRET_CASES.values()) + "\n" + "\n".join(CLEAN_LINES)
    source = _write(r.scratch / "notes.md", "".join(f"- {line}\n" for line in text.splitlines()))
    r.run(project, "import", str(source), "--format", "markdown")
    files = "\n".join(p.read_text() for p in (project / ".memory").rglob("*.md"))
    reached = [name for name, (_, leak) in SECRET_CASES.items() if leak in files]
    return f"{len(SECRET_CASES) - len(reached)} of {len(SECRET_CASES)} secrets kept off disk" + (
        f" (reached disk: {', '.join(reached)})" if reached else ""
    )


def import_many(count: int) -> Callable[[Runner], str]:
    def run(r: Runner) -> str:
        project = r.store(f"import-{count}")
        source = r.scratch / f"many-{count}.jsonl"
        with source.open("w", encoding="utf-8") as out:
            for n in range(count):
                body = (
                    f"Service svc{n:05d} listens on port {10000 + n} and is owned by team{n % 97}."
                )
                out.write(json.dumps({"body": body, "type": "semantic"}) + "\n")
        done = r.run(project, "import", str(source), timeout=1800)
        files = len(list((project / ".memory/semantic").glob("*.md")))
        stats = r.run(project, "stats", "--json", timeout=600)
        indexed = json.loads(stats.stdout)["memories"] if stats.code == 0 else None
        return f"import {done.summary()}: {files} files, {indexed} memories of {count} lines"

    return run


HAND_EDITOR = """
import os, sys, time
path, count = sys.argv[1], int(sys.argv[2])
for n in range(count):
    raw = open(path, encoding="utf-8").read()
    tmp = path + ".hand"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(raw.rstrip("\\n") + f"\\nhand edit {n:03d}\\n")
    os.replace(tmp, path)
    time.sleep(0.05)
"""


def merge_race(edits: int) -> Callable[[Runner], str]:
    """`edits` hand edits (atomic saves, as editors do) racing `edits` adds that merge into
    the same file; how many hand edits survive."""

    def run(r: Runner) -> str:
        project = r.store("race")
        text = "The billing service retries failed charges three times before alerting."
        assert r.run(project, "add", text).code == 0
        (path,) = (project / ".memory/semantic").glob("*.md")
        env = r.env()
        editor = subprocess.Popen(
            [sys.executable, "-c", HAND_EDITOR, str(path), str(edits)], env=env
        )
        errors: list[str] = []

        def add(n: int) -> None:
            done = r.run(project, "add", text)
            if done.code != 0:
                errors.append(done.summary())

        threads = [threading.Thread(target=add, args=(n,)) for n in range(edits)]
        for n, thread in enumerate(threads):
            thread.start()
            if n % 4 == 3:
                for earlier in threads[n - 3 : n + 1]:
                    earlier.join()
        for thread in threads:
            thread.join()
        editor.wait()
        final = path.read_text(encoding="utf-8")
        lost = [n for n in range(edits) if f"hand edit {n:03d}" not in final]
        return f"{len(lost)} of {edits} hand edits lost; {len(errors)} adds failed"

    return run


RACE_IN_PROCESS = """
import os, sys, threading
from pathlib import Path
from memctl import service
from memctl.service.memories.add import rewrite_memory
store = service.init_store(Path(sys.argv[1]))
added = service.add_memory(store, "The billing service retries failed charges.", sync=False, dedup=False)
relpath = added.path.relative_to(store.root).as_posix()
count = int(sys.argv[2])
def hand_edits():
    for n in range(count):
        raw = added.path.read_text(encoding="utf-8")
        tmp = added.path.with_name(".hand.tmp")
        tmp.write_text(raw.rstrip("\\n") + f"\\nhand edit {n:03d}\\n", encoding="utf-8")
        os.replace(tmp, added.path)
def merge():
    def change(current):
        current.extra["mentions"] = int(current.extra.get("mentions", 0)) + 1
        return current, "merged"
    rewrite_memory(store, added.memory.id, relpath, change)
threads = [threading.Thread(target=hand_edits)] + [threading.Thread(target=merge) for _ in range(count)]
for t in threads: t.start()
for t in threads: t.join()
final = added.path.read_text(encoding="utf-8")
print(sum(f"hand edit {n:03d}" not in final for n in range(count)))
"""


def merge_race_in_process(edits: int, trials: int) -> Callable[[Runner], str]:
    """The same race without process start-up in between: threads merging through
    rewrite_memory while one thread saves hand edits, `trials` times."""

    def run(r: Runner) -> str:
        lost = []
        for trial in range(trials):
            folder = r.scratch / f"race-threads-{trial}"
            folder.mkdir()
            done = r.run(folder, str(folder), str(edits), code=RACE_IN_PROCESS, timeout=600)
            if done.code != 0:
                return f"trial {trial}: {done.summary()}"
            lost.append(int(done.stdout.strip().splitlines()[-1]))
        return f"{sum(lost)} of {edits * trials} hand edits lost ({', '.join(map(str, lost))})"

    return run


def killed_rebuild(kills: int) -> Callable[[Runner], str]:
    def run(r: Runner) -> str:
        project = r.store("killed-rebuild")
        for n in range(60):
            _write(
                project / f".memory/semantic/m{n:02d}.md",
                _memory(f"mem{n:05d}", f"Service svc{n} listens on port {9000 + n}."),
            )
        assert r.run(project, "index").code == 0
        started = time.monotonic()
        r.run(project, "index", "--rebuild")
        length = time.monotonic() - started
        rng = random.Random(34)
        failed, missing = 0, 0
        for _ in range(kills):
            child = subprocess.Popen(
                [sys.executable, "-m", "memctl", "index", "--rebuild"],
                cwd=project,
                env=r.env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(rng.uniform(0.2, length))
            child.send_signal(signal.SIGKILL)
            child.wait()
            done = r.run(project, "recall", "port 9042")
            failed += _failed(done)
            missing += "svc42" not in done.stdout
        return f"{kills} kills: {failed} failed next commands, {missing} missed the memory"

    return run


def corrupted_index(seeds: int) -> Callable[[Runner], str]:
    def run(r: Runner) -> str:
        project = r.store("corrupted")
        for n in range(20):
            _write(
                project / f".memory/semantic/m{n:02d}.md",
                _memory(f"mem{n:05d}", f"Service svc{n} listens on port {9000 + n}."),
            )
        assert r.run(project, "index").code == 0
        good = project.parent / "index-good"
        shutil.copytree(project / ".memory/.index", good)
        failed, missing = 0, 0
        for seed in range(seeds):
            shutil.rmtree(project / ".memory/.index")
            shutil.copytree(good, project / ".memory/.index")
            rng = random.Random(seed)
            for data in (project / ".memory/.index/memories.lance/data").glob("*.lance"):
                raw = bytearray(data.read_bytes())
                for _ in range(64):
                    raw[rng.randrange(len(raw))] = rng.randrange(256)
                data.write_bytes(bytes(raw))
            done = r.run(project, "recall", "port 9012")
            failed += _failed(done)
            missing += "svc12" not in done.stdout
        return f"{seeds} damaged copies: {failed} failed recalls, {missing} missed the memory"

    return run


def one_kind(kind: str) -> Callable[[Runner], str]:
    return lambda r: hostile_store(r, (kind,))


SLOW_CASES: list[tuple[str, Callable[[Runner], str]]] = [
    *((f"hostile store, only {kind}", one_kind(kind)) for kind in KINDS),
    ("knowledge/ symlinked outside, compact", symlinked_folder("knowledge", ("compact",))),
    (".index a plain file, recall", index_is_a_file),
    ("lenient values, index and --strict", lenient_values),
    ("export with unreadable files", export_unreadable),
    ("private episodes, compact/decay/export, git", private_derivations),
    ("forget --query: sessions and task", forget_short_term),
    ("redaction: new secret cases via import", redaction_cli),
    ("import 10,000 lines", import_many(10_000)),
    ("35 hand edits racing 35 merging adds", merge_race(35)),
    ("35 hand edits racing 35 merges in threads x3", merge_race_in_process(35, 3)),
    ("kill -9 during index --rebuild x20, recall", killed_rebuild(20)),
    ("random bytes in index data x8, recall", corrupted_index(8)),
    (".state/ symlinked outside, add", symlinked_folder(".state", ("add", GOOD))),
    (
        "archive/ symlinked outside, decay --apply",
        symlinked_folder("archive", ("decay", "--apply")),
    ),
]
