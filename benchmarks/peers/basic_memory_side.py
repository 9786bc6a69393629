"""basic-memory's side of benchmarks.peers: index one store, answer its queries. Runs under the
peer's own interpreter (it imports basic_memory, never memctl).

python basic_memory_side.py REQUEST.json ANSWER.json

The driver sets the environment: a fresh HOME, BASIC_MEMORY_HOME (the notes folder, the
default project), the seeded fastembed cache, HF_HUB_OFFLINE=1, and the settings it changed
from basic-memory's defaults. The notes are indexed with `basic-memory reindex` (its CLI, as a
user would), then each query goes through its MCP tool `search_notes` in-process with only
`query`, `page_size` and `output_format="json"` set, so the search type is its default.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path


def reindex() -> None:
    """`basic-memory reindex` on the default project (BASIC_MEMORY_HOME)."""
    command = Path(sys.executable).parent / "basic-memory"
    done = subprocess.run([str(command), "reindex"], capture_output=True, text=True, check=False)
    sys.stderr.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"basic-memory reindex failed ({done.returncode})")


def _tool(function):
    """The plain coroutine behind an MCP tool object (fastmcp wraps it in some versions)."""
    return getattr(function, "fn", function)


def _stems(response) -> list[str]:
    """The ranked results' file stems, in order, from the tool's JSON output."""
    if isinstance(response, str):
        raise SystemExit(f"search_notes answered with text, not JSON: {response[:400]}")
    stems = []
    for result in response.get("results") or []:
        path = result.get("file_path") or result.get("permalink") or ""
        stems.append(Path(path).name.removesuffix(".md"))
    return stems


def search_type(query: str) -> str:
    """The search type search_notes picks for `query` by default (for the report only)."""
    try:
        from basic_memory.mcp.tools import search

        return str(search._search_type_for(None, query, ["main"]))
    except Exception:  # Why: a private helper that may move; the figure is only a label
        return "unknown"


async def answer(queries: list[dict], k: int) -> tuple[dict, dict]:
    from basic_memory.mcp.tools.search import search_notes

    search = _tool(search_notes)
    results: dict[str, list[str]] = {}
    types: dict[str, int] = {}
    for query in queries:
        response = await search(query=query["text"], page_size=k, output_format="json")
        results[query["id"]] = _stems(response)[:k]
        kind = search_type(query["text"])
        types[kind] = types.get(kind, 0) + 1
    return results, types


def semantic_state() -> dict:
    """Whether vector search can run here, and the settings in force (for the report)."""
    from basic_memory.config import ConfigManager

    config = ConfigManager().config
    state = {
        "semantic_embedding_model": config.semantic_embedding_model,
        "semantic_min_similarity": config.semantic_min_similarity,
        "default_search_type": config.default_search_type,
    }
    try:
        import sqlite3

        connection = sqlite3.connect(":memory:")
        connection.enable_load_extension(True)
        import sqlite_vec

        sqlite_vec.load(connection)
        state["sqlite_vec"] = connection.execute("select vec_version()").fetchone()[0]
    except Exception as error:  # Why: report, do not hide, a host where vectors cannot run
        state["sqlite_vec"] = f"unavailable: {error}"
    return state


def main() -> int:
    request_path, answer_path = Path(sys.argv[1]), Path(sys.argv[2])
    request = json.loads(request_path.read_text(encoding="utf-8"))
    if Path(os.environ.get("BASIC_MEMORY_HOME", "")) != Path(request["notes"]):
        raise SystemExit("BASIC_MEMORY_HOME must be the request's notes folder")
    reindex()
    results, types = asyncio.run(answer(request["queries"], int(request["k"])))
    out = {
        "version": metadata.version("basic-memory"),
        "python": sys.version.split()[0],
        "settings": semantic_state(),
        "search_types": types,
        "results": results,
    }
    answer_path.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
