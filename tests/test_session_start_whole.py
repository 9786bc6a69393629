"""The session start shows a small project's whole memory, as an agent file is loaded whole,
and the best of it once it outgrows hooks.always_budget."""

from __future__ import annotations

from memctl import service
from memctl.agents.claude_code import HookPayload
from memctl.agents.claude_code_events import session_start_context
from memctl.config import with_overrides
from memctl.store.hook_state import load_session_state

NOTES = [
    ("Run make lint before you push", "procedural"),
    ("Use pnpm, never npm, in this repository", "preference"),
    ("The billing service owns invoices; the ledger only reads them", "semantic"),
    ("Dev Raghunathan runs the platform and reviews infra changes", "profile"),
]


def start(store, session: str) -> tuple[str, list[str]]:
    payload = HookPayload(event="SessionStart", session_id=session, source="startup")
    markdown = session_start_context(store, payload)
    return markdown, list(load_session_state(store, session).get("shown") or [])


def test_a_store_that_fits_the_budget_is_shown_whole_rules_first(store, fake_embedder):
    ids = {}
    for text, kind in NOTES:
        ids[text] = service.add_memory(store, text, type=kind, sync=False).memory.id
    service.sync_index(store)

    markdown, shown = start(store, "s1")
    assert sorted(shown) == sorted(ids.values())
    assert "## What this project's memory holds" in markdown
    for text in ids:
        assert text in markdown
    assert markdown.index("Use pnpm") < markdown.index("Run make lint") < markdown.index("billing")

    # Past the budget the session start shows the best of them, not a cut whole.
    tight = with_overrides(store, {"hooks": {"always_budget": 30}})
    markdown, shown = start(tight, "s2")
    assert "## What this project's memory holds" not in markdown
    assert len(shown) < len(NOTES)
