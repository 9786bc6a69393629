"""Where a memory's words came from (`origin`) and how far they are trusted.

`origin` is a front matter key kept in `Memory.extra` (so a memory without one renders byte for
byte as before). Its values:

    user            typed by the user (`memctl add`, a prompt the user submitted)
    agent           the agent's own words (MCP `remember`, its turns in a transcript)
    tool:<name>     a tool's result (a Read, a WebFetch, a shell command's output)
    file:<path>     read from a file
    url:<url>       fetched from the web
    import:<file>   `memctl import` of a file
    git:<author>    a teammate's commit brought the file (recorded locally on merge/pull)

`user` and `agent` are trusted; every other origin is untrusted, as is a value memctl cannot
read (fail closed). A memory written before origins existed has none: its origin is read from
`source` (`external_data`, what agent-file imports wrote, is `import`; the rest `user`/`agent`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

TRUSTED = "trusted"
UNTRUSTED = "untrusted"
TRUSTED_KINDS = ("user", "agent")
DETAILED_KINDS = ("tool", "file", "url", "import", "git")
KINDS = TRUSTED_KINDS + DETAILED_KINDS
ORIGIN_KEY = "origin"
MAX_DETAIL = 200

# Legacy memories (no `origin`): what their `source` says about who wrote the words.
_LEGACY = {
    "explicit_user_input": "user",
    "corrected_memory": "user",
    "implicit_inference": "agent",
    "system_generated": "agent",
    "external_data": "import",
}


def make_origin(kind: str, detail: str = "") -> str:
    """`kind` or `kind:detail`, the detail on one line and cut to MAX_DETAIL characters."""
    if kind not in KINDS:
        raise ValueError(f"unknown origin kind '{kind}'; expected one of {', '.join(KINDS)}")
    detail = " ".join(str(detail).split())[:MAX_DETAIL]
    if kind in TRUSTED_KINDS or not detail:
        return kind
    return f"{kind}:{detail}"


def check_origin(value: Any) -> str:
    """A valid origin as written in a file; ValueError names what is wrong."""
    text = str(value).strip() if value is not None else ""
    kind, _, detail = text.partition(":")
    if kind not in KINDS:
        raise ValueError(f"'origin' is '{text[:80]}'; expected user, agent or one of {_kinds()}")
    if kind in TRUSTED_KINDS and detail:
        raise ValueError(f"'origin' {kind} takes no ':detail' (got '{text[:80]}')")
    return make_origin(kind, detail)


def _kinds() -> str:
    return ", ".join(f"{kind}:<...>" for kind in DETAILED_KINDS)


def origin_kind(origin: str) -> str:
    return origin.partition(":")[0]


def trust_of(origin: str) -> str:
    """`trusted` for the user's and the agent's own words; anything else (or unreadable) not."""
    try:
        kind = origin_kind(check_origin(origin))
    except ValueError:
        return UNTRUSTED
    return TRUSTED if kind in TRUSTED_KINDS else UNTRUSTED


def recorded_origin(memory: Any) -> str | None:
    """The origin written in the memory's front matter, as written; None when it has none."""
    value = memory.extra.get(ORIGIN_KEY)
    return None if value in (None, "") else str(value)


def origin_of(memory: Any) -> str:
    """The memory's origin: the recorded one, else what its `source` implies (legacy files).

    An unreadable recorded value is returned as is, and `trust_of` reads it as untrusted."""
    recorded = recorded_origin(memory)
    if recorded is not None:
        try:
            return check_origin(recorded)
        except ValueError:
            return recorded
    return implied_origin(memory)


def set_origin(memory: Any, origin: str | None) -> None:
    """Record `origin` on the memory (None leaves it without one)."""
    if origin is None:
        memory.extra.pop(ORIGIN_KEY, None)
    else:
        memory.extra[ORIGIN_KEY] = check_origin(origin)


def implied_origin(memory: Any) -> str:
    """The origin a memory without an `origin` key is read as (from its `source`)."""
    return _LEGACY.get(memory.source, "user")


def stamp_origin(memory: Any, origin: str | None) -> Any:
    """Record `origin` only where it says more than `source` already implies, so memories typed
    by the user keep the bytes they always had. Returns the memory."""
    if origin is None:
        return memory
    origin = check_origin(origin)
    if ORIGIN_KEY in memory.extra or origin != implied_origin(memory):
        memory.extra[ORIGIN_KEY] = origin
    return memory


def least_trusted(origins: Iterable[str]) -> str | None:
    """Of several origins, one that is untrusted if any is (the first such, in a stable order:
    tool, url, file, import, git); else `agent` if any is, else `user`. None for none."""
    values = [o for o in origins if o]
    if not values:
        return None
    untrusted = sorted(
        (o for o in values if trust_of(o) == UNTRUSTED),
        key=lambda o: (_RANK.get(origin_kind(o), -1), o),
    )
    if untrusted:
        return untrusted[0]
    return "agent" if "agent" in values else "user"


_RANK = {"tool": 0, "url": 1, "file": 2, "import": 3, "git": 4}


# --- words borrowed from a tool's output ---------------------------------------------------

BORROWED_RUN = 6  # this many words in a row, shared with a tool's output, were copied from it
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|[^\W_]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _runs(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def borrowed_origin(text: str, outputs: Sequence[tuple[str, str]]) -> str | None:
    """The origin of the first tool output (origin, text) that `text` copies words from: a run
    of BORROWED_RUN words in a row, or all of a shorter text; None when it copies from none.

    Why: an agent that quotes a README it read passes the README's words off as its own; the
    quote keeps the README's (untrusted) origin. A paraphrase is not caught here.
    When the text holds passages that read as an instruction to the agent, only a copy inside
    one of them counts: a user's own request next to a quoted build log stays the user's."""
    from memctl.core.trust.directives import directive_reason

    words = _words(text)
    if not words or not outputs:
        return None
    passages = [p for p in _PASSAGE.split(text) if p.strip()]
    commanding = [p for p in passages if directive_reason(p, own_labels=True)]
    if commanding:
        return _first_copied(commanding, outputs)
    if directive_reason(text, own_labels=True):
        return _first_copied([text], outputs)  # an instruction spread over passages
    return _first_copied([text], outputs)


_PASSAGE = re.compile(r"\n\s*\n|(?<=[.!?。！？])\s+(?=\S)")


def _first_copied(texts: Sequence[str], outputs: Sequence[tuple[str, str]]) -> str | None:
    for text in texts:
        words = _words(text)
        if not words:
            continue
        size = min(BORROWED_RUN, len(words))
        wanted = _runs(words, size)
        for origin, output in outputs:
            if wanted & _runs(_words(output), size):
                return origin
    return None
