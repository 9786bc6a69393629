"""mempalace's side of benchmarks.peers: file one store's notes as drawers, answer its queries.
Runs under the peer's own interpreter (it imports mempalace, never memctl).

python mempalace_side.py REQUEST.json ANSWER.json

The driver sets a fresh HOME and MEMPALACE_PALACE_PATH per store. The MiniLM files seeded in
the peer's venv (`seed_minilm.py --chroma`) are linked into that HOME where chroma's default
embedder looks for them, so nothing is downloaded. Every note goes in through the MCP tool
`tool_add_drawer` (source_file = its file stem), every query through `tool_search` with only
`query` and `limit` set; hits map back through `source_file` (long notes are split into
chunks, so a note can come back more than once: the first place counts).
"""

from __future__ import annotations

import json
import os
import sys
from importlib import metadata
from pathlib import Path

WING = "project"
ROOM = "notes"
OVERFETCH = 4  # Why: chunks of one note can fill the top k; ask for more, keep k distinct notes


def link_model() -> None:
    """HOME/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx -> the venv's seeded copy."""
    seeded = Path(sys.prefix) / "chroma-onnx"
    if not (seeded / "model.onnx").is_file():
        raise SystemExit(f"{seeded}: run seed_minilm.py --chroma {seeded} first")
    target = Path(os.environ["HOME"]) / ".cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.symlink_to(seeded, target_is_directory=True)


def main() -> int:
    request_path, answer_path = Path(sys.argv[1]), Path(sys.argv[2])
    request = json.loads(request_path.read_text(encoding="utf-8"))
    link_model()
    from mempalace.mcp_server import tool_add_drawer, tool_search

    notes = sorted(Path(request["notes"]).glob("*.md"))
    failed = []
    for note in notes:
        added = tool_add_drawer(WING, ROOM, note.read_text(encoding="utf-8"), source_file=note.stem)
        if not (isinstance(added, dict) and added.get("success", True)):
            failed.append([note.stem, added])
    k = int(request["k"])
    results: dict[str, list[str]] = {}
    for query in request["queries"]:
        found = tool_search(query["text"], limit=k * OVERFETCH)
        if "error" in found:
            raise SystemExit(f"tool_search failed on {query['id']}: {found['error']}")
        stems: list[str] = []
        for hit in found.get("results") or []:
            name = Path(str(hit.get("source_file") or "")).name.removesuffix(".md")
            if name and name not in stems:
                stems.append(name)
        results[query["id"]] = stems[:k]
    out = {
        "version": metadata.version("mempalace"),
        "python": sys.version.split()[0],
        "settings": {"notes": len(notes), "not_added": failed},
        "results": results,
    }
    answer_path.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
