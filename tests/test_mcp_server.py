"""`memctl mcp`: a real MCP client starts the server over stdio, lists and calls its tools."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from memctl.store.forget_journal import journal_path, write_journal

mcp = pytest.importorskip("mcp")


def run(coro):
    return asyncio.run(coro)


async def session_against(store_root, work):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memctl", "--store", str(store_root), "mcp"]
    )
    async with Client(params, cache=None) as client:
        return await work(client)


def payload(result):
    """A tool result's value: structured content when the server sent it, else its text."""
    assert not result.is_error, result.content
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return structured.get("result", structured)
    return json.loads(result.content[0].text)


@pytest.mark.slow
@pytest.mark.model
def test_tools_and_resources_over_stdio(store):
    async def work(client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"recall", "add", "context", "forget"} <= set(tools)
        assert "query" in tools["recall"].input_schema["properties"]

        added = payload(
            await client.call_tool(
                "add",
                {
                    "text": "The staging database listens on port 5433",
                    "type": "semantic",
                    "tags": ["db"],
                },
            )
        )
        memory_id = added["id"]
        assert added["created"] and added["path"].endswith(f"-{memory_id}.md")

        hits = payload(await client.call_tool("recall", {"query": "which port is the database on"}))
        assert hits[0]["id"] == memory_id and hits[0]["tags"] == ["db"]

        context = await client.call_tool("context", {"query": "database port", "budget": 300})
        assert not context.is_error and "5433" in context.content[0].text

        resources = [str(r.uri) for r in (await client.list_resources()).resources]
        assert f"memctl://memory/{memory_id}" in resources and "memctl://memories" in resources
        read = await client.read_resource(f"memctl://memory/{memory_id}")
        assert f"id: {memory_id}" in read.contents[0].text and "port 5433" in read.contents[0].text
        index = json.loads((await client.read_resource("memctl://memories")).contents[0].text)
        assert [entry["id"] for entry in index] == [memory_id]

        # A `memctl forget` killed midway in another process: the server finishes it before
        # its next tool call reads the store, so the memory never reaches the agent.
        doomed = payload(
            await client.call_tool("add", {"text": "The vault host is zebraquokka-7 in rack 12"})
        )
        write_journal(store.state_dir, [doomed["id"]], [])
        hits = payload(await client.call_tool("recall", {"query": "zebraquokka vault host"}))
        assert doomed["id"] not in [hit["id"] for hit in hits]
        assert not journal_path(store.state_dir).exists()
        assert not [p for p in store.root.rglob("*.md") if "zebraquokka" in p.read_text()]

        refused = await client.call_tool(
            "add", {"text": "Lunch is at noon on Fridays", "type": "gossip"}
        )
        assert refused.is_error and "Unknown type 'gossip'" in refused.content[0].text

        secret = payload(
            await client.call_tool(
                "add",
                {
                    "text": "The deploy bot authenticates with ghp_16C7e42F292c6912E7710c838347Ae178B4a",
                    "type": "procedural",
                },
            )
        )
        assert secret["redacted"] == {"github_token": 1}
        secret_text = (
            (await client.read_resource(f"memctl://memory/{secret['id']}")).contents[0].text
        )
        assert "ghp_16C7e42F" not in secret_text and "[REDACTED_GITHUB_TOKEN]" in secret_text
        payload(await client.call_tool("forget", {"id": secret["id"]}))

        payload(await client.call_tool("forget", {"id": memory_id}))
        gone = await client.call_tool("forget", {"id": memory_id})
        assert gone.is_error and memory_id in gone.content[0].text
        return True

    assert run(session_against(store.root, work))
    assert list(store.root.glob("semantic/*.md")) == []
