"""Apply a store's redaction settings (config `redaction`) to text before memctl stores it."""

from __future__ import annotations

from typing import Any

from memctl.config import Store, config_error
from memctl.core.errors import UsageError
from memctl.core.redaction.redact import KINDS, Redaction, redact


def redaction_enabled(store: Store) -> bool:
    return store.settings.redaction.enabled


def redact_for_store(store: Store, text: str) -> Redaction:
    """`text` with every kind the store redacts replaced; unchanged when redaction is off.

    Call it on any text memctl writes to disk (memory files, session buffers, state).
    A broken `redaction` setting is reported against config.yaml.
    """
    if not text or not redaction_enabled(store):
        return Redaction(text=text, counts={})
    settings = store.settings.redaction
    try:
        return redact(text, disabled=settings.disabled, extra_patterns=settings.patterns)
    except UsageError as exc:
        # Why: a regex or a kind name is only checked when used (compiling every pattern
        # would put the regex tables on every command's start-up path).
        named = [(("patterns", name), name) for name in settings.patterns]
        named += [(("disabled", str(n)), kind) for n, kind in enumerate(settings.disabled)]
        keys = next(
            (("redaction", *where) for where, name in named if f"'{name}'" in str(exc)),
            ("redaction",),
        )
        raise config_error(store, keys, str(exc)) from None


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
