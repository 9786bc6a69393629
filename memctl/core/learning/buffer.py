"""The conversation buffer's limits: when a session must be trimmed, and which turns go.

A session is over its limits when it has more than `max_turns` exchanges or more than
`max_tokens` tokens. Trimming removes the oldest turns (never system messages) until both
are back under `keep_ratio` of the limits (the seeds' 80%), then a little further so the
buffer does not start with a reply whose question was trimmed away.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PINNED_ROLES = ("system",)


@dataclass(frozen=True)
class BufferLimits:
    max_turns: int = 10
    max_tokens: int = 8000
    keep_ratio: float = 0.8


def exchanges(roles: Sequence[str]) -> int:
    """Exchanges in a buffer: two messages make one; system messages do not count."""
    return math.ceil(sum(1 for role in roles if role not in PINNED_ROLES) / 2)


def answered_questions(roles: Sequence[str]) -> int:
    """User messages that got a reply: what `session end` requires two of."""
    count, waiting = 0, False
    for role in roles:
        if role == "user":
            waiting = True
        elif role in ("assistant", "tool") and waiting:
            count += 1
            waiting = False
    return count


def over_limits(roles: Sequence[str], tokens: Sequence[int], limits: BufferLimits) -> bool:
    return exchanges(roles) > limits.max_turns or sum(tokens) > limits.max_tokens


def plan_trim(roles: Sequence[str], tokens: Sequence[int], limits: BufferLimits) -> list[int]:
    """Indices of the turns to trim, oldest first; empty when the buffer is within its limits."""
    if not over_limits(roles, tokens, limits):
        return []
    message_cap = 2 * math.floor(limits.keep_ratio * limits.max_turns)
    token_cap = limits.keep_ratio * limits.max_tokens
    total = sum(tokens)
    messages = sum(1 for role in roles if role not in PINNED_ROLES)
    trimmable = [i for i, role in enumerate(roles) if role not in PINNED_ROLES]
    removed: list[int] = []
    for i in trimmable:
        if messages <= message_cap and total <= token_cap:
            break
        removed.append(i)
        messages -= 1
        total -= tokens[i]
    # Why: a reply without its question reads as noise; trim up to the next user message.
    rest = [i for i in trimmable if i not in set(removed)]
    if removed and rest and roles[rest[0]] != "user":
        next_user = next((k for k, i in enumerate(rest) if roles[i] == "user"), None)
        if next_user is not None:
            removed.extend(rest[:next_user])
    return removed
