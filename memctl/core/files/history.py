"""A memory's `## History` section: earlier values, kept when a newer value replaced them.

The section is the last `## History` heading of the body followed only by list items
(`- ...`, continuation lines indented two spaces). A person's own "## History" prose is
therefore never mistaken for it, nor is a heading quoted (indented) inside an entry, so sections
never nest. The section is the record, not the current truth, so it is left out of what gets
embedded; only the identifiers of its earlier values (tickets, codes) stay searchable.
"""

from __future__ import annotations

from memctl.core.learning.facts import identifiers

HEADING = "## History"


def split_history(body: str) -> tuple[str, list[str]]:
    """(the current text, the history entries oldest first)."""
    lines = body.split("\n")
    for start in range(len(lines) - 1, -1, -1):
        if lines[start].rstrip() != HEADING:  # Why: an indented one is quoted inside an entry
            continue
        tail = lines[start + 1 :]
        if not all(not line.strip() or line.startswith(("- ", "  ")) for line in tail):
            return body, []
        entries: list[str] = []
        for line in tail:
            if line.startswith("- "):
                entries.append(line[2:])
            elif line.startswith("  ") and entries:
                entries[-1] += "\n" + line[2:]
        return "\n".join(lines[:start]).rstrip(), entries
    return body, []


def current_text(body: str) -> str:
    return split_history(body)[0]


def agent_body(body: str) -> str:
    """The body as an agent is shown it (hooks, `memctl context`, MCP): what is true now.

    The `## History` section holds values a newer one replaced; telling the agent both the new and
    the obsolete instruction misleads it, so every injected surface reads bodies through this.
    `show`, `recall --include-superseded` and `--explain` read the whole body instead."""
    return current_text(body)


def join_history(current: str, entries: list[str]) -> str:
    """The body: the current text, then the history section (if there is any history)."""
    current = current.strip("\n")
    if not entries:
        return current
    items = "\n".join("- " + entry.replace("\n", "\n  ") for entry in entries)
    return f"{current}\n\n{HEADING}\n\n{items}"


def history_entry(stamp: str, what: str, details: list[str], text: str) -> str:
    """One dated line: `2025-06-02T09:14:41Z replaced (confidence 0.85, ...): old text`."""
    said = "\n".join(line.rstrip() for line in text.strip().splitlines())
    return f"{stamp} {what} ({', '.join(details)}): {said}"


def earlier_identifiers(body: str) -> list[str]:
    """Identifiers the History's earlier values name and the current text does not (sorted):
    `recall OPS-1444` still finds the memory whose earlier value held it."""
    current, entries = split_history(body)
    earlier = set().union(*(identifiers(entry.partition("): ")[2]) for entry in entries))
    return sorted(earlier - identifiers(current))
