"""Replace personal data and secrets in text with typed placeholders before it is stored.

Detectors run in a fixed order (most specific first); a span claimed by one detector is never
touched by a later one, so `sk-...` inside `api_key=sk-...` counts as an api_key, not twice.
Only the values are replaced: `password=[REDACTED_SECRET_ASSIGNMENT]` keeps the key name.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from memctl.core.errors import UsageError
from memctl.core.redaction.redact_accounts import (
    ACCOUNT_PERSONAL_DETECTORS,
    ACCOUNT_SECRET_DETECTORS,
)
from memctl.core.redaction.redact_assignments import ASSIGNMENT_DETECTORS
from memctl.core.redaction.redact_rules import (
    PERSONAL_DETECTORS,
    SHAPE_DETECTORS,
    Detector,
    placeholder,
)

KINDS: tuple[str, ...] = (
    "email",
    "phone",
    "credit_card",
    "ssn",
    "cn_id",
    "iban",
    "ipv4",
    "ipv6",
    "aws_key",
    "github_token",
    "api_key",
    "slack_token",
    "jwt",
    "private_key",
    "secret_assignment",
)

# Order matters: vendor token shapes, then named secrets, then personal data.
DETECTORS: tuple[Detector, ...] = (
    *SHAPE_DETECTORS,
    *ACCOUNT_SECRET_DETECTORS,
    *ASSIGNMENT_DETECTORS,
    *ACCOUNT_PERSONAL_DETECTORS,
    *PERSONAL_DETECTORS,
)

_EXTRA_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Redaction:
    """The redacted text and how many values of each kind were replaced (never the values)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact(
    text: str,
    *,
    disabled: Iterable[str] = (),
    extra_patterns: Mapping[str, str] | None = None,
) -> Redaction:
    """Redact every enabled kind and count what was replaced.

    `extra_patterns` (config `redaction.patterns`) maps a name to a regex; a named group
    `value` in it limits the replacement to that group.
    """
    extras = _compile_extras(extra_patterns or {})
    off = _check_disabled(disabled, extra_names=[d.kind for d in extras])
    claimed: list[tuple[int, int, str]] = []
    starts: list[int] = []
    for detector in (*DETECTORS, *extras):
        if detector.kind in off:
            continue
        for start, end in detector.find(text):
            _claim(claimed, starts, start, end, detector.kind)
    return _apply(text, claimed)


def _claim(claimed: list, starts: list[int], start: int, end: int, kind: str) -> None:
    """Record a span unless it overlaps one an earlier (more specific) detector took."""
    if start >= end:
        return
    i = bisect.bisect_left(starts, start)
    if i > 0 and claimed[i - 1][1] > start:
        return
    if i < len(claimed) and claimed[i][0] < end:
        return
    starts.insert(i, start)
    claimed.insert(i, (start, end, kind))


def _apply(text: str, claimed: list[tuple[int, int, str]]) -> Redaction:
    pieces: list[str] = []
    counts: dict[str, int] = {}
    cursor = 0
    for start, end, kind in claimed:
        pieces.append(text[cursor:start])
        pieces.append(placeholder(kind))
        counts[kind] = counts.get(kind, 0) + 1
        cursor = end
    pieces.append(text[cursor:])
    order = {kind: i for i, kind in enumerate(KINDS)}
    ordered = dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    return Redaction(text="".join(pieces), counts=ordered)


def _compile_extras(patterns: Mapping[str, str]) -> list[Detector]:
    detectors = []
    for name, pattern in patterns.items():
        if not isinstance(name, str) or not _EXTRA_NAME.fullmatch(name):
            raise UsageError(
                f"Redaction pattern name '{name}' must start with a letter and use only "
                "letters, digits and '_' (it becomes the placeholder [REDACTED_NAME])."
            )
        if not isinstance(pattern, str) or not pattern:
            raise UsageError(f"Redaction pattern '{name}' must be a non-empty regular expression.")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise UsageError(
                f"Redaction pattern '{name}' is not a valid regular expression: {exc} "
                f"(pattern: {pattern!r})"
            ) from None
        group = "value" if "value" in compiled.groupindex else 0
        detectors.append(Detector(name.lower(), _finder(compiled, group)))
    return detectors


def _finder(compiled: re.Pattern, group: int | str):
    def find(text: str):
        for match in compiled.finditer(text):
            start, end = match.span(group)
            if 0 <= start < end:
                yield start, end

    return find


def _check_disabled(disabled: Iterable[str], extra_names: list[str]) -> set[str]:
    if isinstance(disabled, str):
        disabled = [disabled]
    off = {str(kind).strip().lower() for kind in disabled}
    known = set(KINDS) | set(extra_names)
    unknown = sorted(off - known)
    if unknown:
        raise UsageError(
            f"Unknown redaction kind '{unknown[0]}' in redaction.disabled; "
            f"known kinds: {', '.join((*KINDS, *sorted(set(extra_names) - set(KINDS))))}."
        )
    return off
