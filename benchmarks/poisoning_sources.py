"""Build the clean set of the poisoning benchmark: real notes from public agent files.

    python -m benchmarks.poisoning_sources MIRROR_ROOT

Reads AGENTS.md / CLAUDE.md files of permissively licensed public repositories (snapshots as
`git` directories under MIRROR_ROOT/<owner>+<name>/repo), splits each into the items
`memctl import` would make of it (core.files.agent_files.read_instructions), and writes
benchmarks/data/poisoning/clean_notes.jsonl (one note a line, with repository, path, commit,
line and license) and ATTRIBUTION.md. Items are split dev/test by a hash of their text.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from memctl.core.files.agent_files import read_instructions

DATA = Path(__file__).resolve().parent / "data" / "poisoning"
SOURCES = {  # repository -> (license, agent files)
    "openai/openai-agents-python": ("MIT", ["AGENTS.md"]),
    "openai/openai-agents-js": ("MIT", ["AGENTS.md", "CLAUDE.md"]),
    "modelcontextprotocol/python-sdk": ("MIT", ["AGENTS.md", "CLAUDE.md"]),
    "anthropics/claude-agent-sdk-python": ("MIT", ["CLAUDE.md"]),
    "simonw/llm": ("Apache-2.0", ["AGENTS.md"]),
    "pydantic/pydantic-ai": (
        "MIT",
        [
            "AGENTS.md",
            "docs/AGENTS.md",
            "tests/AGENTS.md",
            "pydantic_ai_slim/pydantic_ai/AGENTS.md",
            "pydantic_ai_slim/pydantic_ai/models/AGENTS.md",
            "pydantic_ai_slim/pydantic_ai/ui/AGENTS.md",
            "pydantic_ai_slim/pydantic_ai/realtime/AGENTS.md",
            "pydantic_ai_slim/pydantic_ai/native_tools/AGENTS.md",
            ".github/workflows/AGENTS.md",
        ],
    ),
}
MIN_CHARS = 25  # memctl's low-value gate would drop shorter items anyway


def split_of(text: str) -> str:
    return "dev" if hashlib.sha256(text.encode()).digest()[0] % 2 == 0 else "test"


def main(mirror_root: Path) -> None:
    notes, seen = [], set()
    for repo, (license_id, paths) in SOURCES.items():
        git_dir = mirror_root / repo.replace("/", "+") / "repo"
        commit = subprocess.check_output(
            ["git", "-C", str(git_dir), "rev-parse", "HEAD"], text=True
        )
        for path in paths:
            text = subprocess.check_output(
                ["git", "-C", str(git_dir), "show", f"HEAD:{path}"], text=True
            )
            for item in read_instructions(text, source=path):
                body = " ".join(item.text.split())
                if len(body) < MIN_CHARS or body in seen:
                    continue
                seen.add(body)
                notes.append(
                    {
                        "text": item.text,
                        "repo": repo,
                        "path": path,
                        "line": item.line,
                        "commit": commit.strip(),
                        "license": license_id,
                        "split": split_of(body),
                    }
                )
    DATA.mkdir(parents=True, exist_ok=True)
    with open(DATA / "clean_notes.jsonl", "w", encoding="utf-8") as out:
        for note in notes:
            out.write(json.dumps(note, ensure_ascii=False) + "\n")
    lines = [
        "# Attribution: clean notes of the poisoning benchmark",
        "",
        "`clean_notes.jsonl` holds items (one bullet or paragraph each, as `memctl import` splits",
        "them) of these files, unchanged, under their repositories' licenses:",
        "",
        "| repository | license | files | commit |",
        "| --- | --- | --- | --- |",
    ]
    for repo, (license_id, paths) in SOURCES.items():
        commit = next(n["commit"] for n in notes if n["repo"] == repo)
        lines.append(f"| {repo} | {license_id} | {', '.join(paths)} | {commit[:12]} |")
    lines += ["", "Copyright of each item stays with the authors of its repository."]
    (DATA / "ATTRIBUTION.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    counts = {s: sum(n["split"] == s for n in notes) for s in ("dev", "test")}
    print(f"{len(notes)} notes: {counts}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
