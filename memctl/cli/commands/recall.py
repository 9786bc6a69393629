from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from memctl.cli.output import handles_errors, print_json, stdout, warn_problems
from memctl.cli.state import current_stores
from memctl.config import Store
from memctl.core.errors import UsageError
from memctl.core.files.memory import after_title
from memctl.core.language.text import clip
from memctl.core.recall.recall_fields import (
    CLI,
    FLAG,
    FLOAT,
    FORMATS,
    INT,
    LIST,
    TEXT,
    RequestField,
    fields_of,
)
from memctl.core.trust.fence import fence, neutralise, note_label
from memctl.core.trust.terminal import printable
from memctl.service.provenance import Gate, gate_for, injectable
from memctl.service.retrieval.recall import Hit
from memctl.service.retrieval.use_case import RecallRequest, recall
from memctl.store.provenance_ledger import Ledger

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


def hits_markdown(query: str, hits: list[Hit], gates: dict[str, Gate] | None = None) -> str:
    """Markdown to paste into a prompt, fenced as notes (core.trust.fence): one bullet per memory,
    body kept whole (for a long, chunked memory: its best-matching chunk and where the whole
    text is). Quarantined memories are left out, and counted."""
    known = gates or {}
    gates = {_store(hit): _gate(known, hit) for hit in hits}
    origins = {id(hit): origin for hit, origin in injectable(hits, gates)}
    held = [hit for hit in hits if id(hit) not in origins]
    hits = [hit for hit in hits if id(hit) in origins]
    lines = [f"## Memories relevant to: {neutralise(query)}", ""]
    if not hits:
        lines.append("_No relevant memories._")
    for hit in hits:
        tags = f" [{neutralise(', '.join(hit.tags))}]" if hit.tags else ""
        mine = ", user store" if getattr(hit, "store", None) == "user" else ""
        label = note_label(origins[id(hit)], hit.date or "")
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


def _store(hit: Hit) -> str:
    return getattr(hit, "store", "project")


def _gate(gates: dict[str, Gate], hit: Hit) -> Gate:
    return gates.get(_store(hit)) or gates.get("project") or Gate(Ledger())


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


def answer_recall(
    fields: dict[str, Any], stores_for: Callable[[bool], list[tuple[str, Store]]]
) -> None:
    """Recall and print the answer: the in-process command and the engine's typed request
    alike. `fields` are the request's fields by name (memctl.core.recall.recall_fields) as the command
    line or the engine's wire form gives them; `stores_for(store_only)` gives the stores to read
    (the command opens them; the engine has them open)."""
    query = fields.get("query")
    output_format = fields.get("output_format") or "table"
    as_json = bool(fields.get("as_json")) or output_format == "json"
    explain = bool(fields.get("explain"))
    if query is None:
        raise UsageError("Give a QUERY to recall, or --path FILE.")
    if output_format not in FORMATS:
        raise UsageError(
            f"Unknown --format '{output_format}'. Choose one of: {', '.join(FORMATS)}."
        )
    stores = stores_for(bool(fields.get("store_only")))
    result = recall(RecallRequest.from_fields(fields, stores))
    warn_problems(result.problems)
    hits = result.hits
    gates = {label: gate_for(each) for label, each in stores}
    depth = max(len(hits), 1) * EXPLAIN_DEPTH
    if as_json:
        listed = [{**hit.to_dict(), **_provenance(_gate(gates, hit), hit)} for hit in hits]
        print_json({"hits": listed, "explain": result.explain(depth)} if explain else listed)
        return
    if explain:
        print_explain(result.explain(depth))
    if output_format == "context":
        stdout.out(printable(hits_markdown(query, hits, gates)), end="")
    else:
        if not hits:
            stdout.print("No relevant memories.")
            return
        federated = len(stores) > 1
        table = Table(box=None, pad_edge=False)
        for column in ("relevance", "id", "type", *(["store"] if federated else []), "memory"):
            table.add_column(column)
        for hit in hits:
            shown = focused_snippet(hit.snippet, query) if hit.snippet else snippet(hit.body)
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


def recall_command(ctx: typer.Context, **fields: Any) -> None:
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
    if fields["paths"]:
        from memctl.cli.commands.anchors import path_recall

        as_json = fields["as_json"] or fields["output_format"] == "json"
        return path_recall(
            ctx, fields["paths"], fields["query"] or "", fields["k"], fields["store_only"], as_json
        )
    answer_recall(fields, lambda only: current_stores(ctx, only))


KIND_TYPES: dict[str, Any] = {TEXT: str, INT: int, FLOAT: float, LIST: list[str], FLAG: bool}


def _parameter(spec: RequestField) -> inspect.Parameter:
    """The typer parameter of one request field, from its declaration."""
    if spec.flags:
        default = list(spec.default) if spec.kind == LIST else spec.default  # type: ignore[call-overload]
        info = typer.Option(default, *spec.flags, help=spec.help)
    else:
        info = typer.Argument(spec.default, help=spec.help, metavar=spec.metavar)
    return inspect.Parameter(
        spec.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=KIND_TYPES[spec.kind]
    )


def _with_fields_as_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command(ctx, **fields)` with the recall fields' typer options as its signature."""
    context = inspect.Parameter(
        "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context
    )
    parameters = [context, *(_parameter(spec) for spec in fields_of(CLI))]
    wrapped = handles_errors(command)
    wrapped.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    wrapped.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapped


recall_command = _with_fields_as_options(recall_command)


def register(app: typer.Typer) -> None:
    app.command("recall")(recall_command)
