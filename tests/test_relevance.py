"""The relevance floor, `-k` as a maximum, small-store term weighting and time in recall,
on real stores with the bundled model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.config import open_store, with_overrides
from memctl.service.retrieval.context import build_context

pytestmark = pytest.mark.model  # the bundled embedding model, on small data

TEAM = [
    ("The on-call handbook lives in the wiki under Operations.", "semantic", "2025-01-05"),
    (
        "The billing service stores invoices in PostgreSQL 16 on the shared RDS cluster.",
        "semantic",
        "2025-01-14",
    ),
    (
        "Deploy with make promote ENV=prod, then watch the canary for 20 minutes.",
        "procedural",
        "2025-03-01",
    ),  # fmt: skip
    ("Python code is formatted with ruff, line length 100.", "preference", "2025-01-09"),
    (
        "Incident: Redis evicted idempotency keys and API retries created duplicate invoices.",
        "episodic",
        "2025-10-07",
    ),  # fmt: skip
    (
        "Incident: the TLS certificate of the webhook sender expired for 40 minutes.",
        "episodic",
        "2025-07-22",
    ),  # fmt: skip
    ("Jonas owns the ledger service and the month-end reconciliation.", "profile", "2025-01-06"),
    (
        "Feature flags live in Unleash; each flag needs an owner and a removal date.",
        "semantic",
        "2025-03-04",
    ),  # fmt: skip
    (
        "Card payments go through Stripe, SEPA direct debit through Adyen.",
        "semantic",
        "2025-05-13",
    ),  # fmt: skip
    ("No meetings on Wednesdays: it is the team's focus day.", "preference", "2025-08-12"),
]


@pytest.fixture
def team(store):
    ids = []
    for text, kind, day in TEAM:
        added = service.add_memory(
            store, text, type=kind, created=f"{day}T09:00:00Z", sync=False, dedup=False
        )
        ids.append(added.memory.id)
    service.sync_index(store)
    return ids


@pytest.mark.parametrize(
    "query",
    ["what is a good recipe for banana bread", "who won the football world cup in 2018",
     "rename this variable to something clearer"],
)  # fmt: skip
def test_an_unrelated_query_returns_nothing(store, team, query):
    # Without -k: at most recall.k, and only those above recall.min_relevance.
    assert service.recall(service.RecallRequest(store, query)).hits == []
    assert service.recall(service.RecallRequest(store, query, mode="bm25")).hits == []
    assert service.recall(service.RecallRequest(store, query, mode="vector")).hits == []


def test_k_is_a_maximum_and_every_hit_has_a_relevance(store, team):
    hits = service.recall(
        service.RecallRequest(store, "which payment provider handles card payments")
    ).hits
    assert 1 <= len(hits) < store.settings.recall.k  # only those about payments clear the floor
    assert hits[0].id == team[8]
    assert all(0.0 <= hit.relevance <= 1.0 for hit in hits)
    assert (
        len(
            service.recall(
                service.RecallRequest(store, "which payment provider handles card payments", k=1)
            ).hits
        )
        == 1
    )
    everything = service.recall(
        service.RecallRequest(store, "which payment provider", k=5, min_relevance=0.0)
    ).hits
    assert len(everything) == 5  # no floor: k candidates


def test_a_common_word_cannot_outvote_a_rare_one_in_a_small_store(store, team):
    query = "which database do invoices live in"
    assert service.recall(service.RecallRequest(store, query, k=1)).hits[0].id == team[1]
    # BM25 alone cannot tell which invoice memory names a database, but "lives" must not win.
    hits = service.recall(
        service.RecallRequest(store, query, k=3, mode="bm25", min_relevance=0.0)
    ).hits
    assert hits[0].id != team[0] and "invoices" in hits[0].body


def test_relevance_is_in_the_json_and_nothing_relevant_says_so(store, team, monkeypatch):
    monkeypatch.setenv("MEMCTL_STORE", str(store.root))
    runner = CliRunner()
    found = json.loads(runner.invoke(app, ["recall", "who owns the ledger", "--json"]).stdout)
    assert found[0]["id"] == team[6] and found[0]["relevance"] >= 0.5
    assert "score" in found[0]
    empty = runner.invoke(app, ["recall", "how do plants make oxygen"])
    assert empty.exit_code == 0 and "No relevant memories." in empty.stdout
    assert json.loads(runner.invoke(app, ["recall", "plants and oxygen", "--json"]).stdout) == []
    bad = runner.invoke(app, ["recall", "ledger", "--min-relevance", "2"])
    assert bad.exit_code == 2


def test_context_adds_no_memories_for_an_unrelated_query(store, team):
    def recalled(query):  # recent episodes are shown whatever the query; recalled ones are not
        memories = build_context(store, query).memories
        return [m for m in memories if set(m["via"]) & {"semantic", "knowledge"}]

    assert recalled("what is the capital of Australia") == []
    assert recalled("who owns the ledger service")


@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2-int8", "use-multilingual-v3"])
def test_unrelated_queries_on_the_example_store_return_nothing(tmp_path, model):
    # Each model reads cosines on its own scale: one floor must hold for both.
    example = Path(__file__).resolve().parent.parent / ".memory.example"
    root = tmp_path / ".memory"
    shutil.copytree(example, root, ignore=shutil.ignore_patterns(".index", ".state"))
    store = with_overrides(open_store(root), {"embedding": {"model": model}})
    for query in ("what is a good recipe for lasagna", "write a haiku about autumn",
                  "how far is the moon", "ERR_PAY_4471", "红烧肉怎么做"):  # fmt: skip
        assert service.recall(service.RecallRequest(store, query)).hits == [], query
    for query, answer in (("how do we ship to production", "how-to-deploy-to-production"),
                          ("how are error codes named", "error-codes-follow")):  # fmt: skip
        hits = service.recall(service.RecallRequest(store, query, k=2)).hits
        assert hits and hits[0].path.name.startswith(answer), query


def test_since_and_until_filter_by_date(store, team):
    hits = service.recall(
        service.RecallRequest(store, "incident", k=5, since="2025-09-01", min_relevance=0.0)
    ).hits
    assert [hit.id for hit in hits] == [team[4]]
    hits = service.recall(
        service.RecallRequest(
            store, "incident", k=5, since="2025-07-01", until="2025-08-01", min_relevance=0.0
        )
    ).hits
    assert [hit.id for hit in hits] == [team[5]]
    runner = CliRunner()
    result = runner.invoke(
        app, ["--store", str(store.root), "recall", "incident", "--until", "2025-01-01", "--json"]
    )
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    bad = runner.invoke(app, ["--store", str(store.root), "recall", "x", "--since", "soon"])
    assert bad.exit_code == 2 and "not a date" in bad.output


@pytest.mark.parametrize(
    "query, floor",
    [("which incident happened in July", None), ("what incident did we have in July 2025", None),
     # the bundled model reads Chinese poorly: the ranking only
     ("七月的 incident", 0.0), ("7月22日发生了什么", 0.0)],
)  # fmt: skip
def test_a_time_expression_favours_memories_of_that_time(store, team, query, floor):
    hits = service.recall(
        service.RecallRequest(store, query, k=2, as_of="2025-11-20", min_relevance=floor)
    ).hits
    assert hits[0].id == team[5]
    hits = service.recall(
        service.RecallRequest(store, "which incident happened last month", k=2, as_of="2025-11-03")
    ).hits
    assert hits[0].id == team[4]


@pytest.mark.parametrize("query", ["what happened on July 22nd", "what went wrong on 2025-07-22"])
def test_a_named_day_finds_that_days_memory_past_the_floor(store, team, query):
    """The date answers the part of the query that names it: the memory of that day is
    relevant enough to be shown even though it shares no other word with the query."""
    hits = service.recall(service.RecallRequest(store, query, k=1, as_of="2025-11-20")).hits
    assert [hit.id for hit in hits] == [team[5]]


def test_neighbours_come_with_a_hit_not_instead_of_one(store):
    turns = [
        "Alice: did the migration to Postgres 16 finish?",
        "Bob: yes, it finished on Sunday night without downtime",
        "Alice: great, then we can drop the old replica",
    ]
    for n, text in enumerate(turns):
        service.add_memory(
            store, text, type="episodic", sync=False, created=f"2025-05-0{n + 1}T10:00:00Z",
            extra={"session_id": "s1"},
        )  # fmt: skip
    service.sync_index(store)
    hits = service.recall(
        service.RecallRequest(store, "drop the old replica", k=1, with_neighbours=True)
    ).hits
    assert len(hits) == 1 and "replica" in hits[0].body
    assert [n["offset"] for n in hits[0].neighbours] == [-1]
    assert "finished on Sunday" in hits[0].neighbours[0]["body"]


def test_a_memory_that_tells_of_the_window_counts_as_dated_in_it(store):
    """ "Last week I threw a party in Boston", written on November 2nd, tells of the last week
    of October: a question about that week finds it, though it was written after it."""
    notes = [
        ("Calvin: Last week I threw a small party at my place in Boston, it was great.",
         "2023-11-02T10:00:00Z"),
        ("Calvin: I threw a party at a friend's place in Tokyo, it was great.",
         "2023-09-14T10:00:00Z"),
        ("Calvin: Next month I might host a party at the studio.", "2023-10-03T10:00:00Z"),
        ("Calvin: Last year I threw a party for the whole band.", "2023-11-20T10:00:00Z"),
    ]  # fmt: skip
    for text, created in notes:
        service.add_memory(store, text, type="episodic", created=created, sync=False, force=True)
    service.sync_index(store)
    hits = service.recall(service.RecallRequest(store, "where did Calvin throw a party in the last week of October 2023", k=4, min_relevance=0.0)).hits  # fmt: skip
    assert "Boston" in hits[0].body


def test_a_memory_is_dated_by_when_it_happened_not_when_it_was_filed(store):
    """An episode written at a session's end, or a note filed days later, carries `occurred_at`:
    time words and --since/--until go by it."""
    service.add_memory(
        store, "We rotated the staging database password after the audit.", type="episodic",
        created="2025-06-20T10:00:00Z", extra={"occurred_at": "2025-06-03"}, sync=False,
        force=True,
    )  # fmt: skip
    service.add_memory(
        store, "We rotated the production API keys after the audit.", type="episodic",
        created="2025-06-09T10:00:00Z", sync=False, force=True,
    )  # fmt: skip
    service.sync_index(store)
    hits = service.recall(
        service.RecallRequest(store, "what did we rotate on June 3rd", k=1, as_of="2025-06-25")
    ).hits
    assert "staging" in hits[0].body
    hits = service.recall(
        service.RecallRequest(
            store, "rotated", since="2025-06-01", until="2025-06-05", min_relevance=0
        )
    ).hits
    assert [hit.body for hit in hits] == [
        "We rotated the staging database password after the audit.\n"
    ]


def test_relevance_tells_a_clear_answer_from_a_loose_match_on_the_example_store(tmp_path):
    """Relevance spreads over [0, 1]: the deploy procedure leads a deploy question, a person's
    profile that merely mentions the platform is not a certain hit, and a query about one
    error's variable gets no memory near certainty."""
    example = Path(__file__).resolve().parent.parent / ".memory.example"
    root = tmp_path / ".memory"
    shutil.copytree(example, root, ignore=shutil.ignore_patterns(".index", ".state"))
    store = open_store(root)
    hits = service.recall(service.RecallRequest(store, "how do we deploy", k=5)).hits
    by_type = {hit.type: hit.relevance for hit in reversed(hits)}
    assert hits[0].title.startswith("How to deploy to production")
    assert by_type["profile"] < 0.9 and hits[0].relevance > by_type["profile"]
    assert max(hit.relevance for hit in hits) - min(hit.relevance for hit in hits) > 0.1
    loose = service.recall(service.RecallRequest(store, "TIDEPOOL_DATABASE_URL KeyError", k=5))
    assert all(hit.relevance < 0.8 for hit in loose.hits)


def test_a_cosine_reads_on_a_curve_that_keeps_its_floor_and_spreads_its_top():
    from memctl.core.recall.evidence import DEFAULT_SCALE, relevance

    floor_cosine = DEFAULT_SCALE.none + 0.25 * (DEFAULT_SCALE.full - DEFAULT_SCALE.none)
    assert abs(relevance(floor_cosine, 0.0) - 0.25) < 0.01  # the shipped floor means the same
    assert relevance(0.49, 0.0) < 0.7 < relevance(0.7, 0.0)  # a loose match, a clear one
    assert relevance(0.3, 1.0, held=8.0) < relevance(0.3, 1.0, held=20.0) < 1.0
