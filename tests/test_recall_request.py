"""One recall request: the CLI options, the engine's wire form and the MCP tool's parameters
all come from the fields declared in memctl.core.recall.recall_fields, and say the same thing."""

import dataclasses

import typer

from memctl.cli.app import build_app
from memctl.core.recall.recall_fields import CLI, MCP, WIRE, fields_of, request_fields
from memctl.mcp.server import recall_signature
from memctl.server.typed import typed_request
from memctl.service.retrieval.use_case import RecallRequest


def recall_command():
    return typer.main.get_command(build_app(["recall"])).commands["recall"]


def test_every_request_field_is_the_requests_own_with_its_default():
    declared = {field.name: field for field in dataclasses.fields(RecallRequest)}
    for spec in request_fields():
        assert spec.name in declared, spec.name
        default = declared[spec.name].default
        if WIRE in spec.faces and default is not dataclasses.MISSING:  # the query is required
            assert default == spec.default, spec.name


def test_the_command_line_options_are_the_declared_fields():
    params = {param.name: param for param in recall_command().params}
    assert list(params) == [spec.name for spec in fields_of(CLI)]
    for spec in fields_of(CLI):
        assert set(params[spec.name].opts) | set(params[spec.name].secondary_opts) >= set(
            spec.flags
        )


def test_each_option_reaches_the_engine_as_the_field_it_sets():
    argv = ["recall", "deploy steps", "-k", "3", "--type", "procedural", "-t", "semantic"]
    argv += ["--tag", "ci", "--agent", "claude", "--mode", "bm25", "--format", "json"]
    argv += ["--include-archived", "--no-user", "--min-relevance", "0.3", "--include-superseded"]
    argv += ["--with-neighbours", "--since", "2025-01-01", "--until", "2026-01-01"]
    argv += ["--as-of", "2025-06-01", "--explain", "--json"]
    fields = typed_request(argv)["request"]
    assert fields == {
        "query": "deploy steps",
        "k": 3,
        "types": ["procedural", "semantic"],
        "tags": ["ci"],
        "agent": "claude",
        "mode": "bm25",
        "output_format": "json",
        "include_archived": True,
        "store_only": True,
        "min_relevance": 0.3,
        "include_superseded": True,
        "with_neighbours": True,
        "since": "2025-01-01",
        "until": "2026-01-01",
        "as_of": "2025-06-01",
        "explain": True,
        "as_json": True,
    }
    request = RecallRequest.from_fields(fields, [("project", None)])  # type: ignore[list-item]
    assert request.types == ("procedural", "semantic") and request.min_relevance == 0.3
    wire = request.to_fields()
    assert {key: value for key, value in fields.items() if key in wire} == wire
    assert RecallRequest.from_fields(wire, [("project", None)]) == request  # type: ignore[list-item]


def test_what_the_engine_cannot_read_stays_a_command_line():
    assert typed_request(["recall", "--path", "src/app.py"]) is None
    assert typed_request(["recall", "q", "-k", "many"]) is None
    assert typed_request(["recall", "q", "--json=yes"]) is None
    assert typed_request(["recall", "q", "--min-relevance", "-1"]) is None


def test_the_mcp_tool_takes_the_fields_declared_for_it():
    assert list(recall_signature().parameters) == [spec.name for spec in fields_of(MCP)]
    assert {"query", "k", "types", "tags", "paths", "include_private"} == set(
        recall_signature().parameters
    )
