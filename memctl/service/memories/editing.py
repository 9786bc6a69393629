"""`memctl edit`: a hand edit checked before it replaces the memory file.

The person edits a working copy (in the store's state folder, so a private memory never leaves
the store); the copy replaces the file only when the store could read it back (front matter,
UTF-8, limits.max_file_bytes). A broken file can be opened too, so it can be fixed. Like
`crontab -e` or `visudo`, a save that cannot be read is not written: the editor reopens with
the problem on top, or, with no terminal to reopen it in, the old file stays and the edit is
kept beside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memctl.config import ARCHIVE_DIRNAME, Store
from memctl.core.errors import InvalidMemoryFile, MemoryNotFound
from memctl.core.files.input_limits import InputRefused, check_file_size
from memctl.service.provenance import note_written_memories
from memctl.store.files import (
    check_id,
    max_file_bytes,
    paths_with_id,
    read_memory,
    replace_if_unchanged,
)

# Lines memctl puts on top of a working copy it could not save; taken out again before checking.
NOTE_PREFIX = "# memctl: "
EDITS_DIRNAME = "edits"


@dataclass(frozen=True)
class EditTarget:
    store: Store
    relpath: str

    @property
    def path(self) -> Path:
        return self.store.root / self.relpath


def edit_target(stores: list[Store], memory_id: str) -> EditTarget:
    """The file of `memory_id` in the first store that holds it, broken or not (a file whose
    name carries the id counts even when it cannot be parsed); the live copy before an
    archived one. MemoryNotFound otherwise."""
    check_id(memory_id)
    for store in stores:
        found = paths_with_id(store.root, memory_id, max_bytes=max_file_bytes(store))
        if found:
            live = [p for p in found if not p.startswith(ARCHIVE_DIRNAME + "/")]
            return EditTarget(store, (live or found)[0])
    raise MemoryNotFound(memory_id)


def working_copy(target: EditTarget, memory_id: str) -> Path:
    """Where the person's edit is kept while it is checked (and after, if it cannot be saved)."""
    folder = target.store.state_dir / EDITS_DIRNAME
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{memory_id}.md"


def write_working_copy(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def without_notes(data: bytes) -> bytes:
    """The edit without the lines memctl put on top of it."""
    lines = data.split(b"\n")
    start = 0
    while start < len(lines) and lines[start].startswith(NOTE_PREFIX.encode()):
        start += 1
    return b"\n".join(lines[start:])


def with_note_on_top(data: bytes, problem: str) -> bytes:
    """The edit with why it was not saved on top, as lines the next check takes out again."""
    notes = [
        f"{NOTE_PREFIX}NOT SAVED: {problem}",
        f"{NOTE_PREFIX}Lines count from the --- below. Fix it and save to try again; save an "
        "empty file to give up and keep the old one. These lines are taken out.",
    ]
    return "\n".join(" ".join(line.split()) for line in notes).encode() + b"\n" + data


def edit_problem(target: EditTarget, data: bytes) -> str | None:
    """Why the store could not read `data` back as this memory file (line numbers as in the
    saved file), or None when it can."""
    try:
        check_file_size(data, max_file_bytes(target.store), "The edited memory")
        read_memory(target.store.root, target.relpath, data)
    except InputRefused as refused:
        return str(refused)
    except InvalidMemoryFile as invalid:
        return f"line {invalid.line}: {invalid.problem}"
    return None


def save_edit(target: EditTarget, data: bytes, original: bytes) -> bool:
    """Replace the file with the checked edit; False (nothing written) when the file changed
    on disk since the editor opened it.

    Why record it: the person wrote these bytes here, through memctl, so the text is vouched for
    like an `add` (service.provenance); it keeps the least trusted of its origins, so editing a
    memory that came through git does not launder it. A file that was broken before is not
    vouched for: nobody knows whose text it held."""
    if not replace_if_unchanged(target.path, data, original):
        return False
    try:
        before = read_memory(target.store.root, target.relpath, original)
    except (InvalidMemoryFile, InputRefused):
        return True
    note_written_memories(
        target.store, [(read_memory(target.store.root, target.relpath, data), before)]
    )
    return True
