"""The prompt hook injects a memory that stands out for the prompt, and nothing when none does."""

from __future__ import annotations

from memctl import service
from memctl.agents.claude_code import HookPayload
from memctl.agents.claude_code_events import prompt_context
from memctl.config import with_overrides
from memctl.core.recall.rare_terms import rarest_shared, term_counts, terms

# A project's rules: every one of them speaks of the parser and its tests, one of changesets.
RULES = [
    "Run the parser tests with cargo test before you push the parser",
    "Keep parser tests next to the parser module they test",
    "Parser tests use snapshot files; review the parser tests' snapshots",
    "Name parser tests after the parser rule they cover",
    "Parser errors need tests that show the parser's message",
    "Every parser change gets tests for the parser's recovery",
    "Document the parser's public functions and their tests",
    "Never skip parser tests in CI; fix the parser instead",
    "Add a changeset file under .changeset for every user-facing change",
]


def test_a_word_one_memory_holds_is_rare_in_a_store_of_any_size():
    counts = term_counts(RULES)
    assert counts.rarity("changeset") == 1.0  # one memory of nine holds it
    assert counts.rarity("parser") < 0.1  # every memory does
    assert rarest_shared(terms("fix the parser tests"), RULES[0], counts) < 0.5
    assert rarest_shared(terms("add a changeset"), RULES[-1], counts) == 1.0
    assert term_counts(RULES[:2]).rarity("cargo") == 1.0  # a store of two: still rare


def hook(store, prompt: str, session: str) -> str:
    payload = HookPayload(event="UserPromptSubmit", session_id=session, prompt=prompt)
    return prompt_context(store, payload)


def test_prompt_hook_abstains_when_nothing_stands_out_and_injects_what_does(store, fake_embedder):
    for rule in RULES:
        service.add_memory(store, rule, dedup=False, sync=False)
    service.sync_index(store)

    # Near every memory by its words, about none in particular: nothing is injected.
    assert hook(store, "speed up the slow parser tests", "s1") == ""
    # A word only one memory holds: that memory, and only it.
    block = hook(store, "add a changeset for the parser error change", "s2")
    assert ".changeset" in block
    assert "cargo test" not in block and "snapshot" not in block

    # With the rarity check off, the same near-everything prompt gets the nearest rules.
    overrides = {"hooks": {"prompt_min_rarity": 0.0, "prompt_min_relevance": 0.0}}
    loose = with_overrides(store, overrides)
    assert "parser" in hook(loose, "speed up the slow parser tests", "s3")


def test_a_memory_in_another_script_is_judged_on_relevance_alone(store, fake_embedder):
    """An English prompt shares no words with a Chinese note: the rare-word check cannot apply."""
    from types import SimpleNamespace

    from memctl.service.retrieval.prompt_selection import rare_term_hits

    for rule in [*RULES, "发布前运行 cargo xtask codegen 生成解析器代码"]:
        service.add_memory(store, rule, dedup=False, sync=False)
    service.sync_index(store)

    def hit(text: str) -> SimpleNamespace:
        return SimpleNamespace(title=text, body="", store="project")

    chinese, common = hit("发布前运行 cargo xtask codegen 生成解析器代码"), hit(RULES[1])
    kept = rare_term_hits(
        [chinese, common], "speed up the slow parser tests", {"project": store}, 0.8
    )
    assert kept == [chinese]
    assert rare_term_hits([common], "speed up the parser tests", {"project": store}, 0.0) == [
        common
    ]


def test_a_clear_answer_is_injected_when_every_memory_shares_the_prompts_words(
    store, fake_embedder
):
    """Three memories about deploys to production: no word of the prompt is rare in the store,
    and the one that answers it still reaches the agent."""
    answer = service.add_memory(
        store,
        "To deploy to production, run make release and then promote the rollout",
        type="procedural",
        dedup=False,
        sync=False,
    ).memory.id
    service.add_memory(
        store, "Deploy freeze: no production deploy during the holidays", dedup=False, sync=False
    )
    service.add_memory(
        store, "Production deploy dashboards live in Grafana", dedup=False, sync=False
    )
    service.sync_index(store)

    block = hook(store, "how do we deploy to production?", "s1")
    assert answer in block and "make release" in block
    never = with_overrides(store, {"hooks": {"prompt_sure_relevance": 1.0}})
    assert hook(never, "how do we deploy to production?", "s2") == ""
