"""A git merge driver for memory files, so two branches editing one memory merge cleanly.

Git runs `memctl hook git merge %O %A %B %L %P` for every path `.gitattributes` marks
`merge=memctl`. The front matter is merged by memctl's rules (core.files.memory_merge); the body by
git's own three-way text merge (`git merge-file`). A body edited in the same place on both sides
keeps git's standard conflict markers, the merge stops as any conflicted merge does, and memctl
reports the file (`path:line: merge-conflict marker`) until it is resolved. A file that is not a
memory with front matter on both sides (a README, or a side that no longer parses) gets git's
plain text merge.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from memctl.core.errors import InvalidMemoryFile, MemctlError
from memctl.core.files.frontmatter import parse_memory, render_memory
from memctl.core.files.memory import Memory
from memctl.core.files.memory_merge import merge_memories
from memctl.store.files import atomic_write, default_id, default_type

DRIVER = "memctl"
DRIVER_NAME = "memctl: merge memory files field by field"
ATTRIBUTES_FILE = ".gitattributes"
ATTRIBUTES_NOTE = "# memctl: memory files merge field by field (memctl hooks install git)"
LABELS = ("ours", "base", "theirs")


# --- the driver ------------------------------------------------------------------------------


def merge_files(base: Path, ours: Path, theirs: Path, shown: str, marker_size: int = 7) -> int:
    """Merge into `ours` (git's %A) what `theirs` changed since `base`. Returns the number of
    conflicts left in the file: 0 for a clean merge."""
    raw = [path.read_bytes() for path in (base, ours, theirs)]
    try:
        memories = [_parse(shown, data) for data in raw]
    except InvalidMemoryFile:
        memories = [None, None, None]
    base_memory, ours_memory, theirs_memory = memories
    if ours_memory is None or theirs_memory is None:
        return _merge_whole_files(base, ours, theirs, marker_size)
    body, conflicts = merge_text(
        base_memory.body if base_memory else "", ours_memory.body, theirs_memory.body, marker_size
    )
    merged = merge_memories(base_memory, ours_memory, theirs_memory, body)
    atomic_write(ours, render_memory(merged, full=False))
    return conflicts


def _parse(shown: str, raw: bytes) -> Memory | None:
    """The memory in these bytes; None for an empty file (no common ancestor) or a file
    without front matter (not one of memctl's memories)."""
    if not raw.lstrip(b"\xef\xbb\xbf").startswith(b"---"):
        return None
    return parse_memory(shown, raw, default_id(shown), default_type(shown))


def merge_text(base: str, ours: str, theirs: str, marker_size: int = 7) -> tuple[str, int]:
    """git's three-way merge of three texts: (result, number of conflicts)."""
    with tempfile.TemporaryDirectory(prefix="memctl-merge-") as folder:
        paths = []
        for name, text in zip(LABELS, (base, ours, theirs), strict=True):
            path = Path(folder) / name
            path.write_text(_lines(text), encoding="utf-8")
            paths.append(path)
        done = _run_merge_file(
            ["-p", *_label_args(), f"--marker-size={marker_size}"],
            [paths[1], paths[0], paths[2]],
        )
        return done.stdout.decode("utf-8"), done.returncode


def _merge_whole_files(base: Path, ours: Path, theirs: Path, marker_size: int) -> int:
    """git's plain text merge, written into `ours`, as if no driver were set."""
    done = _run_merge_file([*_label_args(), f"--marker-size={marker_size}"], [ours, base, theirs])
    return done.returncode


def _label_args() -> list[str]:
    """Labels for the conflict markers, in git merge-file's order: current, base, other."""
    return ["-L", LABELS[0], "-L", LABELS[1], "-L", LABELS[2]]


def _run_merge_file(options: list[str], files: list[Path]) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(
            ["git", "merge-file", *options, *map(str, files)], capture_output=True, check=False
        )
    except FileNotFoundError:
        raise MemctlError("git is not installed; cannot merge memory files") from None
    if done.returncode < 0 or done.returncode > 127:
        raise MemctlError(f"git merge-file failed: {done.stderr.decode(errors='replace').strip()}")
    return done


def _lines(text: str) -> str:
    """A body as lines, each ending in a newline (what a line-based merge needs)."""
    stripped = text.strip("\n")
    return stripped + "\n" if stripped else ""


# --- installing it ---------------------------------------------------------------------------


@dataclass
class MergeDriverResult:
    attributes: Path
    pattern: str
    attributes_written: bool
    config_written: bool


def driver_command(command_prefix: str = "memctl") -> str:
    return f"{command_prefix} hook git merge %O %A %B %L %P"


def attributes_line(store_dir: str) -> str:
    """The `.gitattributes` line for a store at `store_dir` (relative to the repository root)."""
    return f"{store_dir.strip('/') or '.'}/**/*.md merge={DRIVER}"


def install_merge_driver(
    repo_root: Path, store_dir: str, command_prefix: str = "memctl"
) -> MergeDriverResult:
    """Register the driver in the repository's config and mark the store's files for it in
    `.gitattributes` (committed, so every clone that installs the driver uses it)."""
    line = attributes_line(store_dir)
    attributes = repo_root / ATTRIBUTES_FILE
    existing = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    attributes_written = line not in existing.splitlines()
    if attributes_written:
        separator = "" if not existing or existing.endswith("\n") else "\n"
        atomic_write(attributes, f"{existing}{separator}{ATTRIBUTES_NOTE}\n{line}\n".encode())
    wanted = {"name": DRIVER_NAME, "driver": driver_command(command_prefix)}
    config_written = False
    for key, value in wanted.items():
        if _git_config(repo_root, "--get", f"merge.{DRIVER}.{key}") != value:
            _git_config(repo_root, f"merge.{DRIVER}.{key}", value)
            config_written = True
    return MergeDriverResult(attributes, line, attributes_written, config_written)


def uninstall_merge_driver(repo_root: Path) -> bool:
    """Remove the driver's config and memctl's lines from `.gitattributes`; True if any were."""
    removed = _git_config(repo_root, "--get", f"merge.{DRIVER}.driver") is not None
    if removed:
        _git_config(repo_root, "--remove-section", f"merge.{DRIVER}")
    attributes = repo_root / ATTRIBUTES_FILE
    if attributes.exists():
        lines = attributes.read_text(encoding="utf-8").splitlines()
        kept = [
            line
            for line in lines
            if line != ATTRIBUTES_NOTE and not line.endswith(f" merge={DRIVER}")
        ]
        if kept != lines:
            removed = True
            if kept:
                atomic_write(attributes, ("\n".join(kept) + "\n").encode("utf-8"))
            else:
                attributes.unlink()
    return removed


def merge_driver_status(repo_root: Path) -> str:
    """'memctl' when both the config and an attributes line are there, 'partial', or 'absent'."""
    configured = _git_config(repo_root, "--get", f"merge.{DRIVER}.driver") is not None
    attributes = repo_root / ATTRIBUTES_FILE
    marked = attributes.exists() and any(
        line.endswith(f" merge={DRIVER}")
        for line in attributes.read_text(encoding="utf-8").splitlines()
    )
    if configured and marked:
        return "memctl"
    return "partial" if configured or marked else "absent"


def _git_config(repo_root: Path, *args: str) -> str | None:
    """`git config --local ...`; the value printed, or None when git says there is none."""
    try:
        done = subprocess.run(
            ["git", "config", "--local", *args],
            cwd=repo_root,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise MemctlError("git is not installed") from None
    if done.returncode == 0:
        return done.stdout.strip()
    if args[0] in ("--get", "--remove-section") and done.returncode in (1, 128):
        return None
    raise MemctlError(f"git config {' '.join(args)} failed: {done.stderr.strip()}")
