"""Stores that grew with the work: each project's agent-file memories plus its earlier commits
stored as episodes, the memories a store that learned from months of work would hold.

`grown(data, factor, mirrors)` gives a Dataset whose every project holds (factor - 1) times as
many episodes as it has agent-file memories (fewer when its history is shorter): the commits
just before the agent file's commit, newest first, without merges and bots, one episode each
(subject and body, dated at the commit). Episodes carry no labels: for a later task they are
what the store holds besides the rules, relevant or not. Read from a local mirror of each
repository (benchmarks.action_time.mirror_of); no network.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

from benchmarks.project_tasks.data_files import Dataset

EPISODE_CHARS = 600  # a commit message longer than this is cut (at a word) as an episode
_FIELD, _RECORD = "\x1f", "\x1e"


def earlier_commits(repo: Path, commit: str, count: int) -> list[dict]:
    """Up to `count` commits before `commit` (newest first): hash, date, subject, body."""
    if count <= 0:
        return []
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "--no-merges", f"-n{count * 2}",
         f"--format=%H{_FIELD}%aI{_FIELD}%an{_FIELD}%s{_FIELD}%b{_RECORD}", f"{commit}~1"],
        capture_output=True, text=True, check=True, encoding="utf-8", errors="replace",
    ).stdout  # fmt: skip
    commits = []
    for record in out.split(_RECORD):
        parts = record.strip("\n").split(_FIELD)
        if len(parts) != 5:
            continue
        sha, date, author, subject, body = parts
        if "[bot]" in author or "bot" == author.lower()[-3:]:
            continue
        commits.append({"sha": sha, "date": date, "subject": subject, "body": body.strip()})
    return commits[:count]


def episode_text(commit: dict) -> str:
    from memctl.core.language.text import clip

    text = commit["subject"].strip()
    body = "\n".join(
        line for line in commit["body"].splitlines() if not line.lower().startswith("signed-off")
    ).strip()
    if body:
        text += "\n\n" + body
    return clip(text, EPISODE_CHARS, keep_lines=True)


def grown(data: Dataset, factor: float, mirrors: Path) -> tuple[Dataset, dict[str, dict]]:
    """The dataset with every project's store grown `factor` times by earlier commits, and per
    project: agent-file memories, episodes added, the factor reached."""
    from benchmarks.action_time import mirror_of

    added: list[dict] = []
    sizes: dict[str, dict] = {}
    for repo in data.repos:
        own = len(data.memories_of(repo["key"]))
        wanted = int(round(own * (factor - 1)))
        commits = earlier_commits(mirror_of(mirrors, repo["repo"]), repo["agent_commit"], wanted)
        for number, commit in enumerate(commits):
            added.append(
                {
                    "id": f"{repo['key']}-ep{number:04d}",
                    "project": repo["key"],
                    "text": episode_text(commit),
                    "section": "",
                    "type": "episodic",
                    "created": commit["date"],
                    "commit": commit["sha"],
                }
            )
        sizes[repo["key"]] = {
            "memories": own,
            "episodes": len(commits),
            "factor": round((own + len(commits)) / own, 1) if own else None,
        }
    return replace(data, memories=data.memories + added), sizes
