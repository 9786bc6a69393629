"""Apply a store's redaction settings (config `redaction`) to text before memctl stores it."""

from __future__ import annotations

from typing import Any

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile, UsageError
from memctl.core.redact import KINDS, Redaction, redact


def redaction_enabled(store: Store) -> bool:
    return store.section("redaction").get("enabled", True) is not False


def redact_for_store(store: Store, text: str) -> Redaction:
    """`text` with every kind the store redacts replaced; unchanged when redaction is off.

    Call it on any text memctl writes to disk (memory files, session buffers, state).
    A broken `redaction` setting is reported against config.yaml.
    """
    if not text or not redaction_enabled(store):
        return Redaction(text=text, counts={})
    settings = store.section("redaction")
    disabled = settings.get("disabled") or ()
    patterns = settings.get("patterns") or {}
    if not isinstance(disabled, (list, tuple, str)):
        raise _config_problem(store, "disabled", "redaction.disabled must be a list of kinds")
    if not isinstance(patterns, dict):
        raise _config_problem(store, "patterns", "redaction.patterns must map a name to a regex")
    try:
        return redact(text, disabled=disabled, extra_patterns=patterns)
    except UsageError as exc:
        culprit = next(
            (str(name) for name in (*patterns, *_as_list(disabled)) if f"'{name}'" in str(exc)),
            "redaction",
        )
        raise _config_problem(store, culprit, str(exc)) from None


def redact_memory_fields(
    store: Store, text: str, fields: dict[str, Any]
) -> tuple[str, dict[str, Any], dict[str, int]]:
    """Redact the body, title, tags and any text inside `extra`; return them with summed counts."""
    counts: dict[str, int] = {}

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            result = redact_for_store(store, value)
            for kind, n in result.counts.items():
                counts[kind] = counts.get(kind, 0) + n
            return result.text
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(clean(item) for item in value)
        return value

    fields = dict(fields)
    text = clean(text)
    for name in ("title", "tags", "extra"):
        if fields.get(name) is not None:
            fields[name] = clean(fields[name])
    return text, fields, ordered_counts(counts)


def ordered_counts(counts: dict[str, int]) -> dict[str, int]:
    """Built-in kinds in their documented order, then pattern names alphabetically."""
    order = {kind: i for i, kind in enumerate(KINDS)}
    return dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def describe_counts(counts: dict[str, int]) -> str:
    """'email x2, api_key x1': kinds and counts only, never the values."""
    return ", ".join(f"{kind} x{n}" for kind, n in counts.items())


def _as_list(value: Any) -> list:
    return [value] if isinstance(value, str) else list(value or ())


def _config_problem(store: Store, needle: str, problem: str) -> InvalidMemoryFile:
    """Point at the line of config.yaml that mentions `needle` (the section line otherwise)."""
    path = store.root / "config.yaml"
    line = 1
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for wanted in (needle, "redaction"):
        found = next((n for n, text in enumerate(lines, start=1) if wanted in text), None)
        if found:
            line = found
            break
    return InvalidMemoryFile(path, line, problem)
