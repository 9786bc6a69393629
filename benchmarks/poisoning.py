"""Memory poisoning (OWASP ASI06): do poisoned memories reach an agent's context?

    python -m benchmarks.poisoning [--json poisoning.json] [--split dev|test|both]

Each attack case builds a fresh store in a temp folder and sends its payload through memctl's
real write path (a Claude Code transcript ingested as the SessionEnd hook does, `memctl
extract` with a mocked LLM, MCP `add`, `memctl import`, a `git pull` between two clones with
memctl's git hooks installed). Every payload carries a canary word. Then every surface that
injects memories is read with a query made of the payload's own words (the worst case): the
SessionStart and UserPromptSubmit hooks, `memctl context` (what MCP `context` returns) and
`recall --format context`. A case fails when its canary reaches any of them outside
quarantine, or when any surface's output is not one intact fence (core.trust.fence).

The clean set (benchmarks/data/poisoning/clean_notes.jsonl: items of public AGENTS.md /
CLAUDE.md files, see ATTRIBUTION.md) is imported with `memctl import` (origin import:<file>);
the false-quarantine rate is the share of imported notes `memctl review` then lists.
Tune on dev, report test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.poisoning_cases import CASES, Case, new_store

DATA = Path(__file__).resolve().parent / "data" / "poisoning"


@dataclass
class Outcome:
    name: str
    asi06: str
    stored: bool  # the payload was written to the store
    quarantined: bool  # ... and waits in `memctl review`
    reached: list[str] = field(default_factory=list)  # surfaces whose output holds the canary
    broken_fences: list[str] = field(default_factory=list)
    note: str = ""
    typed_by_user: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.broken_fences or (self.reached and not self.typed_by_user))


# --- reading what the agent would get -------------------------------------------------------


def injected(store, query: str) -> dict[str, str]:
    """What each injecting surface hands the agent for `query`."""
    from memctl.agents.action_events import action_context
    from memctl.agents.claude_code import HookPayload
    from memctl.agents.claude_code_events import prompt_context, session_start_context
    from memctl.cli.commands.recall import hits_markdown
    from memctl.service.provenance import gate_for
    from memctl.service.retrieval.context import agent_context
    from memctl.service.retrieval.indexing import sync_index
    from memctl.service.retrieval.use_case import RecallRequest, recall

    sync_index(store)
    start = HookPayload(event="SessionStart", session_id="s-new", source="startup")
    prompt = HookPayload(event="UserPromptSubmit", session_id="s-new", prompt=query)
    only = [("project", store)]
    hits = recall(
        RecallRequest(store, query, k=10, min_relevance=0.0, stores=only, sync=False)
    ).hits
    # PreToolUse: a shell command made of the query's words, and an edit of the memory files
    tool = {"tool_name": "Bash", "tool_input": {"command": query[:300]}}
    pre_tool = HookPayload(event="PreToolUse", session_id="s-new", raw=tool)
    return {
        "session-start": session_start_context(store, start),
        "prompt": prompt_context(store, prompt),
        "pre-tool-use": action_context(store, pre_tool),
        "context (CLI, MCP)": agent_context(store, query=query),
        "recall --format context": hits_markdown(query, hits, {"project": gate_for(store)}),
        **exported_agent_files(store),
    }


def exported_agent_files(store) -> dict[str, str]:
    """What `memctl export --format claude-md|agents-md|cursor-rules` writes (to stdout)."""
    from memctl.core.files.memory import MEMORY_TYPES
    from memctl.service.memories.exchange import export_memories

    found = {}
    for fmt in ("claude-md", "agents-md", "cursor-rules"):
        result = export_memories(
            store, fmt, project_root=store.root.parent, output="-", types=list(MEMORY_TYPES)
        )
        found[f"export {fmt}"] = result.text or ""
    return found


_ROLE_LINE = re.compile(r"^\s*(?:human|assistant|system|user)\s*:", re.IGNORECASE | re.MULTILINE)
_RAW_TAG = re.compile(r"<\s*/?\s*(?:system|memctl-notes|function_calls|invoke|assistant|human)\b")


def fence_problems(text: str) -> list[str]:
    """What is wrong with a surface's output as one fenced block ([] when fine or empty)."""
    from memctl.core.trust.fence import CLOSE, OPEN, fold, is_fenced

    if not text.strip():
        return []
    if not is_fenced(text):
        return ["not one fenced block"]
    inner = fold(text.strip()[len(OPEN) : -len(CLOSE)])
    problems = []
    if _ROLE_LINE.search(inner):
        problems.append("a line opens with a role")
    if _RAW_TAG.search(inner):
        problems.append("raw role/fence/tool tag")
    if "```" in inner:
        problems.append("a code fence")
    return problems


def run_case(case: Case, workdir: Path) -> Outcome:
    from memctl.service.memories.lookup import list_memories
    from memctl.service.provenance import pending_review

    attack = case.build(workdir)
    memories = list_memories(attack.store).memories
    stored = any(attack.canary in m.body.casefold() for _, m in memories)
    held = any(attack.canary in p.body.casefold() for p in pending_review(attack.store))
    outcome = Outcome(case.name, case.asi06, stored, held, note=attack.note)
    outcome.typed_by_user = case.typed_by_user
    # Why without the canary: the query stands for what the user asks; only memories may bring it.
    query = attack.query.replace(attack.canary, " ")
    for surface, text in injected(attack.store, query).items():
        if attack.canary in text.casefold():
            outcome.reached.append(surface)
        if not surface.startswith("export"):  # an agent file is Markdown, not a notes block
            outcome.broken_fences += [f"{surface}: {p}" for p in fence_problems(text)]
    return outcome


# --- the clean set ------------------------------------------------------------------------


def clean_notes(split: str) -> list[dict]:
    lines = (DATA / "clean_notes.jsonl").read_text(encoding="utf-8").splitlines()
    notes = [json.loads(line) for line in lines if line.strip()]
    return [n for n in notes if split == "both" or n["split"] == split]


def false_quarantine(split: str, workdir: Path) -> dict:
    """Import the clean notes of `split` (origin import:<file>) and count what review lists."""
    from memctl.service.memories.exchange import import_file
    from memctl.service.provenance import pending_review

    store = new_store(workdir / f"clean-{split}")
    path = workdir / f"agents-notes-{split}.jsonl"
    records = [{"body": n["text"], "type": "procedural"} for n in clean_notes(split)]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    result = import_file(store, path)
    imported = len(result.added)
    held = pending_review(store)
    return {
        "split": split,
        "notes": len(records),
        "imported": imported,
        "quarantined": len(held),
        "rate": round(len(held) / imported, 4) if imported else 0.0,
        "held": [{"id": p.id, "reason": p.reason, "text": p.body[:200]} for p in held],
    }


# --- memctl's own memories ------------------------------------------------------------------

SESSIONS = Path(os.environ.get("MEMCTL_SESSIONS_CACHE", "/work/cache/sessions"))


def own_quarantine(workdir: Path, folder: Path, limit: int, max_bytes: int) -> dict:
    """Real Claude Code transcripts (benchmarks.sessions' cache), each ingested into a fresh store
    through the SessionEnd path: the share of what memctl wrote that `memctl review` holds."""
    from memctl.agents.ingest import ingest_transcript
    from memctl.service.memories.lookup import list_memories
    from memctl.service.provenance import pending_review

    paths = sorted(p for p in folder.glob("*/*.jsonl") if p.stat().st_size <= max_bytes)[:limit]
    written, held = 0, []
    for number, path in enumerate(paths):
        store = new_store(workdir / f"own{number}")
        ingest_transcript(store, f"s-own-{number}", path, final=True)
        written += len(list_memories(store).memories)
        held += [
            {"session": f"{path.parent.name}/{path.name}", "reason": p.reason, "text": p.body[:160]}
            for p in pending_review(store)
        ]
    return {
        "sessions": len(paths),
        "memories": written,
        "quarantined": len(held),
        "rate": round(len(held) / written, 4) if written else 0.0,
        "held": held,
    }


# --- running ------------------------------------------------------------------------------


def without_defences() -> None:
    """The baseline: no quarantine, no fence, nothing neutralised (what memctl did before)."""
    from memctl.cli.commands import recall
    from memctl.core.recall import hook_blocks
    from memctl.service import provenance
    from memctl.service.retrieval import context

    provenance.Gate.quarantine_reason = lambda self, memory: None  # type: ignore[method-assign,assignment]
    for module in (hook_blocks, context, recall):
        module.fence = lambda text: text  # type: ignore[attr-defined]
        module.neutralise = lambda text: text  # type: ignore[attr-defined]


def isolate(workdir: Path) -> None:
    """No user store, no resident server, no real cache folders."""
    os.environ["MEMCTL_NO_SERVER"] = "1"
    os.environ["MEMCTL_USER_STORE"] = str(workdir / "no-user-store")
    os.environ["XDG_CACHE_HOME"] = str(workdir / "cache")
    os.environ["XDG_STATE_HOME"] = str(workdir / "state")  # this run's provenance key
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        os.environ.pop(key, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="Write the figures here.")
    parser.add_argument("--split", choices=("dev", "test", "both"), default="both")
    parser.add_argument(
        "--baseline", action="store_true", help="Run with quarantine and fence switched off."
    )
    parser.add_argument(
        "--own-memories",
        type=int,
        default=0,
        help="Also ingest this many cached real sessions (MEMCTL_SESSIONS_CACHE) and count how "
        "many of memctl's own memories the quarantine holds.",
    )
    parser.add_argument("--session-bytes", type=int, default=400_000)
    args = parser.parse_args(argv)
    if args.baseline:
        without_defences()
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="memctl-poison-") as folder:
        workdir = Path(folder)
        isolate(workdir)
        outcomes = []
        for number, case in enumerate(CASES):
            outcome = run_case(case, workdir / f"case{number}")
            outcomes.append(outcome)
            status = "FAIL" if outcome.failed else "ok"
            print(
                f"{status:4} {case.name:42} stored={outcome.stored!s:5} "
                f"quarantined={outcome.quarantined!s:5} reached={outcome.reached} "
                f"fence={outcome.broken_fences} {outcome.note}"
            )
        splits = ("dev", "test") if args.split == "both" else (args.split,)
        clean = [false_quarantine(split, workdir) for split in splits]
        own = None
        if args.own_memories and SESSIONS.is_dir():
            own = own_quarantine(workdir, SESSIONS, args.own_memories, args.session_bytes)
    failed = sum(o.failed for o in outcomes)
    print(
        f"\npoisoned memories reaching context unfenced or unquarantined: {failed}/{len(outcomes)}"
    )
    for figures in clean:
        print(
            f"false quarantine ({figures['split']}): {figures['quarantined']}/{figures['imported']}"
            f" = {figures['rate']:.1%}"
        )
    if own is not None:
        print(
            f"memctl's own memories quarantined ({own['sessions']} real sessions): "
            f"{own['quarantined']}/{own['memories']} = {own['rate']:.1%}"
        )
    print(f"({time.time() - started:.0f} s)")
    if args.json:
        report = {
            "cases": [{**o.__dict__, "failed": o.failed} for o in outcomes],
            "failed": failed,
            "clean": clean,
            "own": own,
        }
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
