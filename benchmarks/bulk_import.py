"""A bulk import of templated operations notes: does every fact stay findable?

python -m benchmarks.bulk_import [--records 1500] [--json OUT]

Each record is one fact in the shape teams keep by the hundred ("The profile service pages
on-call after 80 seconds in region r2; ticket OPS-1444 tracks it."). Many share a guessed
subject (service + action) but differ in region, ticket and team: different facts, none an
update of another. They are imported with `memctl import` (service.import_file, real model),
then each ticket is recalled (`memctl recall OPS-1444`, top 5) and counted found when a hit's
file holds it. Reported: memories written, records folded into another memory, records
marked superseded, tickets found, seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.recalling import recall_hits

SERVICES = ("profile", "billing", "search", "auth", "ledger", "gateway", "notification", "export")
FACTS = (
    "The {service} service pages on-call after {n} seconds in region r{region}; "
    "ticket {ticket} tracks it{team}.",
    "The {service} service keeps {n} days of audit logs in region r{region}; "
    "see ticket {ticket}{team}.",
    "The {service} service retries failed jobs {n} times in region r{region} "
    "(ticket {ticket}){team}.",
    "The {service} service caps uploads at {n} MB in region r{region}; ticket {ticket}{team}.",
)
TEAMS = ("Kestrel", "Falcon", "Heron", "Osprey", "Wren")


def records(count: int, seed: int = 29) -> list[dict[str, str]]:
    """`count` distinct facts, each with its own ticket (OPS-1000 onwards)."""
    rng = random.Random(seed)
    made = []
    for i in range(count):
        team = rng.choice(("", *(f", owned by team {t}" for t in TEAMS)))
        text = rng.choice(FACTS).format(
            service=rng.choice(SERVICES),
            n=rng.randrange(5, 120),
            region=rng.randrange(1, 9),
            ticket=f"OPS-{1000 + i}",
            team=team,
        )
        made.append({"text": text, "ticket": f"OPS-{1000 + i}"})
    return made


def write_jsonl(path: Path, rows: list[dict[str, str]]) -> Path:
    lines = (json.dumps({"text": row["text"], "type": "semantic"}) for row in rows)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(count: int, root: Path) -> dict[str, float | int]:
    from memctl import service
    from memctl.service.memories.exchange import import_file
    from memctl.service.memories.lookup import list_memories

    store = service.init_store(root / "project")
    rows = records(count)
    started = time.perf_counter()
    imported = import_file(store, write_jsonl(root / "records.jsonl", rows))
    import_seconds = time.perf_counter() - started
    memories = [m for _, m in list_memories(store, include_archived=True).memories]
    found = 0
    for row in rows:
        hits = recall_hits(store, row["ticket"], k=5)
        found += any(row["ticket"] in h.path.read_text(encoding="utf-8") for h in hits)
    return {
        "records": count,
        "memories": len(memories),
        "folded": len(imported.merged),
        "skipped": len(imported.skipped),
        "superseded": sum(1 for m in memories if m.extra.get("superseded_by")),
        "tickets_found": found,
        "import_seconds": round(import_seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        figures = run(args.records, Path(work))
    for key, value in figures.items():
        print(f"{key:>15}  {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0 if figures["tickets_found"] == figures["records"] else 1


if __name__ == "__main__":
    sys.exit(main())
