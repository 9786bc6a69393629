from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import typer
from rich.markup import escape
from rich.table import Table

from memctl.cli.output import handles_errors, print_json, stdout, warn_problems
from memctl.cli.state import current_stores, store_only_option
from memctl.config import Store
from memctl.core.errors import UsageError
from memctl.core.fence import fence, neutralise, note_label
from memctl.core.memory import after_title
from memctl.core.terminal import printable
from memctl.core.text import clip
from memctl.service.provenance import Gate, gate_for
from memctl.service.retrieval.recall import MODES, Hit
from memctl.service.retrieval.use_case import RecallRequest, recall
from memctl.store.provenance_ledger import Ledger

FORMATS = ("table", "json", "context")
EXPLAIN_DEPTH = 3  # candidates explained per hit shown (the cut ones below the hits too)


def snippet(text: str, limit: int = 160) -> str:
    return clip(text, limit)


def focused_snippet(text: str, query: str, limit: int = 160) -> str:
    """Like snippet, but starting shortly before the first query word the text contains."""
    flat = " ".join(text.split())
    lower = flat.lower()
    found = [i for word in re.findall(r"\w{3,}", query.lower()) if (i := lower.find(word)) >= 0]
    if len(flat) <= limit or not found or min(found) < limit // 2:
        return snippet(flat, limit)
    start = flat.rfind(" ", 0, min(found) - limit // 4) + 1
    return "…" + snippet(flat[start:], limit - 1)


def _status_lines(hit: Hit) -> list[str]:
    """Which memory is current when one replaced another, and when the memory happened."""
    lines = []
    if hit.superseded_by:
        lines.append(f"superseded by {escape(hit.superseded_by)} (not current)")
    if hit.supersedes:
        lines.append(f"current; supersedes {escape(', '.join(hit.supersedes))}")
    return lines


def context_block(query: str, hits: list[Hit], gates: dict[str, Gate] | None = None) -> str:
    """Markdown to paste into a prompt, fenced as notes (core.fence): one bullet per memory,
    body kept whole (for a long, chunked memory: its best-matching chunk and where the whole
    text is). Quarantined memories are left out, and counted."""
    gates = gates or {}
    held = [hit for hit in hits if _gate(gates, hit).quarantined(hit.memory)]
    hits = [hit for hit in hits if hit not in held]
    lines = [f"## Memories relevant to: {neutralise(query)}", ""]
    if not hits:
        lines.append("_No relevant memories._")
    for hit in hits:
        tags = f" [{neutralise(', '.join(hit.tags))}]" if hit.tags else ""
        mine = ", user store" if getattr(hit, "store", None) == "user" else ""
        label = note_label(_gate(gates, hit).origin(hit.memory), hit.date or "")
        lines.append(
            f"- **{neutralise(hit.title)}** ({hit.type}, id {hit.id}, {label}{mine}){tags}"
        )
        lines.extend(f"  _{line}_" for line in _status_lines(hit))
        body = neutralise((hit.snippet or hit.body).strip())
        if hit.snippet:
            lines.append(f"  (excerpt of a long memory; full text in {hit.path})")
        if body and body != hit.title:
            lines.extend(f"  {line}" if line else "" for line in body.splitlines())
        for neighbour in hit.neighbours:
            where = "before" if neighbour["offset"] < 0 else "after"
            lines.append(f"  ({where}: {neutralise(neighbour['body'])})")
    if held:
        lines += ["", f"_{len(held)} quarantined memory(ies) left out: see `memctl review`._"]
    return fence("\n".join(lines).rstrip())


def _gate(gates: dict[str, Gate], hit: Hit) -> Gate:
    label = getattr(hit, "store", "project")
    return gates.get(label) or gates.get("project") or Gate(Ledger())


def _provenance(gate: Gate, hit: Hit) -> dict:
    """The JSON keys recall adds to a hit: its origin, trust and quarantine (None if not)."""
    return {
        "origin": gate.origin(hit.memory),
        "trust": gate.trust(hit.memory),
        "quarantined": gate.quarantine_reason(hit.memory),
    }


def changing_stages(trace: dict) -> list[str]:
    """The stages that changed some candidate's score (fusion always): the others add columns
    of repeated numbers."""
    stages = trace["stages"]
    kept = stages[:1]
    for before, stage in zip(stages, stages[1:], strict=False):
        if any(
            item["scores"].get(stage) != item["scores"].get(before) for item in trace["candidates"]
        ):
            kept.append(stage)
    return kept


def print_explain(traces: list[dict]) -> None:
    """One table per store: each candidate's score after each stage that changed one, its
    relevance and why it was cut (docs/recall-pipeline.md)."""
    for trace in traces:
        stages = changing_stages(trace)
        about = trace["query"]
        read = ", ".join(
            f"{key} {value}" for key, value in about.items() if value not in (None, [], "")
        )
        stdout.print(
            f"[bold]{escape(trace['store'])} store[/] ({escape(read)}); stages: "
            + escape(", ".join(trace["stages"])),
            markup=True,
        )
        table = Table(box=None, pad_edge=False)
        for column in ("#", "id", *stages, "relevance", "cut"):
            table.add_column(column, justify="left" if column in ("id", "cut") else "right")
        for item in trace["candidates"]:
            scores = item["scores"]
            cells = [str(item["rank"]), item["id"]]
            cells += [f"{scores[stage]:.3f}" if stage in scores else "-" for stage in stages]
            relevance = item["relevance"]
            cells += ["" if relevance is None else f"{relevance:.2f}", item["cut"] or "hit"]
            table.add_row(*cells)  # plain text: the console reads no markup by default
        stdout.print(table)


@dataclass(frozen=True)
class RecallOptions:
    """What `memctl recall QUERY ...` asks, as the command line or a typed request gives it."""

    query: str | None
    k: int | None = None
    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    agent: str | None = None
    mode: str = "hybrid"
    output_format: str = "table"
    include_archived: bool = False
    store_only: bool = False
    min_relevance: float | None = None
    include_superseded: bool = False
    with_neighbours: bool = False
    since: str | None = None
    until: str | None = None
    as_of: str | None = None
    explain: bool = False
    as_json: bool = False


def answer_recall(
    options: RecallOptions, stores_for: Callable[[bool], list[tuple[str, Store]]]
) -> None:
    """Recall and print the answer: the in-process command and the engine's typed request
    alike. `stores_for(store_only)` gives the stores to read (the command opens them; the
    engine has them open)."""
    if options.query is None:
        raise UsageError("Give a QUERY to recall, or --path FILE.")
    if options.output_format not in FORMATS:
        raise UsageError(
            f"Unknown --format '{options.output_format}'. Choose one of: {', '.join(FORMATS)}."
        )
    stores = stores_for(options.store_only)
    result = recall(
        RecallRequest(
            store=stores[0][1],
            query=options.query,
            k=options.k,
            mode=options.mode,
            types=options.types,
            tags=options.tags,
            agent=options.agent,
            include_archived=options.include_archived,
            min_relevance=options.min_relevance,
            include_superseded=options.include_superseded,
            with_neighbours=options.with_neighbours,
            since=options.since,
            until=options.until,
            as_of=options.as_of,
            stores=stores,
            explain=options.explain,
        )
    )
    warn_problems(result.problems)
    hits = result.hits
    gates = {label: gate_for(each) for label, each in stores}
    depth = max(len(hits), 1) * EXPLAIN_DEPTH
    if options.as_json or options.output_format == "json":
        listed = [{**hit.to_dict(), **_provenance(_gate(gates, hit), hit)} for hit in hits]
        print_json(
            {"hits": listed, "explain": result.explain(depth)} if options.explain else listed
        )
        return
    if options.explain:
        print_explain(result.explain(depth))
    if options.output_format == "context":
        stdout.out(printable(context_block(options.query, hits, gates)), end="")
    else:
        if not hits:
            stdout.print("No relevant memories.")
            return
        federated = len(stores) > 1
        table = Table(box=None, pad_edge=False)
        for column in ("relevance", "id", "type", *(["store"] if federated else []), "memory"):
            table.add_column(column)
        for hit in hits:
            shown = (
                focused_snippet(hit.snippet, options.query) if hit.snippet else snippet(hit.body)
            )
            # Why: a derived title is the body's opening; printing both says it twice.
            rest = shown if hit.snippet else snippet(after_title(hit.title, hit.body))
            said = [rest] if rest else []
            lines = [f"[bold]{escape(hit.title)}[/]", *map(escape, said), *_status_lines(hit)]
            held = _gate(gates, hit).quarantine_reason(hit.memory)
            if held:
                origin = escape(_gate(gates, hit).origin(hit.memory))
                lines.append(
                    f"[bold red]QUARANTINED[/] (origin {origin}: {escape(held)}); "
                    "never injected: memctl review"
                )
            lines += [
                f"[dim]{'before' if n['offset'] < 0 else 'after'}: {escape(snippet(n['body']))}[/]"
                for n in hit.neighbours
            ]
            where = [getattr(hit, "store", "project")] if federated else []
            cells = [
                f"{hit.relevance:.2f}",
                escape(hit.id),
                escape(hit.type),
                *where,
                "\n".join(lines),
            ]
            # Why made Text here: rich would parse each cell's markup twice (to measure the
            # columns, then to draw them); the same Text either way, a quarter less work.
            table.add_row(
                *(stdout.render_str(cell, highlight=False, markup=True) for cell in cells)
            )
        stdout.print(table)


@handles_errors
def recall_command(
    ctx: typer.Context,
    query: str = typer.Argument(
        None,
        help="What you want to remember, in your own words or an exact identifier.",
        metavar="QUERY",
    ),
    paths: list[str] = typer.Option(
        [],
        "--path",
        help="A file about to be touched: the memories anchored to it and the best "
        "matches for it (as the action-time hook injects them); repeatable.",
    ),
    k: int = typer.Option(
        None,
        "-k",
        "--limit",
        help="How many memories to return, best first, related or not (unless "
        "--min-relevance is given). Without -k: up to recall.k (5), only those above "
        "recall.min_relevance.",
    ),
    types: list[str] = typer.Option([], "--type", "-t", help="Only this type; repeatable."),
    tags: list[str] = typer.Option([], "--tag", help="Only memories with this tag; repeatable."),
    agent: str = typer.Option(None, "--agent", help="Only memories written by this agent."),
    mode: str = typer.Option("hybrid", "--mode", help=f"Retrieval: {', '.join(MODES)}."),
    output_format: str = typer.Option(
        "table", "--format", "-f", help=f"Output: {', '.join(FORMATS)}."
    ),
    include_archived: bool = typer.Option(
        False, "--include-archived", help="Also search archive/."
    ),
    store_only: bool = store_only_option(),
    min_relevance: float = typer.Option(
        None,
        "--min-relevance",
        help="Leave out memories less relevant than this, 0-1 (config recall.min_relevance).",
    ),
    include_superseded: bool = typer.Option(
        False,
        "--include-superseded",
        help="Also show memories a newer one superseded (marked as such).",
    ),
    with_neighbours: bool = typer.Option(
        False,
        "--with-neighbours",
        help="Show the memories written just before and after each hit in its session.",
    ),
    since: str = typer.Option(
        None,
        "--since",
        help="Only memories dated at or after this (ISO 8601, e.g. 2025-05-01).",
    ),
    until: str = typer.Option(None, "--until", help="Only memories dated before this."),
    as_of: str = typer.Option(
        None,
        "--as-of",
        help="The date time words in the query count from ('last week'); default now.",
    ),
    explain: bool = typer.Option(
        False,
        "--explain",
        help="Also show each candidate's score after each ranking stage, its relevance and "
        "why it was cut (with --json: an object with 'hits' and 'explain'). See docs/recall-pipeline.md.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Find memories by meaning and by exact words (vector + BM25, fused).

    Without -k, at most recall.k memories and only those relevant enough: a query nothing
    in the store is about returns nothing. With -k N, the N best (each with its relevance). Time words in the query ("last week", "between May 3 and May 9",
    "mid-August", "last summer", 上周, 5月初) favour memories of that time; --since and
    --until keep only those. In a conversation stored turn by turn ("Caroline: ..."), a
    question naming one speaker favours that speaker's own turns. Asked when or where
    ("When did we move CI?", 哪里), memories that say a time or a place rank higher.
    --explain shows how each candidate ranked, stage by stage (docs/recall-pipeline.md).
    Example: memctl recall "how do we deploy" -k 3 --format context
    """
    if paths:
        from memctl.cli.commands.anchors import path_recall

        return path_recall(
            ctx, paths, query or "", k, store_only, as_json or output_format == "json"
        )
    options = RecallOptions(
        query=query,
        k=k,
        types=tuple(types),
        tags=tuple(tags),
        agent=agent,
        mode=mode,
        output_format=output_format,
        include_archived=include_archived,
        store_only=store_only,
        min_relevance=min_relevance,
        include_superseded=include_superseded,
        with_neighbours=with_neighbours,
        since=since,
        until=until,
        as_of=as_of,
        explain=explain,
        as_json=as_json,
    )
    answer_recall(options, lambda only: current_stores(ctx, only))


def register(app: typer.Typer) -> None:
    app.command("recall")(recall_command)
