from __future__ import annotations

import typer

from memctl.cli.output import handles_errors, print_json, write_text
from memctl.cli.state import current_stores, store_only_option
from memctl.core.errors import UsageError
from memctl.service.retrieval.context import build_context


@handles_errors
def context_command(
    ctx: typer.Context,
    query: str = typer.Argument(
        None,
        help="What the next call is about (default: the task goal or last user turn).",
        metavar="QUERY",
    ),
    budget: int = typer.Option(
        None, "--budget", "-b", help="Token budget (config context.budget, 2000)."
    ),
    session: str = typer.Option(
        None, "--session", "-S", help="Include this session's summary and recent turns."
    ),
    store_only: bool = store_only_option(),
    include_private: bool = typer.Option(
        None,
        "--include-private/--no-private",
        help="Include private memories (default: no, unless config.yaml sets "
        "privacy.share_private_with_agents).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the parts separately as JSON."),
) -> None:
    """Assemble what an agent should see before its next call, as Markdown under a token budget.

    The same store, state and query always give the same bytes.

    Example: memctl context "database migration" --session s1 --budget 1500
    """
    if budget is not None and budget < 50:
        raise UsageError("--budget must be at least 50 tokens.")
    from memctl.agents.action_events import always_block, one_fence
    from memctl.core.language.tokens import estimate_tokens
    from memctl.service.retrieval.federated import user_store_of

    stores = current_stores(ctx, store_only)
    store, user_store = stores[0][1], user_store_of(stores)
    budget = budget if budget is not None else store.settings.context.budget
    # Why: the same rules the SessionStart block opens with (`apply: always`), in its share.
    rules, rule_ids = always_block(
        store, user_store, min(budget // 2, store.settings.hooks.always_budget)
    )
    result = build_context(
        store,
        query=query,
        budget=max(50, budget - estimate_tokens(rules)),
        session_id=session,
        user_store=user_store,
        include_private=include_private,
    )
    markdown = one_fence(rules, result.markdown) if rules else result.markdown
    if as_json:
        print_json({**result.to_dict(), "markdown": markdown, "rules": list(rule_ids)})
    else:
        write_text(markdown)


def register(app: typer.Typer) -> None:
    app.command("context")(context_command)
