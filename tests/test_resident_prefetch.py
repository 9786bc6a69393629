"""The server's guess of the query a request will embed, made before the command parses it."""

from __future__ import annotations

import json

import typer

from memctl.cli.app import build_app
from memctl.cli.resident import query_to_embed, value_options


def test_the_guess_skips_every_recall_option_value_and_takes_the_query():
    recall = typer.main.get_command(build_app(["recall"])).commands["recall"]
    options = value_options(recall)
    for name in options:  # every option of recall that takes a value, as recall declares it
        argv = ["--store", "s", "recall", name, "5", "--json", "how do we deploy"]
        assert query_to_embed({"argv": argv}, b"", options) == "how do we deploy", name
    assert query_to_embed({"argv": ["recall", "--mode", "bm25", "q"]}, b"", options) is None


def test_the_prompt_hook_guess_is_its_prompt_and_bad_stdin_is_no_guess():
    argv = ["hook", "claude-code", "user-prompt-submit"]
    stdin = json.dumps({"prompt": "  fix the parser  "}).encode()
    assert query_to_embed({"argv": argv}, stdin, frozenset()) == "fix the parser"
    assert query_to_embed({"argv": argv}, b"not json", frozenset()) is None
