"""The server's guess of the query a request will embed, made before the command parses it."""

from __future__ import annotations

import json

import typer

from memctl.cli.app import build_app
from memctl.cli.resident import query_to_embed, recall_limit
from memctl.server.typed import typed_request


def request(*argv: str) -> dict:
    """What the engine receives for `memctl ARGV`: the command line and its typed request."""
    return {"argv": list(argv), "typed": typed_request(list(argv))}


def test_the_guess_is_the_query_the_client_read_in_every_mode():
    recall = typer.main.get_command(build_app(["recall"])).commands["recall"]
    values = [
        name
        for param in recall.params
        if not getattr(param, "is_flag", True) and param.name != "paths"
        for name in param.opts
    ]
    for name in values:  # every option of recall that takes a value, as recall declares it
        argv = ["--store", "s", "recall", name, "5", "--json", "how do we deploy"]
        assert query_to_embed(request(*argv), b"") == "how do we deploy", name
    assert query_to_embed(request("recall", "--mode", "bm25", "q"), b"") == "q"
    assert query_to_embed(request("recall", "--path", "a.py", "q"), b"") is None  # replayed


def test_the_guess_of_recalls_limit_is_the_k_the_client_read():
    def limit(*argv: str) -> int | None:
        return recall_limit(request("-s", "store", "recall", *argv))

    assert (limit("q", "-k", "3"), limit("q", "--limit=9"), limit("--limit", "4", "q")) == (3, 9, 4)
    assert limit("q") is None and limit("q", "-k", "many") is None
    assert limit("--", "-k", "3") is None  # after --, words of the query


def test_the_prompt_hook_guess_is_its_prompt_and_bad_stdin_is_no_guess():
    argv = ["hook", "claude-code", "user-prompt-submit"]
    stdin = json.dumps({"prompt": "  fix the parser  "}).encode()
    assert query_to_embed({"argv": argv}, stdin) == "fix the parser"
    assert query_to_embed({"argv": argv}, b"not json") is None


def test_a_prefetched_text_search_is_taken_only_for_the_same_search_on_the_same_version(
    tmp_path, fake_embedder
):
    """The server starts a recall's full-text search as the request arrives, before the sync:
    recall takes its rows only for the same text, limit and filter on the table version it
    reads itself; a change the sync wrote makes recall search again."""
    from memctl import service
    from memctl.service.retrieval import text_prefetch
    from memctl.service.retrieval.indexing import open_index
    from memctl.service.retrieval.recall import build_filter

    store = service.init_store(tmp_path / "project")
    service.add_memory(store, "We deploy with make release, then promote the rollout")
    service.add_memory(store, "Use pnpm, never npm, for the frontend packages")
    where, query = build_filter(), "deploy release"

    def prefetch_and_wait() -> None:
        text_prefetch.prefetch_text_search(open_index(store), query, 10, where)
        for future in text_prefetch._prefetched.values():  # the search has run before we go on
            future.exception()

    prefetch_and_wait()
    index = open_index(store)
    rows = text_prefetch.take_prefetched(index, query, 10, where)
    assert rows == index.search_text(query, 10, where) and "make release" in rows[0]["text"]
    assert text_prefetch.take_prefetched(index, query, 10, where) is None  # taken once

    prefetch_and_wait()
    assert text_prefetch.take_prefetched(open_index(store), query, 11, where) is None
    assert text_prefetch.take_prefetched(open_index(store), "pnpm", 10, where) is None
    text_prefetch.drop_prefetched()

    prefetch_and_wait()
    (store.root / "semantic" / "train.md").write_text("The deploy release train leaves Fridays\n")
    service.sync_index(store)  # a new table version
    assert text_prefetch.take_prefetched(open_index(store), query, 10, where) is None
    hits = service.recall(
        service.RecallRequest(store, "when does the deploy release train leave", k=1)
    ).hits
    assert hits[0].title.startswith("The deploy release train")
    text_prefetch.drop_prefetched()


def test_a_text_search_the_index_moved_under_is_not_taken(tmp_path, fake_embedder):
    """A write that lands while the prefetched search runs (the command's own sync after a hand
    edit) leaves rows of unknown version: recall searches again and sees the edit."""
    from memctl import service
    from memctl.service.retrieval import text_prefetch
    from memctl.service.retrieval.indexing import open_index
    from memctl.service.retrieval.recall import build_filter

    store = service.init_store(tmp_path / "project")
    service.add_memory(store, "We deploy with make release, then promote the rollout")
    where, query = build_filter(), "deploy release"
    index = open_index(store)
    search = index.search_text

    def search_during_a_write(*args):
        rows = search(*args)
        (store.root / "semantic" / "train.md").write_text(
            "The deploy release train leaves Fridays\n"
        )
        service.sync_index(store)
        index._dataset = None  # as a write through this index leaves it: on the newest version
        return rows

    index.search_text = search_during_a_write  # type: ignore[method-assign]
    text_prefetch.prefetch_text_search(index, query, 10, where)
    for future in text_prefetch._prefetched.values():
        future.exception()
    assert text_prefetch.take_prefetched(index, query, 10, where) is None
    text_prefetch.drop_prefetched()
