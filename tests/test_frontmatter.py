from __future__ import annotations

import pytest

from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.frontmatter import parse_memory, render_memory
from memctl.core.files.memory import Memory


def sample() -> Memory:
    return Memory(
        id="1m80k2c9a7qz",
        title="Deploy: blue-green on Kubernetes",
        type="procedural",
        tags=["deploy", "k8s"],
        importance=0.8,
        created="2026-01-02T03:04:05Z",
        updated="2026-01-02T03:04:05Z",
        relations=[{"type": "derived_from", "target": "1m80k71mgk36"}],
        body="Run `make release`.\n\n- then promote: `kubectl argo rollouts promote api`\n",
        extra={"mentions": 2, "speaker": "Ana"},
    )


def test_render_parse_render_is_byte_stable():
    first = render_memory(sample())
    again = render_memory(parse_memory("x.md", first, "fallback", "semantic"))
    assert again == first
    assert render_memory(sample()) == first


def test_parse_keeps_every_field_and_unknown_keys():
    memory = parse_memory("x.md", render_memory(sample()), "fallback", "semantic")
    assert memory.title == "Deploy: blue-green on Kubernetes"
    assert memory.type == "procedural"
    assert memory.tags == ["deploy", "k8s"]
    assert memory.importance == 0.8
    assert memory.relations == [{"type": "derived_from", "target": "1m80k71mgk36"}]
    assert memory.extra == {"mentions": 2, "speaker": "Ana"}
    assert "make release" in memory.body


def test_hand_written_file_with_only_a_body_takes_defaults():
    memory = parse_memory("notes/deploy.md", b"We ship on Tuesdays.\n", "deploy", "procedural")
    assert memory.id == "deploy"
    assert memory.type == "procedural"
    assert memory.body == "We ship on Tuesdays.\n"
    assert memory.display_title == "We ship on Tuesdays."


def test_hand_written_dates_are_accepted():
    raw = b"---\ntitle: Old note\ncreated: 2024-01-05\nupdated: 2024-01-06 10:00:00\n---\nBody\n"
    memory = parse_memory("a.md", raw, "a", "semantic")
    assert memory.created == "2024-01-05"
    assert memory.updated == "2024-01-06T10:00:00Z"


@pytest.mark.parametrize(
    ("raw", "line", "words"),
    [
        (b"---\ntitle: ok\ntags: [a, b\n---\nbody\n", 3, "YAML"),
        (
            b"---\ntitle: ok\n---\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> branch\n",
            4,
            "conflict",
        ),
        (b"---\ntitle: ok\n---\nline two\n\xff\xfe broken\n", 5, "UTF-8"),
        (b"\x89PNG\r\n\x1a\n\x00\x00binary", 3, "binary"),
        (b"---\ntitle: ok\nimportance: lots\n---\nbody\n", 3, "number"),
        (b"---\ntype: memo\n---\nbody\n", 2, "type"),
        (b"---\ntitle: never closed\nbody\n", 1, "never closed"),
    ],
)
def test_malformed_files_name_the_line(raw, line, words):
    with pytest.raises(InvalidMemoryFile) as info:
        parse_memory("bad.md", raw, "bad", "semantic")
    assert info.value.line == line
    assert words.lower() in info.value.problem.lower()
    assert str(info.value).startswith(f"bad.md:{line}: ")
