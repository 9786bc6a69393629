"""Context blocks for agent hooks: which prompts get none, and what fits a token budget."""

from __future__ import annotations

import pytest

from memctl.core.language.tokens import estimate_tokens
from memctl.core.recall.hook_blocks import BlockItem, fit_block, is_trivial_prompt, memory_line


@pytest.mark.parametrize(
    "prompt",
    [
        "ok",
        "Thanks!",
        "yes",
        "continue",
        "/clear",
        "/compact keep it",
        "lgtm",
        "  go ahead ",
        "好的",
        "fix it",
    ],
)
def test_trivial_prompts_get_no_memories(prompt):
    assert is_trivial_prompt(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "How do we deploy this service?",
        "数据库端口是多少",
        "Refactor parse_config to accept a Path",
    ],
)
def test_real_questions_are_not_trivial(prompt):
    assert not is_trivial_prompt(prompt)


def item(n: int, body: str = "") -> BlockItem:
    return BlockItem(f"id{n}", f"Memory number {n}", "semantic", body or f"Memory number {n}")


def test_block_keeps_items_in_order_within_the_budget():
    items = [item(n, "word " * 40) for n in range(10)]
    block = fit_block("## Heading", items, budget_tokens=150)
    assert block.shown and block.omitted == 10 - len(block.shown)
    assert list(block.shown) == [f"id{n}" for n in range(len(block.shown))]
    assert estimate_tokens(block.markdown) <= 150


def test_a_long_item_is_passed_over_for_a_shorter_one_that_fits():
    items = [item(1, "long " * 400), item(2)]
    block = fit_block("## Heading", items, budget_tokens=100)  # the fence takes ~50
    assert block.shown == ("id2",)


def test_nothing_fits_means_no_block_at_all():
    block = fit_block("## Heading", [item(1, "long " * 400)], budget_tokens=20)
    assert block.markdown == "" and block.shown == () and block.omitted == 1


def test_memory_line_does_not_repeat_the_title_and_stays_on_one_line():
    line = memory_line(
        BlockItem(
            "x1",
            "Deploy with make release",
            "procedural",
            "Deploy with make release.\nThen tag the commit.",
        )
    )
    assert line == "- **Deploy with make release.** Then tag the commit. (procedural, x1)"
