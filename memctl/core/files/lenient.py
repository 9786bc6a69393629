"""Front matter values memctl reads leniently, and the warning each deserves.

A hand-written file with `created: yesterday` or `pinned: "false"` still loads (nothing a user
wrote is dropped), but the value does not mean what the writer thought: the date is ignored,
the string is read as a flag. Each such value gets one warning naming the field and its line;
`memctl index --strict` (for CI) and the pre-commit hook report them too.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

from memctl.core.files.memory import parse_time

_TOP_KEY = re.compile(r"^([^\s#:'\"{}\[\],&*!|>%@`-][^:#]*?)[ \t]*:(?:[ \t]|$)")
FUTURE_SLACK = timedelta(days=1)
TRUE_WORDS = {"true", "yes", "on", "1"}
FALSE_WORDS = {"false", "no", "off", "0", ""}


def top_level_keys(block: str) -> list[tuple[str, int]]:
    """(key, line in the file) of each top-level key of a front matter block (line 2 is the
    block's first line), in order, repeats included."""
    found = []
    for number, line in enumerate(block.split("\n"), start=2):
        match = _TOP_KEY.match(line)
        if match:
            found.append((match.group(1).strip(), number))
    return found


def read_flag(value: Any) -> bool:
    """`pinned: "false"` means false, whatever bool("false") says."""
    if isinstance(value, str):
        return value.strip().casefold() in TRUE_WORDS
    return bool(value)


def lenient_warnings(
    data: dict[str, Any], block: str, now: datetime | None = None
) -> list[tuple[int, str]]:
    """(line, what is wrong) for each value read leniently; empty for a clean file."""
    now = now or datetime.now(timezone.utc)
    keys = top_level_keys(block)
    lines = {key: line for key, line in keys}  # a repeated key: its last line, the one that counts
    warnings: list[tuple[int, str]] = []
    counts = Counter(key for key, _ in keys)
    for key, count in counts.items():
        if count > 1:
            warnings.append((lines[key], f"'{key}' is given {count} times; only the last counts"))

    def line(key: str) -> int:
        return lines.get(key, 2)

    for key in ("created", "updated", "expires"):
        value = data.get(key)
        if value in (None, ""):
            continue
        when = parse_time(value)
        if when is None:
            warnings.append((line(key), f"'{key}' is '{value}', not a date; it is ignored"))
        elif key != "expires" and when > now + FUTURE_SLACK:
            warnings.append((line(key), f"'{key}' is {value}, in the future"))
    pinned = data.get("pinned")
    if pinned is not None and not isinstance(pinned, bool):
        meaning = "true" if read_flag(pinned) else "false"
        warnings.append(
            (
                line("pinned"),
                f"'pinned' is the text '{pinned}' (read as {meaning}); write "
                "true or false without quotes",
            )
        )
    if "id" in data and isinstance(data["id"], (int, float)) and not isinstance(data["id"], bool):
        warnings.append(
            (line("id"), f"'id' is the number {data['id']}; quote it to keep it as written")
        )
    for relation in data.get("relations") or []:
        target = str(relation.get("target", "")) if isinstance(relation, dict) else ""
        if "/" in target or target.endswith(".md"):
            warnings.append(
                (
                    line("relations"),
                    f"relation target '{target}' is a path; name the memory by its id",
                )
            )
    return sorted(warnings)
