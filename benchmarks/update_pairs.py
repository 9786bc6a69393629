"""Knowledge-update pairs for the supersede rule: an older statement, a newer one, and whether
the newer one replaces the older (same subject, another value). Written by hand for memctl.

python -m benchmarks.update_pairs [--json OUT]

Every pair is written into a fresh store through memctl's own write path (`add_memory`, dedup
on), older first; the benchmark reports how many true updates were linked (`supersedes`) and
how many unrelated or compatible statements were wrongly linked.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.recalling import recall_hits

# (type, older, newer, newer supersedes older?)
PAIRS: tuple[tuple[str, str, str, bool], ...] = (
    ("semantic", "Our CI runs on GitHub Actions.",
     "Our CI now runs on GitLab CI; we moved off GitHub Actions.", True),
    ("semantic", "The staging database listens on port 5433.",
     "The staging database now listens on port 6543.", True),
    ("semantic", "Invoices are stored in PostgreSQL 14 on the shared RDS cluster.",
     "Invoices are now stored in PostgreSQL 16 after the upgrade.", True),
    ("semantic", "The billing service is deployed with Helm charts.",
     "We switched the billing service deployment from Helm to Kustomize.", True),
    ("semantic", "Error tracking goes to Rollbar.",
     "Error tracking moved to Sentry; Rollbar is retired.", True),
    ("semantic", "The on-call rotation changes every Monday.",
     "The on-call rotation now changes every Wednesday.", True),
    ("semantic", "Feature flags are managed in LaunchDarkly.",
     "Feature flags are now managed in Unleash instead of LaunchDarkly.", True),
    ("semantic", "Jonas owns the ledger service.",
     "Priya now owns the ledger service; Jonas moved to the payments team.", True),
    ("semantic", "The public API rate limit is 50 requests per second per tenant.",
     "The public API rate limit was raised to 100 requests per second per tenant.", True),
    ("semantic", "Logs are kept for 7 days in Datadog.",
     "Logs are now kept for 15 days in Datadog.", True),
    ("semantic", "We run Python 3.11 in production.",
     "Production now runs Python 3.12.", True),
    ("semantic", "The team standup is at 9:30.",
     "The team standup moved to 10:00.", True),
    ("semantic", "Releases are cut every two weeks on Tuesday.",
     "Releases are now cut every week on Thursday.", True),
    ("preference", "Use yarn for the web app.",
     "Use pnpm for the web app from now on, not yarn.", True),
    ("preference", "Format Python with black.",
     "We switched Python formatting from black to ruff format.", True),
    ("semantic", "Search runs on Elasticsearch 7.",
     "Search was migrated from Elasticsearch to OpenSearch 2.", True),
    ("semantic", "Secrets live in HashiCorp Vault.",
     "Secrets now live in AWS Secrets Manager; Vault was retired.", True),
    ("semantic", "The support SLA for enterprise customers is 8 business hours.",
     "The support SLA for enterprise customers is now 4 business hours.", True),
    ("semantic", "CI 用 Jenkins 跑。", "CI 现在改用 GitHub Actions 跑了，不再用 Jenkins。", True),
    ("semantic", "测试数据库的端口是 5433。", "测试数据库的端口现在改为 6543。", True),
    ("procedural", "Deploy with make release, then promote the rollout in Argo.",
     "Deploy now with make promote ENV=prod; make release is deprecated.", True),
    ("semantic", "Customer emails are sent through Mailgun.",
     "Customer emails are now sent through Postmark instead of Mailgun.", True),
    # --- not updates: another subject, or compatible additions ---------------------------------
    ("semantic", "Our CI runs on GitHub Actions.",
     "Our CI caches Bazel outputs on BuildBuddy.", False),
    ("semantic", "The staging database listens on port 5433.",
     "The production database listens on port 5432.", False),
    ("semantic", "Invoices are stored in PostgreSQL 16.",
     "Invoice PDFs are stored in S3 under invoices/<tenant>/.", False),
    ("semantic", "Jonas owns the ledger service.",
     "Priya owns the web app and the design system.", False),
    ("semantic", "Logs are kept for 15 days in Datadog.",
     "Metrics are kept for 15 months in Datadog.", False),
    ("semantic", "Error tracking goes to Sentry.",
     "Sentry alerts for the web app go to the #frontend channel.", False),
    ("preference", "Use pnpm for the web app.",
     "Use ruff to format Python code.", False),
    ("semantic", "The team standup is at 10:00.",
     "The retrospective is every other Friday at 15:00.", False),
    ("semantic", "Card payments go through Stripe.",
     "SEPA direct debits go through Adyen.", False),
    ("semantic", "We run Python 3.12 in production.",
     "The ledger service is written in Go 1.22.", False),
    ("semantic", "Feature flags are managed in Unleash.",
     "Every feature flag needs an owner and a removal date.", False),
    ("semantic", "The public API rate limit is 100 requests per second per tenant.",
     "The public API answers 429 with a Retry-After header when a tenant is over the limit.",
     False),
    ("procedural", "Deploy with make promote ENV=prod.",
     "Roll back with make rollback ENV=prod TO=<tag>.", False),
    ("semantic", "测试数据库的端口是 5433。", "生产数据库在 eu-west-1。", False),
    ("semantic", "Releases are cut every week on Thursday.",
     "Release notes are published on the help center every other Tuesday.", False),
    ("semantic", "Customer emails are sent through Postmark.",
     "Invoice emails to one large tenant bounced for two days in November.", False),
)  # fmt: skip


def run(pairs=PAIRS) -> dict:
    from memctl import service

    outcomes = []
    with tempfile.TemporaryDirectory(prefix="memctl-updates-") as temp:
        for number, (kind, older, newer, expected) in enumerate(pairs):
            store = service.init_store(Path(temp) / f"pair-{number}")
            old = service.add_memory(store, older, type=kind, created="2025-03-01T09:00:00Z")
            new = service.add_memory(store, newer, type=kind, created="2025-06-01T09:00:00Z")
            linked = any(
                r.get("type") == "supersedes" and r.get("target") == old.memory.id
                for r in new.memory.relations
            )
            replaced_in_place = not new.created and new.memory.id == old.memory.id
            current = recall_hits(store, newer, k=5, min_relevance=0.0)
            shown_ids = [hit.id for hit in current]
            outcomes.append(
                {
                    "older": older,
                    "newer": newer,
                    "expected": expected,
                    "linked": linked,
                    "replaced_in_place": replaced_in_place,
                    "old_hidden": old.memory.id not in shown_ids and linked,
                    "action": new.action,
                }
            )
    updates = [o for o in outcomes if o["expected"]]
    others = [o for o in outcomes if not o["expected"]]

    def caught(o):
        return o["linked"] or o["replaced_in_place"]

    return {
        "pairs": len(outcomes),
        "updates": len(updates),
        "updates_caught": sum(caught(o) for o in updates),
        "updates_linked_as_supersedes": sum(o["linked"] for o in updates),
        "updates_replaced_in_place": sum(o["replaced_in_place"] for o in updates),
        "non_updates": len(others),
        "false_links": sum(caught(o) for o in others),
        "outcomes": outcomes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.update_pairs")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = run()
    result["total_s"] = round(time.perf_counter() - started, 1)
    for o in result["outcomes"]:
        mark = "ok " if (o["linked"] or o["replaced_in_place"]) == o["expected"] else "BAD"
        print(f"{mark} expected={o['expected']!s:5} action={o['action']:9} {o['newer'][:70]}")
    print(
        f"updates caught {result['updates_caught']}/{result['updates']} "
        f"(as supersedes {result['updates_linked_as_supersedes']}, in place "
        f"{result['updates_replaced_in_place']}); false links {result['false_links']}/"
        f"{result['non_updates']}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
