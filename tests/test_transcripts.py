import json
from pathlib import Path

import pytest

from memctl.agents.transcripts import (
    detect_format,
    read_conversation,
    read_conversation_file,
)
from memctl.core.errors import InvalidMemoryFile
from memctl.core.learning.conversation import Turn

FIXTURES = Path(__file__).parent / "fixtures" / "conversations"


def test_claude_code_transcript_keeps_only_the_visible_conversation():
    turns = read_conversation_file(FIXTURES / "claude_code_session.jsonl")
    text = "\n".join(t.content for t in turns)

    assert [t.role for t in turns] == [
        "user",
        "assistant",
        "assistant",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert turns[0].content.startswith("Hi! My name is Ana")
    assert turns[0].timestamp == "2025-06-02T09:14:41.502Z"
    # What the person and the model said is kept ...
    assert "We decided to use Decimal everywhere money is computed." in text
    assert "I'll start by reading the test and the settlement module." in text
    # ... tool calls, tool output, thinking, injected reminders and bookkeeping are not.
    assert "toolu_" not in text
    assert "212 passed in 41.07s" not in text
    assert "Flaky rounding usually means" not in text
    assert "system-reminder" not in text and "opened the file" not in text
    assert "Caveat" not in text
    assert "/clear" not in text and "local-command" not in text
    assert "Request interrupted" not in text
    assert "Search the repository for other places" not in text  # sub-agent (sidechain) prompt


def test_claude_code_blocks_of_one_message_become_one_turn():
    def line(message_id, second, content):
        return {
            "type": "assistant",
            "timestamp": f"2025-01-01T10:00:0{second}Z",
            "message": {"id": message_id, "role": "assistant", "content": content},
        }

    lines = [
        line("msg_1", 0, [{"type": "text", "text": "First part."}]),
        line("msg_1", 1, [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
        line("msg_1", 2, [{"type": "text", "text": "Second part."}]),
        line("msg_2", 3, "Another message."),
    ]
    turns = read_conversation("\n".join(json.dumps(line) for line in lines))
    assert turns == [
        Turn("assistant", "First part.\n\nSecond part.", "2025-01-01T10:00:00Z"),
        Turn("assistant", "Another message.", "2025-01-01T10:00:03Z"),
    ]


def test_slash_command_arguments_are_what_the_user_typed():
    line = {
        "type": "user",
        "message": {
            "role": "user",
            "content": (
                "<command-name>/review</command-name>\n<command-message>review</command-message>\n"
                "<command-args>I prefer small pull requests</command-args>"
            ),
        },
    }
    turns = read_conversation(json.dumps(line))
    assert turns == [Turn("user", "/review I prefer small pull requests")]


def test_role_content_jsonl_with_parts_tools_and_blank_lines():
    turns = read_conversation_file(FIXTURES / "messages.jsonl")

    assert turns[0] == Turn("system", "You are a coding assistant for the Orbit mobile app team.")
    assert turns[1] == Turn(
        "user", "I'm a mobile developer and I work at Orbit Labs.", "2025-05-20T14:02:11Z"
    )
    # Text parts are joined; the image part is not text.
    assert turns[3].content == (
        "We are adding offline sync to the notes screen.\n\n"
        "I prefer Kotlin coroutines over RxJava for new code."
    )
    assert "base64" not in "".join(t.content for t in turns)
    # The assistant message with only tool calls has no text; the tool reply is kept as a tool turn.
    assert [t.role for t in turns] == [
        "system",
        "user",
        "assistant",
        "user",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


def test_json_array_of_messages():
    text = json.dumps(
        [
            {"role": "human", "content": "Hello"},
            {"role": "ai", "content": "Hi there"},
        ]
    )
    assert read_conversation(text) == [Turn("user", "Hello"), Turn("assistant", "Hi there")]


def test_json_array_error_names_the_line_of_the_bad_item():
    text = '[\n  {"role": "user", "content": "a"},\n  {"text": "no role"}\n]'
    with pytest.raises(InvalidMemoryFile) as error:
        read_conversation(text, source="chat.json")
    assert (error.value.path, error.value.line) == ("chat.json", 3)


def test_plain_text_with_chinese_role_prefixes():
    turns = read_conversation_file(FIXTURES / "chinese.txt")
    assert turns[0] == Turn("user", "你好，我叫李娜，我是前端工程师，负责公司的数据看板项目。")
    assert turns[1].role == "assistant"
    assert len(turns) == 13


def test_plain_text_roles_and_continuation_lines():
    text = (
        "Some notes first.\nUser: I prefer tabs.\nAnd a second line.\n\n"
        "Assistant: Noted.\n**Human:** Thanks"
    )
    assert read_conversation(text) == [
        Turn("user", "Some notes first."),
        Turn("user", "I prefer tabs.\nAnd a second line."),
        Turn("assistant", "Noted."),
        Turn("user", "Thanks"),
    ]


def test_plain_text_without_roles_is_one_user_turn():
    text = "{draft} Remember that the staging DB is on port 5433.\nNothing else."
    assert detect_format(text) == "text"
    assert read_conversation(text) == [Turn("user", text)]
    assert read_conversation("  \n ") == []


def test_malformed_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"role": "user", "content": "I prefer tabs."}\n'
        '{"role": "assistant", "content": "Noted."}\n'
        '{"role": "user", "content": "unterminated\n',
        encoding="utf-8",
    )
    with pytest.raises(InvalidMemoryFile) as error:
        read_conversation_file(path)
    assert error.value.line == 3
    assert error.value.path == str(path)
    assert f"{path}:3:" in str(error.value)
    assert "not valid JSON" in error.value.problem


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[1, 2]", "JSON object"),
        ('{"text": "hello"}', "'role' and 'content'"),
        ('{"role": "user"}', "no 'content'"),
        ('{"role": "user", "content": 42}', "string or a list"),
        ('{"role": "", "content": "x"}', "'role'"),
    ],
)
def test_lines_of_the_wrong_shape_are_reported(line, problem):
    text = '{"role": "user", "content": "ok then"}\n' + line
    with pytest.raises(InvalidMemoryFile) as error:
        read_conversation(text, source="<stdin>")
    assert error.value.line == 2
    assert error.value.path == "<stdin>"
    assert problem in error.value.problem


def test_file_that_is_not_utf8_is_reported(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_bytes(b"User: hello\nUser: caf\xe9\n")
    with pytest.raises(InvalidMemoryFile) as error:
        read_conversation_file(path)
    assert error.value.line == 2


def test_what_memctl_injected_is_not_read_back_as_conversation():
    """A private note memctl showed the agent must not come back through extraction."""
    from memctl.core.trust.fence import fence

    notes = fence("- **Our staging password rotates on Mondays** (semantic, abc; origin user)")
    lines = [
        {"role": "user", "content": f"{notes}\nWe always squash-merge feature branches."},
        {"role": "assistant", "content": f"Noted.\n{notes}"},
    ]
    turns = read_conversation("\n".join(json.dumps(line) for line in lines))
    text = "\n".join(t.content for t in turns)
    assert "squash-merge" in text and "Noted." in text
    assert "staging password" not in text and "memctl-notes" not in text
    plain = read_conversation(f"user: {notes} We deploy on Fridays")
    assert [t.content for t in plain] == ["We deploy on Fridays"]


@pytest.mark.usefixtures("fake_embedder")
def test_extraction_never_turns_an_injected_private_note_into_a_project_memory(store):
    from memctl import service
    from memctl.core.trust.fence import fence
    from memctl.service.extraction import extract
    from memctl.store.files import scan_files

    secret = "We decided to always keep the on-call rota in Dana's private spreadsheet"
    service.add_memory(store, secret, private=True)
    notes = fence(f"- **{secret}** (semantic, abc; origin user)")
    lines = [
        {"role": "user", "content": f"{notes}\nWe decided to always squash-merge feature branches."}
    ]
    extract(store, read_conversation("\n".join(json.dumps(x) for x in lines)), use_llm=False)
    outside_private = [
        (store.root / rel).read_text(encoding="utf-8")
        for rel in scan_files(store.root)
        if not rel.startswith("private/")
    ]
    assert outside_private and not any("spreadsheet" in text for text in outside_private)
