"""A conversation as plain values: turns in, memory candidates out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A home folder in a path: /Users/<name>, /home/<name>, C:\Users\<name>. Written as `~` in
# what is learned, so no file git may stage carries the user's name or home layout.
_HOME_PATH = re.compile(
    r"(?<![\w.~/-])(?:/Users/|/home/|[A-Za-z]:\\Users\\)(?!Shared\b)[A-Za-z0-9._-]+(?=[/\\]|\b)"
)


# Claude Code's project folder names encode the path: ~/.claude/projects/-Users-ana-Work-p.
_ENCODED_HOME = re.compile(r"(?<=[/\\])-(?:Users|home)-[A-Za-z0-9._]+(?=-)")


def home_as_tilde(text: str) -> str:
    """`text` with every home folder path written from `~`: /home/ana/p -> ~/p."""
    if "Users" not in text and "home" not in text:
        return text
    return _ENCODED_HOME.sub("-~", _HOME_PATH.sub("~", text))


# Roles the readers produce; other spellings ("human", "ai", ...) are mapped onto these.
ROLES = ("user", "assistant", "system", "tool")


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    timestamp: str | None = None
    # Where the turn is in its transcript (1-based lines, first and last); 0 when unknown.
    # Not part of what the turn is: the same words read from two places are the same turn.
    line: int = field(default=0, compare=False)
    last_line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class ToolCall:
    """One tool call the agent made in a transcript, with how it turned out."""

    name: str  # "Bash", "Edit", ...
    command: str  # Bash: the command line; "" for other tools
    path: str  # Read/Edit/Write: the file; "" otherwise
    line: int  # transcript line of the call
    ok: bool | None = None  # None: no result seen (interrupted, or the transcript ends)
    result_line: int = 0
    output: str = ""  # the start of what the tool returned


@dataclass(frozen=True)
class Candidate:
    """A durable memory proposed from a conversation, before dedup decides ADD/UPDATE/NOOP."""

    text: str
    type: str
    confidence: float
    source: str
    # What the statement is about, so a later statement on the same subject with another value
    # can be recognised as a change ("preference:indentation", "profile:name", ...).
    subject_key: str
    # The sentence as written in the conversation.
    evidence: str
    # Whose words (core.trust.provenance): "user" for a user turn, "agent" for the assistant's.
    origin: str = "user"
    # The transcript lines it came from (first, last); 0 when unknown.
    line: int = 0
    last_line: int = 0
    # Anchors: the commands and files it is about.
    commands: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()


def render_turns(turns: list[Turn]) -> str:
    """The conversation as `role: text` lines, the form summaries and LLM prompts read."""
    return "\n".join(f"{turn.role}: {turn.content}" for turn in turns)
