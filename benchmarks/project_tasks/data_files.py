"""The committed data: repositories, memories and labelled tasks (no network, no git)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"
SPLITS = ("dev", "test")


@dataclass(frozen=True)
class Dataset:
    repos: list[dict]
    memories: list[dict]
    tasks: list[dict]

    def projects(self, split: str = "all") -> list[str]:
        return [r["key"] for r in self.repos if split == "all" or r["split"] == split]

    def memories_of(self, project: str) -> list[dict]:
        return [m for m in self.memories if m["project"] == project]

    def tasks_of(self, split: str = "all") -> list[dict]:
        keep = set(self.projects(split))
        return [t for t in self.tasks if t["project"] in keep]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load(directory: Path = DATA) -> Dataset:
    repos = json.loads((directory / "repos.json").read_text(encoding="utf-8"))
    memories = _jsonl(directory / "memories.jsonl")
    tasks = _jsonl(directory / "tasks.jsonl")
    written = {t["project"] for t in tasks}
    return Dataset([r for r in repos if r["key"] in written], memories, tasks)
