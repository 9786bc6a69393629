"""Typed settings from plain data (parsed YAML): every value checked against its dataclass field.

A settings section is a frozen dataclass. Each field's annotation says what a value must be
(bool, int, float, str, `X | None`, `tuple[X, ...]`, `dict[str, X]`, a nested section, `Any`)
and `setting(...)` adds its bounds. `build` walks the fields, so a new section or key needs no
parsing code; keys no field knows are returned for a warning, a value that does not fit raises.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, Union, get_args, get_origin, get_type_hints

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

KeyPath = tuple[str, ...]
T = TypeVar("T", bound="DataclassInstance")


class SettingError(ValueError):
    """A value that does not fit its field; `keys` locate it, e.g. ("recall", "k")."""

    def __init__(self, keys: KeyPath, problem: str):
        self.keys = keys
        self.problem = f"{'.'.join(keys)} {problem}" if keys else problem
        super().__init__(self.problem)


@dataclass(frozen=True)
class Bounds:
    at_least: float | None = None
    above: float | None = None
    at_most: float | None = None
    choices: tuple[Any, ...] = ()

    def check(self, value: Any, keys: KeyPath) -> None:
        if self.choices and value not in self.choices:
            options = ", ".join(str(choice) for choice in self.choices)
            raise SettingError(keys, f"must be one of: {options}; got {value!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        low_ok = (self.at_least is None or value >= self.at_least) and (
            self.above is None or value > self.above
        )
        if low_ok and (self.at_most is None or value <= self.at_most):
            return
        raise SettingError(keys, f"must be {self.describe()}, got {value!r}")

    def describe(self) -> str:
        if self.at_least is not None and self.at_most is not None:
            return f"between {self.at_least:g} and {self.at_most:g}"
        parts = []
        if self.above is not None:
            parts.append(f"above {self.above:g}")
        if self.at_least is not None:
            parts.append(f"at least {self.at_least:g}")
        if self.at_most is not None:
            parts.append(f"at most {self.at_most:g}")
        return " and ".join(parts)


NO_BOUNDS = Bounds()


def setting(
    default: Any,
    *,
    at_least: float | None = None,
    above: float | None = None,
    at_most: float | None = None,
    choices: tuple[Any, ...] = (),
    secret: bool = False,
) -> Any:
    """A field with its default and bounds (for a list or mapping: bounds of each item).

    `secret` keeps the value out of reprs (tracebacks, logs)."""
    metadata = {"bounds": Bounds(at_least, above, at_most, tuple(choices))}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=metadata, repr=not secret)
    return field(default=default, metadata=metadata, repr=not secret)


def fraction(default: float) -> Any:
    """A share, threshold or similarity: a number from 0 to 1."""
    return setting(default, at_least=0.0, at_most=1.0)


def section(kind: type[T]) -> Any:
    """A field holding a nested section, defaulting to that section's defaults."""
    return field(default_factory=kind)


def build(kind: type[T], data: Any, keys: KeyPath = ()) -> tuple[T, list[KeyPath]]:
    """An instance of `kind` from a mapping (a missing key takes its default), and the keys of
    `data` no field knows. Raises SettingError for the first value that does not fit."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SettingError(keys, f"must be a mapping of settings, got {_describe(data)}")
    fields = {f.name: f for f in dataclasses.fields(kind)}
    hints = _hints(kind)
    unknown = [(*keys, str(key)) for key in data if key not in fields]
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if name not in data:
            continue
        bounds = spec.metadata.get("bounds", NO_BOUNDS)
        values[name] = _convert(hints[name], data[name], (*keys, name), bounds, unknown)
    return kind(**values), unknown


def plain(value: Any) -> Any:
    """Settings as plain YAML-like data: sections as dicts, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    return value


def known_keys(kind: type, keys: KeyPath = ()) -> tuple[str, ...]:
    """The keys of the section at `keys` below `kind`; () when `keys` name no section."""
    current: Any = kind
    for name in keys:
        current = _hints(current).get(name)
        if not (isinstance(current, type) and dataclasses.is_dataclass(current)):
            return ()
    return tuple(f.name for f in dataclasses.fields(current))


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(kind: type) -> dict[str, Any]:
    """Each field's annotation, resolved (modules use `from __future__ import annotations`)."""
    if kind not in _HINTS:
        _HINTS[kind] = get_type_hints(kind)
    return _HINTS[kind]


def _convert(
    annotation: Any, value: Any, keys: KeyPath, bounds: Bounds, unknown: list[KeyPath]
) -> Any:
    if annotation is Any:
        return value
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if value is None and len(options) < len(get_args(annotation)):
            return None
        return _convert(options[0], value, keys, bounds, unknown)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        built, nested_unknown = build(annotation, value, keys)
        unknown.extend(nested_unknown)
        return built
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise SettingError(keys, f"must be a list, got {_describe(value)}")
        item_type = get_args(annotation)[0]
        return tuple(
            _convert(item_type, item, (*keys, str(n)), bounds, unknown)
            for n, item in enumerate(value)
        )
    if origin is dict:
        if not isinstance(value, Mapping):
            raise SettingError(keys, f"must be a mapping, got {_describe(value)}")
        item_type = get_args(annotation)[1]
        converted = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise SettingError(keys, f"keys must be text, got {key!r}")
            converted[key] = _convert(item_type, item, (*keys, key), bounds, unknown)
        return converted
    scalar = _scalar(annotation, value, keys)
    bounds.check(scalar, keys)
    return scalar


def _scalar(annotation: Any, value: Any, keys: KeyPath) -> Any:
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise SettingError(keys, f"must be true or false, got {_describe(value)}")
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise SettingError(keys, f"must be a whole number, got {_describe(value)}")
    if annotation is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise SettingError(keys, f"must be a number, got {_describe(value)}")
    if annotation is str:
        if isinstance(value, str):
            return value
        raise SettingError(keys, f"must be text, got {_describe(value)}")
    raise TypeError(f"settings field {'.'.join(keys)} has an unsupported type {annotation!r}")


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return repr(value)
