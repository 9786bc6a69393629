"""The recall request's fields, declared once: every face derives its form of the request here.

`memctl recall`'s typer options, the engine's wire form (memctl.server.typed: the client reads
a command line into it, the engine reads it back) and the MCP `recall` tool's parameters are all
generated from `RECALL_FIELDS`; memctl.service.retrieval.use_case.RecallRequest is the typed
value they fill (a test checks the two agree). A field that is not part of the request itself
(how the answer is printed, `--path`) says so with `request=False`.

Plain classes and tuples, no dataclasses or typing: the client process imports this on every
hook call, and each of those imports costs it milliseconds.
"""

from __future__ import annotations

TEXT, INT, FLOAT, LIST, FLAG = "text", "int", "float", "list", "flag"
CLI, WIRE, MCP = "cli", "wire", "mcp"


class RequestField:
    """One field: its name (the request's attribute and the wire key), its kind, its default,
    the command-line flags that set it (none: the positional QUERY), its help, and the faces
    that carry it. `request=False`: read by a face only (output format, --path)."""

    __slots__ = ("name", "kind", "default", "flags", "help", "faces", "request", "metavar")

    def __init__(
        self,
        name: str,
        kind: str,
        default: object,
        flags: tuple[str, ...],
        help: str,
        faces: tuple[str, ...] = (CLI, WIRE),
        request: bool = True,
        metavar: str | None = None,
    ) -> None:
        self.name, self.kind, self.default, self.flags = name, kind, default, flags
        self.help, self.faces, self.request, self.metavar = help, faces, request, metavar

    def __repr__(self) -> str:
        return f"RequestField({self.name!r}, {self.kind!r})"


MODES = ("hybrid", "bm25", "vector")
FORMATS = ("table", "json", "context")

# In the order `memctl recall --help` lists them.
RECALL_FIELDS: tuple[RequestField, ...] = (
    RequestField(
        "query",
        TEXT,
        None,
        (),
        "What you want to remember, in your own words or an exact identifier.",
        faces=(CLI, WIRE, MCP),
        metavar="QUERY",
    ),
    RequestField(
        "paths",
        LIST,
        (),
        ("--path",),
        "A file about to be touched: the memories anchored to it and the best matches for "
        "it (as the action-time hook injects them); repeatable.",
        faces=(CLI, MCP),
        request=False,
    ),
    RequestField(
        "k",
        INT,
        None,
        ("-k", "--limit"),
        "How many memories to return, best first, related or not (unless --min-relevance "
        "is given). Without -k: up to recall.k (5), only those above recall.min_relevance.",
        faces=(CLI, WIRE, MCP),
    ),
    RequestField(
        "types", LIST, (), ("--type", "-t"), "Only this type; repeatable.", (CLI, WIRE, MCP)
    ),
    RequestField(
        "tags", LIST, (), ("--tag",), "Only memories with this tag; repeatable.", (CLI, WIRE, MCP)
    ),
    RequestField("agent", TEXT, None, ("--agent",), "Only memories written by this agent."),
    RequestField("mode", TEXT, "hybrid", ("--mode",), f"Retrieval: {', '.join(MODES)}."),
    RequestField(
        "output_format",
        TEXT,
        "table",
        ("--format", "-f"),
        f"Output: {', '.join(FORMATS)}.",
        request=False,
    ),
    RequestField("include_archived", FLAG, False, ("--include-archived",), "Also search archive/."),
    RequestField(
        "store_only",
        FLAG,
        False,
        ("--store-only", "--no-user"),
        "Read only this store, not the user store beside it.",
    ),
    RequestField(
        "min_relevance",
        FLOAT,
        None,
        ("--min-relevance",),
        "Leave out memories less relevant than this, 0-1 (config recall.min_relevance).",
    ),
    RequestField(
        "include_superseded",
        FLAG,
        False,
        ("--include-superseded",),
        "Also show memories a newer one superseded (marked as such).",
    ),
    RequestField(
        "with_neighbours",
        FLAG,
        False,
        ("--with-neighbours",),
        "Show the memories written just before and after each hit in its session.",
    ),
    RequestField(
        "since",
        TEXT,
        None,
        ("--since",),
        "Only memories dated at or after this (ISO 8601, e.g. 2025-05-01).",
    ),
    RequestField("until", TEXT, None, ("--until",), "Only memories dated before this."),
    RequestField(
        "as_of",
        TEXT,
        None,
        ("--as-of",),
        "The date time words in the query count from ('last week'); default now.",
    ),
    RequestField(
        "explain",
        FLAG,
        False,
        ("--explain",),
        "Also show each candidate's score after each ranking stage, its relevance and why it "
        "was cut (with --json: an object with 'hits' and 'explain'). See docs/recall-pipeline.md.",
    ),
    RequestField("as_json", FLAG, False, ("--json",), "Same as --format json.", request=False),
    RequestField(
        "include_private",
        FLAG,
        False,
        (),
        "Private memories too, when the user asked (else privacy.share_private_with_agents).",
        faces=(MCP,),
    ),
)


def fields_of(face: str) -> tuple[RequestField, ...]:
    return tuple(field for field in RECALL_FIELDS if face in field.faces)


def request_fields() -> tuple[RequestField, ...]:
    return tuple(field for field in RECALL_FIELDS if field.request)
