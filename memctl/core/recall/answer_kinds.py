"""What kind of answer a question asks for (a time, a place), and whether a text holds one. Pure.

A memory that holds the kind of thing asked for is the likelier answer among those about the
same subject: asked "where did we move the backups?", "we moved the backups to S3" answers and
"we moved the backups, it took a day" does not. A time is read by core.recall.when (a date told, a
schedule); the caller resolves dates against each memory's own.
"""

from __future__ import annotations

import re

from memctl.core.recall.when import QUESTION_VERBS, asks_when

TIME, PLACE = "time", "place"
MAX_CHARS = 2000

_ASKS_PLACE = re.compile(
    rf"^\W*where\b|\bwhere\s+{QUESTION_VERBS}\b"
    r"|\b(?:what|which)\s+(?:city|country|state|town|place|region|address|folder|directory"
    r"|repo|repository|bucket|server|host|channel)\b"
    r"|哪里|哪儿|在哪|什么地方|哪个(?:城市|国家|地方|目录|仓库|服务器)"
)
# A place: a name after a preposition of place ("in Boston", "to S3", "at the Louvre"), a path
# or an address (docs/adr/, ~/.config, https://...), or a Chinese place word after 在/去/到.
_PLACE = re.compile(
    r"\b(?:in|at|to|from|near|into|inside|on|under)\s+(?:the\s+)?[A-Z][\w-]*"
    r"|\b[a-z][\w+.-]*://\S+|(?:^|\s)(?:~|\.{1,2})?/[\w.-]+|\b[\w.-]+/[\w.-]+/"
    r"|[在去到][\u4e00-\u9fff]{1,6}?(?:市|省|区|县|国|路|街|楼|里|上|中|岛|山|湖)"
)


def asked_kind(query: str) -> str | None:
    """TIME or PLACE when the query asks for one ("When ...", "Where ...", 什么时候, 哪里), else
    None. ("How many ..." is not one: a digit is in too many memories to tell them apart.)"""
    text = query[:MAX_CHARS]
    if asks_when(text):
        return TIME
    lowered = text.lower()
    return PLACE if _ASKS_PLACE.search(lowered) else None


def states_place(text: str) -> bool:
    return _PLACE.search(text[:MAX_CHARS]) is not None
