"""Deterministic developer-note texts for the performance benchmark (20-80 words each)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memctl.config import Store

AREAS = (
    "auth",
    "billing",
    "search",
    "ingest",
    "export",
    "notifications",
    "scheduler",
    "gateway",
    "payments",
    "profile",
    "reporting",
    "audit",
    "upload",
    "checkout",
    "inventory",
    "sessions",
    "webhooks",
    "metrics",
    "onboarding",
    "permissions",
    "catalog",
    "pricing",
    "shipping",
    "invoices",
    "sync",
    "cache",
    "queue",
    "mailer",
    "feature-flags",
    "migrations",
    "backup",
    "analytics",
    "recommendations",
    "chat",
    "storage",
)
PARTS = (
    "service",
    "worker",
    "client",
    "api",
    "handler",
    "job",
    "module",
    "pipeline",
    "consumer",
    "adapter",
    "controller",
    "cron",
    "daemon",
    "endpoint",
    "middleware",
    "resolver",
    "store",
    "index",
    "loader",
)
TOOLS = (
    "postgres",
    "redis",
    "kafka",
    "nginx",
    "docker",
    "kubernetes",
    "terraform",
    "grafana",
    "prometheus",
    "sentry",
    "celery",
    "rabbitmq",
    "elasticsearch",
    "sqlite",
    "s3",
    "cloudfront",
    "github actions",
    "pytest",
    "mypy",
    "ruff",
    "webpack",
    "vite",
    "react",
    "fastapi",
    "django",
    "flask",
    "sqlalchemy",
    "alembic",
    "gunicorn",
    "uvicorn",
    "node",
    "typescript",
    "golang",
    "rust",
    "protobuf",
    "grpc",
    "graphql",
    "openapi",
    "helm",
    "vault",
    "consul",
    "envoy",
    "jaeger",
    "opentelemetry",
    "lambda",
    "dynamodb",
    "bigquery",
    "airflow",
    "dbt",
    "pandas",
)
VERBS = (
    "parse",
    "load",
    "fetch",
    "sync",
    "retry",
    "merge",
    "flush",
    "render",
    "validate",
    "resolve",
    "refresh",
    "encode",
    "decode",
    "build",
    "compute",
    "dispatch",
    "schedule",
    "archive",
    "migrate",
    "rotate",
    "index",
    "export",
    "import",
    "serialize",
    "normalize",
    "throttle",
    "batch",
    "dedupe",
    "hydrate",
    "prune",
)
NOUNS = (
    "config",
    "token",
    "session",
    "payload",
    "invoice",
    "user",
    "order",
    "event",
    "record",
    "schema",
    "cursor",
    "snapshot",
    "manifest",
    "receipt",
    "webhook",
    "tenant",
    "quota",
    "ledger",
    "report",
    "thumbnail",
    "message",
    "batch",
    "checkpoint",
    "lease",
    "secret",
    "certificate",
    "bucket",
    "partition",
    "offset",
    "header",
)
PROBLEMS = (
    "a race between two workers",
    "an off-by-one in the pagination cursor",
    "a missing index on created_at",
    "stale entries in the cache",
    "a timezone mix-up between UTC and local time",
    "connection pool exhaustion",
    "an unbounded retry loop",
    "a silent truncation of long strings",
    "a deadlock under concurrent writes",
    "an expired TLS certificate",
    "a memory leak in the long-running worker",
    "N+1 queries in the list view",
    "a flaky test that depends on ordering",
    "a wrong default in the settings file",
    "clock skew between hosts",
    "a schema mismatch after the last migration",
    "unicode normalisation of user names",
    "a slow regex on large inputs",
    "a missing await in the async handler",
    "a permissions check done too late",
)
OUTCOMES = (
    "latency dropped from {a} ms to {b} ms",
    "the error rate went back under {p} percent",
    "the nightly job now finishes in {m} minutes",
    "memory stays flat at about {a} MB",
    "throughput went up to {a} requests per second",
    "the flaky test has passed {n} runs in a row",
    "nobody has reported it again in {n} days",
    "the queue drains within {m} minutes after a spike",
)
PEOPLE = (
    "Ana",
    "Bilal",
    "Chen",
    "Dmitri",
    "Elena",
    "Farah",
    "Goran",
    "Hana",
    "Ines",
    "Jonas",
    "Kemal",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Yara",
)
ADJECTIVES = (
    "flaky",
    "slow",
    "noisy",
    "brittle",
    "legacy",
    "critical",
    "experimental",
    "deprecated",
    "hot",
    "fragile",
    "verbose",
    "idempotent",
    "eventual",
    "bursty",
    "sparse",
    "stale",
)
TAGS = (
    "bug",
    "decision",
    "howto",
    "incident",
    "perf",
    "security",
    "infra",
    "testing",
    "release",
    "api",
)
TYPES = ("semantic", "procedural", "episodic", "knowledge")

SENTENCES = (
    "The {area} {part} kept failing because of {problem}.",
    "We decided to move the {area} {part} from {tool} to {tool2} after {person} measured it.",
    "To {verb} a {noun} by hand, run `{command}` from the repo root and check the logs.",
    "{person} found that `{func}` in {path} ignores the {noun} when it is empty.",
    "After the fix {outcome}.",
    "Do not call `{func}` from the {area} {part}; it holds a lock on the {noun} table.",
    "The {adjective} {area} tests need {tool} running locally on port {port}.",
    "Set {env} to {number} in staging, otherwise the {area} {part} will {verb} every {noun} twice.",
    "Ticket #{ticket} tracks the {adjective} behaviour of the {area} {part} under load.",
    "Release {version} changed how we {verb} the {noun}; older clients still send the old shape.",
    "{person} prefers small pull requests for the {area} code and reviews them within a day.",
    "When {tool} restarts, the {area} {part} loses its {noun} and has to {verb} it again.",
    "The root cause was {problem}, which only showed up with more than {number} tenants.",
    "Our convention: every {noun} written by the {area} {part} carries a version field.",
    "Runbook: if the {area} alerts fire, first check {tool} dashboards, then restart the {part}.",
    "The {area} {part} reads its {noun} from {path} at startup and never reloads it.",
    "We keep the {noun} cache for {number} seconds because {tool} is slow to {verb} it.",
    "Pairing with {person} on the {area} {part}: we agreed to {verb} the {noun} before saving.",
    "Benchmarks on the {adjective} path showed `{func}` takes most of the time.",
    "The {area} team owns {path}; ask {person} before changing its {noun} format.",
)


@dataclass(frozen=True)
class Note:
    text: str
    type: str
    tags: tuple[str, ...]
    importance: float
    created: str


def _slots(rng: random.Random) -> dict[str, str]:
    verb, noun, area = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(AREAS)
    tool, tool2 = rng.sample(TOOLS, 2)
    a = rng.randint(20, 900)
    return {
        "area": area,
        "part": rng.choice(PARTS),
        "tool": tool,
        "tool2": tool2,
        "verb": verb,
        "noun": noun,
        "problem": rng.choice(PROBLEMS),
        "person": rng.choice(PEOPLE),
        "adjective": rng.choice(ADJECTIVES),
        "func": f"{verb}_{noun}{rng.choice(('', 's', '_async', '_batch', '_v2'))}",
        "path": f"src/{area.replace('-', '_')}/{rng.choice(NOUNS)}_{rng.choice(PARTS)}.py",
        "command": f"make {verb}-{noun} ENV={rng.choice(('dev', 'staging', 'local'))}",
        "env": f"{area.replace('-', '_').upper()}_{noun.upper()}_{rng.choice(('TTL', 'LIMIT', 'RETRIES', 'TIMEOUT'))}",
        "number": str(rng.choice((3, 5, 10, 30, 50, 100, 250, 1000))),
        "port": str(rng.randint(3000, 9999)),
        "ticket": str(rng.randint(100, 9999)),
        "version": f"v{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "outcome": rng.choice(OUTCOMES).format(
            a=a,
            b=max(1, a // rng.randint(2, 9)),
            p=rng.randint(1, 5),
            m=rng.randint(2, 45),
            n=rng.randint(3, 60),
        ),
    }


def note_text(rng: random.Random, min_words: int = 20, max_words: int = 80) -> str:
    """Sentences about one topic until a drawn length is reached; never outside [min_words, max_words]."""
    target = rng.randint(min_words, max_words)
    slots = _slots(rng)
    words: list[str] = []
    order = rng.sample(SENTENCES, len(SENTENCES))  # no sentence shape twice in one note
    while len(words) < target:
        if rng.random() < 0.35:  # drift to a neighbouring topic now and then, as real notes do
            slots.update({k: v for k, v in _slots(rng).items() if rng.random() < 0.5})
        words += order.pop().format(**slots).split()
    if len(words) > max_words:
        words = words[:max_words]
        words[-1] = words[-1].rstrip(".,;:") + "."
    return " ".join(words)


def generate_notes(count: int, seed: int = 7) -> list[Note]:
    """The same `count` notes for the same seed, on every machine."""
    rng = random.Random(seed)
    start = datetime(2023, 1, 1, tzinfo=timezone.utc)
    notes = []
    for _ in range(count):
        created = start + timedelta(minutes=rng.randint(0, 2 * 365 * 24 * 60))
        notes.append(
            Note(
                text=note_text(rng),
                type=rng.choice(TYPES),
                tags=tuple(sorted(rng.sample(TAGS, rng.randint(0, 3)))),
                importance=round(rng.uniform(0.1, 1.0), 2),
                created=created.strftime("%Y-%m-%dT%H:%M:%SZ"),
            )
        )
    return notes


QUERY_SHAPES = (
    "why does the {area} {part} fail",
    "how to {verb} a {noun} by hand",
    "{tool} timeout in {area}",
    "who owns {path}",
    "what did we decide about {tool} for {area}",
    "`{func}` slow",
    "{env}",
    "{problem}",
    "runbook for {area} alerts",
    "ticket {ticket}",
)


def generate_queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(QUERY_SHAPES).format(**_slots(rng)) for _ in range(count)]


def write_notes(store: Store, notes: list[Note]) -> str | None:
    """Write the notes as memory files without indexing them (a bulk import indexes once).

    dedup is off: it would search the index per note. Returns the path of the first note written.
    """
    from memctl import service

    first_path = None
    for note in notes:
        added = service.add_memory(
            store,
            note.text,
            type=note.type,
            tags=note.tags,
            importance=note.importance,
            created=note.created,
            sync=False,
            dedup=False,
        )
        first_path = first_path or added.path
    return first_path
