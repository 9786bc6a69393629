"""A small project store written for the small-store benchmark: one fictional team's memories.

Fernway is a made-up B2B invoicing product (a Python billing API, a Go ledger, a React web app).
The memories are what such a team would keep: decisions, procedures, preferences, incidents,
people and a glossary. Queries are phrased the way people ask, mostly not in the memory's words;
`gold` lists every memory that answers the query (empty: nothing in the store answers it, and
recall should return nothing). Written by hand for memctl; no part of it comes from a data set.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Note:
    id: str
    type: str
    created: str  # YYYY-MM-DD
    text: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Query:
    text: str
    gold: tuple[str, ...]
    kind: str = "paraphrase"  # paraphrase | lexical | identifier | none (no answer)
    as_of: str | None = None  # the query's date, for time expressions


def _n(id_, type_, created, text, *tags):
    return Note(id_, type_, created, text, tuple(tags))


NOTES: tuple[Note, ...] = (
    # --- decisions ---------------------------------------------------------------------------
    _n(
        "dec-postgres",
        "semantic",
        "2025-01-14",
        "The billing service stores invoices in PostgreSQL 16 (the `billing` database on the "
        "shared RDS cluster). We rejected DynamoDB because invoice totals need transactions "
        "across line items.",
        "database",
        "billing",
    ),
    _n(
        "dec-ledger-go",
        "semantic",
        "2025-01-20",
        "The ledger service is written in Go, not Python: double-entry postings run in a hot "
        "loop and the Python prototype could not keep up with month-end batch volume.",
        "ledger",
        "architecture",
    ),
    _n(
        "dec-kafka",
        "semantic",
        "2025-02-03",
        "Services talk to each other through Kafka topics, never by calling each other's "
        "databases. Topic names are `<domain>.<entity>.<event>`, e.g. `billing.invoice.issued`.",
        "kafka",
        "architecture",
    ),
    _n(
        "dec-money-cents",
        "semantic",
        "2025-02-10",
        "Money is stored as integer minor units (cents) with an ISO 4217 currency code next to "
        "it. Floats for amounts are forbidden everywhere, including in tests and fixtures.",
        "money",
        "conventions",
    ),
    _n(
        "dec-api-versioning",
        "semantic",
        "2025-02-18",
        "The public REST API is versioned in the URL path (/v1/, /v2/). A breaking change gets "
        "a new major version; the old one is supported for 12 months after deprecation.",
        "api",
    ),
    _n(
        "dec-feature-flags",
        "semantic",
        "2025-03-04",
        "Feature flags live in Unleash. A flag must have an owner and a removal date; flags "
        "older than 90 days show up in the weekly cleanup report.",
        "flags",
    ),
    _n(
        "dec-monorepo",
        "semantic",
        "2025-01-08",
        "All services live in one monorepo (fernway/platform) with Bazel; the web app is the "
        "exception and has its own repository because the frontend team ships several times a "
        "day.",
        "repo",
    ),
    _n(
        "dec-auth",
        "semantic",
        "2025-03-12",
        "Customer login goes through Auth0 with SAML for enterprise tenants. Internal tools use "
        "Google Workspace SSO behind the oauth2-proxy sidecar.",
        "auth",
        "security",
    ),
    _n(
        "dec-pdf",
        "semantic",
        "2025-03-25",
        "Invoice PDFs are rendered by a headless Chromium worker from HTML templates, then "
        "stored in S3 under `invoices/<tenant>/<year>/<number>.pdf`. WeasyPrint was dropped "
        "because it mis-rendered right-to-left addresses.",
        "pdf",
        "invoices",
    ),
    _n(
        "dec-tax",
        "semantic",
        "2025-04-02",
        "Sales tax and VAT are computed by the tax-engine service using Avalara; we never "
        "hard-code tax rates. In sandbox tenants the engine returns zero tax.",
        "tax",
    ),
    _n(
        "dec-idempotency",
        "semantic",
        "2025-04-09",
        "Every POST to the public API accepts an Idempotency-Key header; keys are kept for 24 "
        "hours in Redis and a replay returns the stored response.",
        "api",
        "payments",
    ),
    _n(
        "dec-retries",
        "semantic",
        "2025-04-15",
        "Outbound webhooks are retried with exponential backoff for up to 3 days (first retry "
        "after 1 minute, capped at 6 hours between tries), then the endpoint is disabled and "
        "the customer is emailed.",
        "webhooks",
    ),
    _n(
        "dec-observability",
        "semantic",
        "2025-05-06",
        "Metrics and traces go to Datadog, errors to Sentry, logs to Datadog with 15 days of "
        "retention. Alerts page through PagerDuty.",
        "observability",
    ),
    _n(
        "dec-payment-providers",
        "semantic",
        "2025-05-13",
        "Card payments go through Stripe; SEPA direct debit and Dutch iDEAL go through Adyen. "
        "Provider choice is per tenant and stored in `tenant_settings.payment_provider`.",
        "payments",
    ),
    _n(
        "dec-ci",
        "semantic",
        "2025-01-10",
        "CI runs on GitHub Actions; Bazel remote cache on BuildBuddy keeps a full build under "
        "12 minutes.",
        "ci",
    ),
    _n(
        "dec-python-version",
        "semantic",
        "2025-06-03",
        "Python services run on Python 3.12; upgrading to a new minor version is a planned "
        "quarterly task, never done in a feature branch.",
        "python",
    ),
    _n(
        "dec-search",
        "semantic",
        "2025-06-17",
        "Invoice search in the web app uses OpenSearch, fed from Kafka by the indexer worker. "
        "Postgres full-text search was too slow past 20 million invoices.",
        "search",
    ),
    _n(
        "dec-multitenancy",
        "semantic",
        "2025-02-25",
        "Tenants share tables; every row carries `tenant_id` and Postgres row-level security "
        "enforces isolation. A query without a tenant context fails closed.",
        "security",
        "database",
    ),
    # --- procedures --------------------------------------------------------------------------
    _n(
        "proc-deploy",
        "procedural",
        "2025-03-01",
        "To ship to production: merge to main, wait for the green pipeline, then run "
        "`make promote ENV=prod` from the release channel. Argo CD rolls it out as a canary; "
        "promote after 20 minutes if the error budget dashboard is clean.",
        "deploy",
    ),
    _n(
        "proc-rollback",
        "procedural",
        "2025-03-02",
        "Rolling back a bad release: `make rollback ENV=prod TO=<previous tag>`; it reverts the "
        "image tag in the deploy repo and Argo CD syncs within two minutes. Database migrations "
        "are not reverted automatically.",
        "deploy",
    ),
    _n(
        "proc-hotfix",
        "procedural",
        "2025-03-20",
        "Hotfixes branch from the latest release tag, not from main. Open the PR against the "
        "release branch, get one approval from the on-call engineer, then cherry-pick to main.",
        "release",
    ),
    _n(
        "proc-migrations",
        "procedural",
        "2025-02-27",
        "Schema migrations use Alembic in the billing service and golang-migrate in the ledger. "
        "Every migration must be backwards compatible with the previous release: add columns "
        "nullable, backfill in a job, and drop old columns one release later.",
        "database",
    ),
    _n(
        "proc-local-setup",
        "procedural",
        "2025-01-16",
        "Local setup: install Docker and Bazelisk, run `make bootstrap` (it starts Postgres, "
        "Redis and Kafka with docker compose and loads the seed tenant), then `make dev`.",
        "onboarding",
    ),
    _n(
        "proc-tests",
        "procedural",
        "2025-01-22",
        "Run the fast tests with `bazel test //... --config=unit`; integration tests need "
        "`make bootstrap` first and run with `--config=integration`. Snapshot tests are "
        "updated with UPDATE_SNAPSHOTS=1.",
        "testing",
    ),
    _n(
        "proc-rotate-secrets",
        "procedural",
        "2025-04-22",
        "Rotating a database password: create the new secret in AWS Secrets Manager, let "
        "External Secrets sync it (about 1 minute), restart the pods with `kubectl rollout "
        "restart`, then delete the old version after 24 hours.",
        "security",
        "secrets",
    ),
    _n(
        "proc-oncall-handoff",
        "procedural",
        "2025-02-05",
        "On-call handoff happens every Monday at 10:00 in #oncall: the outgoing engineer posts "
        "open incidents, silenced alerts and anything flaky from the past week.",
        "oncall",
    ),
    _n(
        "proc-replay-webhooks",
        "procedural",
        "2025-05-20",
        "To replay failed webhooks for a customer, run `fw webhooks replay --tenant <id> "
        "--since <timestamp>` from the ops toolbox pod; it re-enqueues deliveries that ended "
        "in the dead-letter table.",
        "webhooks",
    ),
    _n(
        "proc-new-service",
        "procedural",
        "2025-06-10",
        "Creating a new service: copy the template in `templates/service-go` or "
        "`templates/service-py`, register it in `deploy/services.yaml`, and ask platform for a "
        "Kafka ACL and a database role.",
        "architecture",
    ),
    _n(
        "proc-refund",
        "procedural",
        "2025-07-01",
        "Manual refunds: support files a REFUND ticket; finance approves in the admin console; "
        "the refund is issued through the original provider and a credit note is generated "
        "automatically.",
        "payments",
        "support",
    ),
    _n(
        "proc-incident",
        "procedural",
        "2025-02-12",
        "During an incident: the first responder declares it in #incidents with `/incident "
        "new`, takes the commander role until handing it over, and a status page update goes "
        "out within 15 minutes for customer-facing impact.",
        "oncall",
        "incidents",
    ),
    _n(
        "proc-postmortem",
        "procedural",
        "2025-02-13",
        "Every SEV1 or SEV2 gets a blameless postmortem within 5 working days, written in the "
        "Notion template and reviewed in Thursday's reliability meeting.",
        "incidents",
    ),
    _n(
        "proc-access",
        "procedural",
        "2025-03-18",
        "Production database access is read-only through Teleport and expires after 8 hours; "
        "write access needs a second approver and is logged in the audit channel.",
        "security",
        "database",
    ),
    _n(
        "proc-release-notes",
        "procedural",
        "2025-08-05",
        "Release notes are drafted from merged PR titles by `make changelog`, edited by the "
        "product manager, and published on the help center every other Tuesday.",
        "release",
    ),
    _n(
        "proc-dependency-updates",
        "procedural",
        "2025-07-15",
        "Renovate opens dependency PRs every Monday; patch updates auto-merge when CI is green, "
        "minor and major updates need a human review.",
        "dependencies",
    ),
    _n(
        "proc-backfill",
        "procedural",
        "2025-06-24",
        "Backfills run as Kubernetes jobs from `jobs/backfill/`, in batches of 1,000 rows with "
        "a sleep between batches, and must be resumable from the last processed id.",
        "database",
    ),
    _n(
        "proc-tenant-delete",
        "procedural",
        "2025-09-02",
        "Deleting a tenant (GDPR erasure): run the `tenant-erase` workflow, which anonymises "
        "invoices we must keep for tax law for 10 years and deletes everything else.",
        "gdpr",
    ),
    # --- preferences -------------------------------------------------------------------------
    _n(
        "pref-ruff",
        "preference",
        "2025-01-09",
        "Python code is formatted with ruff (line length 100) and type-checked with mypy in "
        "strict mode; no black, no isort.",
        "python",
        "style",
    ),
    _n(
        "pref-pytest",
        "preference",
        "2025-01-23",
        "Tests are plain pytest functions with fixtures; no unittest.TestCase classes and no "
        "mocking of our own modules, only of external HTTP calls.",
        "testing",
        "style",
    ),
    _n(
        "pref-pnpm",
        "preference",
        "2025-01-30",
        "The web app uses pnpm, never npm or yarn; commit the lockfile.",
        "web",
    ),
    _n(
        "pref-commit-messages",
        "preference",
        "2025-02-06",
        "Commit messages follow Conventional Commits (feat:, fix:, chore:) with the ticket "
        "number at the end, like `fix: round tax per line (BIL-482)`.",
        "git",
        "style",
    ),
    _n(
        "pref-squash",
        "preference",
        "2025-02-07",
        "Pull requests are squash-merged; keep the branch history tidy but do not force-push "
        "after a review has started.",
        "git",
    ),
    _n(
        "pref-go-errors",
        "preference",
        "2025-03-06",
        "In Go, wrap errors with fmt.Errorf and %w, never panic in request handlers, and return "
        "errors rather than logging and continuing.",
        "go",
        "style",
    ),
    _n(
        "pref-sql-naming",
        "preference",
        "2025-03-11",
        "Tables are plural snake_case (`invoice_lines`), primary keys are UUIDv7 named `id`, "
        "timestamps are `timestamptz` with the suffix `_at`.",
        "database",
        "style",
    ),
    _n(
        "pref-react",
        "preference",
        "2025-04-01",
        "Frontend: function components with hooks, TanStack Query for server state, no Redux; "
        "styling with Tailwind.",
        "web",
        "style",
    ),
    _n(
        "pref-reviews",
        "preference",
        "2025-04-08",
        "Keep pull requests under about 400 changed lines; anything larger gets split or comes "
        "with a design note.",
        "git",
    ),
    _n(
        "pref-logging",
        "preference",
        "2025-05-07",
        "Log in JSON with structlog (Python) or slog (Go); never log card numbers, tokens or "
        "full customer addresses.",
        "observability",
        "security",
    ),
    _n(
        "pref-docs-adr",
        "preference",
        "2025-06-05",
        "Architecture decisions are written as ADRs in `docs/adr/`, numbered, one page each.",
        "docs",
    ),
    _n(
        "pref-agent-generated",
        "preference",
        "2025-07-08",
        "Coding agents must not edit generated files: `api/openapi.gen.ts`, the protobuf "
        "stubs under `gen/`, or anything with a DO NOT EDIT header.",
        "agents",
    ),
    _n(
        "pref-time-utc",
        "preference",
        "2025-02-20",
        "Store and compare times in UTC; convert to the tenant's time zone only when rendering "
        "invoices and emails.",
        "conventions",
    ),
    _n(
        "pref-meetings",
        "preference",
        "2025-08-12",
        "No meetings on Wednesdays: it is the team's focus day.",
        "team",
    ),
    # --- incidents ---------------------------------------------------------------------------
    _n(
        "inc-double-charge",
        "episodic",
        "2025-05-14",
        "Incident BIL-INC-031: some customers were charged twice when Stripe timed out and the "
        "retry lacked the idempotency key. Fixed by passing the invoice id as Stripe's "
        "idempotency key.",
        "incidents",
        "payments",
    ),
    _n(
        "inc-pdf-queue",
        "episodic",
        "2025-05-28",
        "Month-end: the PDF render queue backed up for 6 hours because Chromium workers ran out "
        "of memory on 300-page invoices. We now split invoices over 50 pages and raised the "
        "worker memory limit to 2 GiB.",
        "incidents",
        "pdf",
    ),
    _n(
        "inc-kafka-lag",
        "episodic",
        "2025-06-19",
        "Incident: search results were stale for a day because the indexer consumer group was "
        "stuck on a poison message. Added a dead-letter topic and a lag alert at 10,000 "
        "messages.",
        "incidents",
        "kafka",
        "search",
    ),
    _n(
        "inc-cert-expiry",
        "episodic",
        "2025-07-22",
        "The TLS certificate of the customer webhook sender expired and receivers rejected our "
        "calls for 40 minutes. cert-manager was not renewing it because of a wrong DNS01 "
        "solver; certificates are now monitored in Datadog.",
        "incidents",
        "webhooks",
    ),
    _n(
        "inc-migration-lock",
        "episodic",
        "2025-08-14",
        "A migration that added an index without CONCURRENTLY locked the invoices table for 9 "
        "minutes during business hours. Rule since then: indexes on big tables are created "
        "CONCURRENTLY in a separate migration.",
        "incidents",
        "database",
    ),
    _n(
        "inc-tax-rounding",
        "episodic",
        "2025-09-09",
        "Customers in Germany saw totals off by one cent: tax was rounded on the invoice total "
        "instead of per line. Ticket BIL-482; fixed by rounding per line as the law requires.",
        "incidents",
        "tax",
    ),
    _n(
        "inc-redis-eviction",
        "episodic",
        "2025-10-07",
        "Redis hit maxmemory and evicted idempotency keys early, so a few API retries created "
        "duplicate invoices. Moved idempotency keys to their own Redis with noeviction.",
        "incidents",
        "payments",
    ),
    _n(
        "inc-ledger-drift",
        "episodic",
        "2025-10-21",
        "The nightly reconciliation found the ledger 312 euros off against Adyen payouts. Cause: "
        "chargebacks were posted twice after a consumer restart. Postings now carry a unique "
        "provider event id.",
        "incidents",
        "ledger",
    ),
    _n(
        "inc-disk-full",
        "episodic",
        "2025-11-04",
        "Staging went down because the Postgres volume filled up with WAL after a replication "
        "slot was left behind by a deleted replica. Alert added at 80% disk.",
        "incidents",
        "database",
    ),
    _n(
        "inc-email-bounce",
        "episodic",
        "2025-11-12",
        "Invoice emails to one large tenant bounced for two days because their mail server "
        "rejected our new sending domain before SPF was updated.",
        "incidents",
        "email",
    ),
    # --- people and ownership ----------------------------------------------------------------
    _n(
        "who-amara",
        "profile",
        "2025-01-06",
        "Amara Osei is the engineering manager; ask her about hiring, priorities and the "
        "quarterly roadmap.",
        "people",
    ),
    _n(
        "who-jonas",
        "profile",
        "2025-01-06",
        "Jonas Lindqvist owns the ledger service and the month-end reconciliation jobs.",
        "people",
        "ledger",
    ),
    _n(
        "who-priya",
        "profile",
        "2025-01-07",
        "Priya Raman leads the web app and the design system; frontend reviews go to her.",
        "people",
        "web",
    ),
    _n(
        "who-mateo",
        "profile",
        "2025-01-07",
        "Mateo Ruiz runs the platform team: Kubernetes, Terraform, CI and the Kafka cluster.",
        "people",
        "platform",
    ),
    _n(
        "who-hana",
        "profile",
        "2025-01-08",
        "Hana Kobayashi is the product manager for payments and decides the order of the "
        "payments backlog.",
        "people",
        "payments",
    ),
    _n(
        "who-security",
        "profile",
        "2025-03-03",
        "Security questions and pen-test findings go to Lucas Meyer, our security engineer, "
        "in #security.",
        "people",
        "security",
    ),
    # --- environments and facts --------------------------------------------------------------
    _n(
        "fact-envs",
        "semantic",
        "2025-01-12",
        "Environments: dev (per-branch previews), staging (shared, reset every Sunday) and "
        "prod in eu-west-1 with a warm standby in eu-central-1.",
        "infrastructure",
    ),
    _n(
        "fact-terraform",
        "semantic",
        "2025-01-13",
        "Infrastructure is Terraform in the `infra/` folder, applied by Atlantis from pull "
        "request comments; nobody runs terraform apply from a laptop.",
        "infrastructure",
    ),
    _n(
        "fact-k8s",
        "semantic",
        "2025-01-15",
        "Workloads run on EKS; one namespace per service, and resource requests are required "
        "on every container.",
        "infrastructure",
        "kubernetes",
    ),
    _n(
        "fact-sla",
        "semantic",
        "2025-04-28",
        "The enterprise plan promises 99.9% monthly API availability and support answers within "
        "4 business hours.",
        "customers",
    ),
    _n(
        "fact-rate-limits",
        "semantic",
        "2025-05-02",
        "Public API rate limit: 100 requests per second per tenant, burst 200; the gateway "
        "answers 429 with a Retry-After header.",
        "api",
    ),
    _n(
        "fact-invoice-numbers",
        "semantic",
        "2025-03-27",
        "Invoice numbers are sequential per tenant and per year without gaps (FW-2025-000123); "
        "a number is reserved only when the invoice is finalized, never for drafts.",
        "invoices",
    ),
    _n(
        "fact-currencies",
        "semantic",
        "2025-04-18",
        "We invoice in EUR, GBP, USD, SEK and CHF. Exchange rates come from the ECB once a day "
        "and are frozen on the invoice when it is finalized.",
        "money",
    ),
    _n(
        "fact-data-retention",
        "semantic",
        "2025-09-03",
        "Invoices and credit notes are kept for 10 years for tax law; API request logs for 30 "
        "days; deleted tenants' personal data is erased within 30 days.",
        "gdpr",
    ),
    _n(
        "fact-error-codes",
        "semantic",
        "2025-04-24",
        "API error codes look like FW-E1042: the first digit is the area (1 invoices, 2 "
        "payments, 3 tenants, 4 auth). FW-E2210 means the payment provider declined the "
        "mandate.",
        "api",
        "errors",
    ),
    _n(
        "fact-dunning",
        "semantic",
        "2025-07-29",
        "Dunning: reminders go out 3, 10 and 21 days after the due date; after the third the "
        "account is flagged for collections, never suspended automatically.",
        "invoices",
    ),
    _n(
        "fact-wiki",
        "semantic",
        "2025-01-05",
        "The on-call handbook lives in the wiki under Engineering > Operations.",
        "oncall",
    ),
    _n(
        "fact-staging-reset",
        "semantic",
        "2025-02-16",
        "Staging data is wiped and reseeded every Sunday night; do not keep test tenants there "
        "that you need on Monday.",
        "infrastructure",
    ),
    _n(
        "fact-secrets",
        "semantic",
        "2025-03-13",
        "Secrets are never committed: they live in AWS Secrets Manager and reach pods through "
        "External Secrets; gitleaks runs in pre-commit and CI.",
        "security",
        "secrets",
    ),
    _n(
        "fact-freeze",
        "semantic",
        "2025-11-18",
        "Code freeze from December 15 to January 5: only hotfixes approved by the engineering "
        "manager ship during the freeze.",
        "release",
    ),
    # --- glossary ----------------------------------------------------------------------------
    _n(
        "gl-credit-note",
        "semantic",
        "2025-02-01",
        "Glossary: a credit note cancels all or part of a finalized invoice; finalized invoices "
        "are never edited or deleted, only credited.",
        "glossary",
        "invoices",
    ),
    _n(
        "gl-mandate",
        "semantic",
        "2025-02-01",
        "Glossary: a mandate is the customer's authorisation to collect SEPA direct debits from "
        "their bank account; without an active mandate we cannot debit.",
        "glossary",
        "payments",
    ),
    _n(
        "gl-dunning",
        "semantic",
        "2025-02-01",
        "Glossary: dunning is the process of reminding customers about overdue invoices.",
        "glossary",
        "invoices",
    ),
    _n(
        "gl-posting",
        "semantic",
        "2025-02-01",
        "Glossary: a posting is one debit or credit line in the ledger; every ledger entry has "
        "postings that sum to zero.",
        "glossary",
        "ledger",
    ),
    _n(
        "gl-tenant",
        "semantic",
        "2025-02-01",
        "Glossary: a tenant is one customer organisation using Fernway; a tenant has many "
        "users and one billing profile.",
        "glossary",
    ),
    _n(
        "gl-payout",
        "semantic",
        "2025-02-01",
        "Glossary: a payout is a transfer from the payment provider to a tenant's bank account, "
        "net of fees.",
        "glossary",
        "payments",
    ),
    _n(
        "gl-proforma",
        "semantic",
        "2025-02-01",
        "Glossary: a pro forma invoice is a quote shaped like an invoice; it has no invoice "
        "number and creates no ledger entries.",
        "glossary",
        "invoices",
    ),
    # --- knowledge ---------------------------------------------------------------------------
    _n(
        "kn-big-tables",
        "knowledge",
        "2025-08-20",
        "Lessons from migration incidents: create indexes CONCURRENTLY, backfill in resumable "
        "batches, and never combine a schema change with a data change in one release.",
        "database",
        "lessons",
    ),
    _n(
        "kn-payments-retries",
        "knowledge",
        "2025-10-15",
        "Lessons from payment incidents: every call to a provider carries an idempotency key "
        "derived from our own ids, and idempotency storage must never be evicted.",
        "payments",
        "lessons",
    ),
)


def _q(text, *gold, kind="paraphrase", as_of=None):
    return Query(text, tuple(gold), kind, as_of)


def _none(text):
    return Query(text, (), "none")


# The day the time queries are asked: a week after the store's last memory.
ASKED_ON = "2025-11-27"


def _t(text, *gold):
    return Query(text, tuple(gold), "time", ASKED_ON)


QUERIES: tuple[Query, ...] = (
    # --- time: which of several alike memories, told apart by when it happened ---------------
    _t("which incident did we have in mid-May", "inc-double-charge"),
    _t("what went wrong at the end of May", "inc-pdf-queue"),
    _t("what outage did we have between July 15 and July 31", "inc-cert-expiry"),
    _t("which incident happened in the third week of October", "inc-ledger-drift"),
    _t(
        "what incidents did we have last summer",
        "inc-kafka-lag",
        "inc-cert-expiry",
        "inc-migration-lock",
    ),
    _t("what problem did customers report in early September", "inc-tax-rounding"),
    _t(
        "which decisions did we make between January 10 and January 20",
        "dec-ci",
        "dec-postgres",
        "dec-ledger-go",
    ),
    _t("what did we decide for the public API in the second week of April", "dec-idempotency"),
    _t("what broke on staging in early November", "inc-disk-full"),
    _t("the incident from 12 to 14 November", "inc-email-bounce"),
    _t("what happened to the invoices table in mid-August", "inc-migration-lock"),
    _t("which incident did we have in late October", "inc-ledger-drift"),
    # --- paraphrases: the answer in other words ------------------------------------------------
    _q("which database do invoices live in", "dec-postgres"),
    _q("where are invoices stored", "dec-postgres"),
    _q("why did we not use DynamoDB", "dec-postgres"),
    _q("why is the ledger not written in Python", "dec-ledger-go"),
    _q("what language is the ledger service in", "dec-ledger-go"),
    _q("can the billing service read the ledger's database directly", "dec-kafka"),
    _q("how should I name a new Kafka topic", "dec-kafka"),
    _q("how do we represent amounts of money", "dec-money-cents"),
    _q("is it ok to use a float for a price in a test fixture", "dec-money-cents"),
    _q("how long is an old API version supported after deprecation", "dec-api-versioning"),
    _q("how do we version the public API", "dec-api-versioning"),
    _q("what do I need before creating a feature flag", "dec-feature-flags"),
    _q("where are feature toggles managed", "dec-feature-flags"),
    _q("why does the web app have its own repository", "dec-monorepo"),
    _q("how do enterprise customers sign in", "dec-auth"),
    _q("how are internal tools protected", "dec-auth"),
    _q("how are invoice PDFs generated", "dec-pdf"),
    _q("why did we stop using WeasyPrint", "dec-pdf"),
    _q("where do the PDF files of invoices end up", "dec-pdf"),
    _q("can I hard-code the VAT rate for Germany", "dec-tax"),
    _q("how is sales tax calculated", "dec-tax"),
    _q("what happens if a client sends the same POST request twice", "dec-idempotency"),
    _q("how long do we keep retrying a failing webhook endpoint", "dec-retries"),
    _q("where do errors and traces get reported", "dec-observability"),
    _q("how long are logs retained", "dec-observability"),
    _q("which provider handles SEPA direct debit", "dec-payment-providers"),
    _q("how long does a full build take in CI", "dec-ci"),
    _q("which Python version do the services use", "dec-python-version"),
    _q("why isn't invoice search done in Postgres", "dec-search"),
    _q("how is customer data kept apart between tenants", "dec-multitenancy"),
    _q("how do we ship to production", "proc-deploy"),
    _q("steps to release a new version to prod", "proc-deploy"),
    _q("the release is broken, how do I undo it", "proc-rollback"),
    _q("does rolling back also revert the database migrations", "proc-rollback"),
    _q("where should a hotfix branch start from", "proc-hotfix"),
    _q("how do I drop a column safely", "proc-migrations", "kn-big-tables"),
    _q("which tool runs schema migrations in the ledger", "proc-migrations"),
    _q("how do I get the project running on my laptop", "proc-local-setup"),
    _q("how do I run the integration tests", "proc-tests"),
    _q("how do I refresh snapshot tests", "proc-tests"),
    _q("how do I change the Postgres password", "proc-rotate-secrets"),
    _q("when is the on-call handover", "proc-oncall-handoff"),
    _q("a customer missed webhook deliveries, how do I resend them", "proc-replay-webhooks"),
    _q("how do I start a brand new microservice", "proc-new-service"),
    _q("a customer wants their money back, what is the process", "proc-refund"),
    _q("what do I do first when production is down", "proc-incident"),
    _q("when is a postmortem required", "proc-postmortem"),
    _q("how do I get access to the production database", "proc-access"),
    _q("who writes the release notes and when are they published", "proc-release-notes"),
    _q("do dependency updates merge automatically", "proc-dependency-updates"),
    _q("how should a data backfill be run", "proc-backfill", "kn-big-tables"),
    _q("a customer asked us to delete all their data", "proc-tenant-delete"),
    _q("which formatter and line length for Python", "pref-ruff"),
    _q("should I use black or isort", "pref-ruff"),
    _q("can I write tests as unittest classes", "pref-pytest"),
    _q("is mocking our own modules allowed in tests", "pref-pytest"),
    _q("npm or yarn for the frontend", "pref-pnpm"),
    _q("how should commit messages look", "pref-commit-messages"),
    _q("can I force-push my branch during review", "pref-squash"),
    _q("how should errors be handled in Go code", "pref-go-errors"),
    _q("how do we name database tables and primary keys", "pref-sql-naming"),
    _q("should the frontend use Redux", "pref-react"),
    _q("how big should a pull request be", "pref-reviews"),
    _q("what must never appear in logs", "pref-logging"),
    _q("where do we record architecture decisions", "pref-docs-adr"),
    _q("which files must an AI coding agent never modify", "pref-agent-generated"),
    _q("which time zone should timestamps be stored in", "pref-time-utc"),
    _q("is there a day without meetings", "pref-meetings"),
    _q("have customers ever been charged twice", "inc-double-charge"),
    _q("why were invoice PDFs late at month end", "inc-pdf-queue"),
    _q("why was search showing outdated results", "inc-kafka-lag"),
    _q("what happened when our certificate expired", "inc-cert-expiry"),
    _q("what went wrong when a migration locked a table", "inc-migration-lock"),
    _q("German invoices were off by a cent", "inc-tax-rounding"),
    _q("why did API retries create duplicate invoices", "inc-redis-eviction"),
    _q("the ledger did not match the Adyen payouts", "inc-ledger-drift"),
    _q("why did staging go down", "inc-disk-full"),
    _q("why were invoice emails bouncing", "inc-email-bounce"),
    _q("who is our engineering manager", "who-amara"),
    _q("who owns the ledger", "who-jonas"),
    _q("who should review my frontend changes", "who-priya"),
    _q("who runs Kubernetes and Terraform", "who-mateo"),
    _q("who decides the payments backlog priorities", "who-hana"),
    _q("who do I report a security vulnerability to", "who-security"),
    _q("which AWS region is production in", "fact-envs"),
    _q("can I run terraform apply from my machine", "fact-terraform"),
    _q("do containers need resource requests", "fact-k8s"),
    _q("what availability do we promise enterprise customers", "fact-sla"),
    _q("what is the API rate limit", "fact-rate-limits"),
    _q("can invoice numbers have gaps", "fact-invoice-numbers"),
    _q("which currencies can we invoice in", "fact-currencies"),
    _q("how long must invoices be kept", "fact-data-retention", "proc-tenant-delete"),
    _q("when do payment reminders go out", "fact-dunning"),
    _q("where can I find the on-call handbook", "fact-wiki"),
    _q("why did my test tenant on staging disappear", "fact-staging-reset"),
    _q("where do secrets live", "fact-secrets"),
    _q("when is the end of year code freeze", "fact-freeze"),
    _q("how do I fix a mistake on a finalized invoice", "gl-credit-note"),
    _q("what is a mandate", "gl-mandate"),
    _q("what does dunning mean", "gl-dunning", "fact-dunning"),
    _q("what is a posting in the ledger", "gl-posting"),
    _q("what is a payout", "gl-payout"),
    _q("does a pro forma invoice get an invoice number", "gl-proforma"),
    # --- the memory's own words ------------------------------------------------------------------
    _q("Unleash flag owner removal date", "dec-feature-flags", kind="lexical"),
    _q("Teleport read-only access", "proc-access", kind="lexical"),
    _q("Renovate patch updates", "proc-dependency-updates", kind="lexical"),
    _q("Atlantis terraform", "fact-terraform", kind="lexical"),
    _q("OpenSearch indexer", "dec-search", kind="lexical"),
    _q("cert-manager DNS01", "inc-cert-expiry", kind="lexical"),
    _q("replication slot WAL", "inc-disk-full", kind="lexical"),
    _q("SPF sending domain", "inc-email-bounce", kind="lexical"),
    # --- identifiers -----------------------------------------------------------------------------
    _q("FW-E2210", "fact-error-codes", kind="identifier"),
    _q("what does error FW-E2210 mean", "fact-error-codes", kind="identifier"),
    _q("BIL-INC-031", "inc-double-charge", kind="identifier"),
    _q("BIL-482", "inc-tax-rounding", "pref-commit-messages", kind="identifier"),
    _q("tenant_settings.payment_provider", "dec-payment-providers", kind="identifier"),
    _q("billing.invoice.issued", "dec-kafka", kind="identifier"),
    _q("api/openapi.gen.ts", "pref-agent-generated", kind="identifier"),
    _q("make promote ENV=prod", "proc-deploy", kind="identifier"),
    # --- nothing in the store answers these ------------------------------------------------------
    _none("what is a good recipe for banana bread"),
    _none("who won the football world cup in 2018"),
    _none("recommend a science fiction novel"),
    _none("what's the weather like in Lisbon this weekend"),
    _none("how many calories are in an avocado"),
    _none("translate good morning into Japanese"),
    _none("what is the capital of Australia"),
    _none("how do I train a puppy to sit"),
    _none("best hiking trails near the lake"),
    _none("how tall is Mount Kilimanjaro"),
    _none("rename this variable to something clearer"),
    _none("fix the typo in the heading of this paragraph"),
    _none("explain what a closure is in JavaScript"),
    _none("write a regular expression that matches a hex colour"),
    _none("sort this list of names alphabetically"),
    _none("convert this CSV file to a markdown table"),
    _none("what does the yield keyword do in Python generators"),
    _none("make the button on this page blue"),
    _none("summarise this article in three bullet points"),
    _none("how do I center a div with flexbox"),
    _none("add a docstring to this function"),
    _none("what is the difference between a list and a tuple"),
    _none("thanks, that looks good"),
    _none("where does the office keep the spare umbrellas"),
    _none("what time does the cafeteria close"),
    _none("who lives next door to the office"),
    _none("draw an ASCII art cat"),
    _none("how do plants make oxygen"),
    _none("what is the airspeed velocity of an unladen swallow"),
    _none("play some relaxing music"),
)
