"""What crosses the process boundary to a peer: its notes on disk, the queries, the ranked files.

A peer sees each memory as one Markdown file with a neutral name (`m001.md`, in the data's
order), never memctl's id: basic-memory takes a note's title from its file name, so an id such
as `ghmcp-018` would hand it the project's name as a free keyword. The request is one JSON file
the peer-side script reads; its answer maps each query id to the file stems it ranked, which
`ids_from_stems` turns back into memory ids.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

NOTES = "notes"


@dataclass(frozen=True)
class ExportedStore:
    """One project's notes folder, and which memory id each file stem stands for."""

    name: str
    notes: Path
    id_of: Mapping[str, str]  # file stem (m001) -> memory id


def stem(position: int) -> str:
    """The neutral file stem of the memory at `position` (0-based) in its store."""
    return f"m{position + 1:03d}"


def write_notes(folder: Path, memories: Sequence[Mapping]) -> dict[str, str]:
    """One `<stem>.md` per memory holding its text alone; returns stem -> memory id."""
    folder.mkdir(parents=True, exist_ok=True)
    id_of: dict[str, str] = {}
    for position, memory in enumerate(memories):
        name = stem(position)
        text = str(memory["text"]).rstrip("\n") + "\n"
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
        id_of[name] = memory["id"]
    return id_of


def export_store(root: Path, name: str, memories: Sequence[Mapping]) -> ExportedStore:
    """The project's memories as notes under root/name/notes (the peer's home folder for it)."""
    notes = root / name / NOTES
    return ExportedStore(name, notes, write_notes(notes, memories))


def write_request(path: Path, store: ExportedStore, queries: Sequence[Mapping], k: int) -> None:
    """The peer's work for one store: its notes folder, the depth, the queries ({"id", "text"})."""
    request = {
        "store": store.name,
        "notes": str(store.notes),
        "k": k,
        "queries": [{"id": q["id"], "text": q["text"]} for q in queries],
    }
    path.write_text(json.dumps(request, ensure_ascii=False, indent=1), encoding="utf-8")


def ids_from_stems(ranked: Sequence[str], id_of: Mapping[str, str]) -> list[str]:
    """The peer's ranked file stems (or paths) as memory ids, in order, each once; a name that
    is none of the exported notes is dropped (a peer may return folders or its own files)."""
    ids: list[str] = []
    for entry in ranked:
        name = Path(str(entry)).name.removesuffix(".md")
        memory_id = id_of.get(name)
        if memory_id is not None and memory_id not in ids:
            ids.append(memory_id)
    return ids
