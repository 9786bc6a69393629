"""Whether two statements on one subject are the same fact (pure).

A guessed subject ("profile service pages on-call") is not enough to call a new statement an
update of a stored one: "The profile service pages on-call after 80 seconds in region r2; ticket
OPS-1444" and "... after 45 seconds in region r3; ticket OPS-1600" are two facts, each to be
found by its own ticket. What names *which* fact a statement is about are its identifiers:
tickets, codes mixing letters and digits (regions, hosts, versions like `v2`), team names. A
plain number or a chosen option is a *value*, and a new value of the same fact is an update.
"""

from __future__ import annotations

import re

CHANGE_CUE = re.compile(
    r"\b(?:now|nowadays|no longer|not anymore|any ?more|instead|switched|switching|moved|moving|"
    r"migrated|migrating|replaced|replacing|changed|changing|from now on|as of|going forward|"
    r"starting|updated|upgraded|downgraded|dropped|retired|deprecated|became|raised|lowered|"
    r"renamed)\b|现在|改为|改成|改用|换成|换为|不再|迁移到|迁到|从此|今后",
    re.IGNORECASE,
)
# A ticket or issue key: OPS-1444, JIRA-12, #4821 (with its hash).
_TICKET = re.compile(r"(?<![\w-])[A-Za-z][A-Za-z0-9]*-\d+(?![\w-])|#\d{2,}\b")
# A code mixing letters and digits: r2, eu-west-1, db-7, p99, v2, 3b.
_CODE = re.compile(r"\b(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*\b")
_TEAM = re.compile(
    r"\b(?:team|squad|group|crew|guild)\s+([A-Z][\w-]*)|\b([A-Z][\w-]*)\s+(?:team|squad)\b"
)


def tickets(text: str) -> set[str]:
    return {m.group(0).lower() for m in _TICKET.finditer(text)}


def identifiers(text: str) -> set[str]:
    """Tickets, letter-and-digit codes and team names in a statement (lower-cased)."""
    found = tickets(text) | {m.group(0).lower() for m in _CODE.finditer(text)}
    found |= {(m.group(1) or m.group(2)).lower() for m in _TEAM.finditer(text)}
    return found


def distinct_facts(old: str, new: str) -> bool:
    """True when `new` is about another fact than `old`, whatever their subject key says.

    Each names an identifier the other lacks: a different ticket always makes a different fact;
    a different region, code or team does unless `new` says something changed ("moved to r3").
    One that only adds an identifier (a ticket for a fact stated before) restates it.
    """
    old_ids, new_ids = identifiers(old), identifiers(new)
    if not (old_ids - new_ids and new_ids - old_ids):
        return False
    old_tickets, new_tickets = tickets(old), tickets(new)
    if old_tickets - new_tickets and new_tickets - old_tickets:
        return True
    return not CHANGE_CUE.search(new)
