"""typer's coercion of plain option values without importing pydantic.

typer (0.2x) coerces every parameter it is given a value for through a pydantic TypeAdapter,
built on first use: `import pydantic` and the adapters cost a fresh `memctl add` or `recall`
~0.15 s, for text, words, flags and decimal numbers that need no validation beyond their type.
`install()` puts a thin step in front: a value typer would hand back unchanged (a `str` for a
`str`, strings for a `list[str]`, digits for an `int`, a plain decimal for a `float`) is
returned as is; anything else (a malformed number, a constrained, path or choice parameter)
goes to typer's own adapter, built then, so its checks and error messages stay typer's.
tests/test_plain_params.py holds both paths to the same answers.

A typer without this machinery (the click-based ones) is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

# Why this strict: only text whose number every parser reads alike (no "1_0", "1e3", " 1",
# "inf"); the rest goes to typer's adapter.
_DECIMAL = {
    int: re.compile(r"-?[0-9]{1,18}"),
    float: re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?"),
}
_UNSET = object()
# The typer releases whose private coercion step this was written and tested against.
TESTED_TYPER = ("0.29.",)


def plain_value(annotation: Any, value: Any) -> Any:
    """`value` coerced to `annotation` when no validation can change or refuse it, else _UNSET."""
    if annotation is str:
        return value if _plain_text(value) else _UNSET
    if annotation is bool:
        return value if type(value) is bool else _UNSET
    if annotation in _DECIMAL:
        if type(value) is annotation:
            return value
        if type(value) is str and _DECIMAL[annotation].fullmatch(value):
            return annotation(value)
        return _UNSET
    if annotation == list[str] and type(value) in (list, tuple):
        return list(value) if all(_plain_text(item) for item in value) else _UNSET
    return _UNSET


def _plain_text(value: Any) -> bool:
    if type(value) is not str:
        return False
    try:
        value.encode("utf-8")  # Why: a lone surrogate (undecodable argv) is pydantic's to judge
    except UnicodeEncodeError:
        return False
    return True


def _is_plain(descriptor: Any) -> bool:
    info = descriptor.parameter_info
    return (
        descriptor.file_annotation is None
        and info.parser is None
        and info.min is None
        and info.max is None
        and not info.clamp
        and not descriptor.is_path
        and not descriptor.is_choice
    )


def install() -> None:
    """Route typer's coercion of plain values around pydantic (once; no-op on other typers)."""
    try:
        import typer
        from typer import core
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:
        return
    # Why: private machinery; a typer release we have not tested keeps its own way (and its
    # ~0.15 s), rather than risk a parse that fails in a user's shell.
    if not typer.__version__.startswith(TESTED_TYPER):
        return
    if getattr(core, "build_runtime_param", None) is not build_runtime_param:
        return  # installed already, or a typer that no longer looks like this

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        descriptor: Any = None

        @cached_property
        def typer_param(self) -> Any:
            return build_runtime_param(self.descriptor)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            plain = plain_value(self.annotation, value)
            if plain is not _UNSET:
                return plain
            return self.typer_param._coerce_value(value, param=param, ctx=ctx)

    def runtime_param(descriptor: Any) -> Any:
        try:
            if _is_plain(descriptor):
                return PlainRuntimeParam(
                    parameter_info=descriptor.parameter_info,
                    annotation=descriptor.annotation,
                    descriptor=descriptor,
                )
        except (AttributeError, TypeError):
            pass  # Why: a typer whose parameters look otherwise keeps its own way
        return build_runtime_param(descriptor)

    core.build_runtime_param = runtime_param
