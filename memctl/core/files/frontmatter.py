"""Parse and render memory files: YAML front matter between `---` lines, then Markdown.

Rendering is deterministic (fixed key order, fixed date format, fixed quoting) so the same
memory always gives the same bytes and git diffs show only real changes.
"""

from __future__ import annotations

import base64
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from memctl.core.codebase.anchors import KEY_ORDER as ANCHOR_ORDER
from memctl.core.codebase.anchors import anchor_problem
from memctl.core.errors import InvalidMemoryFile
from memctl.core.files.ids import ID_RULE, is_safe_id
from memctl.core.files.lenient import lenient_warnings, read_flag
from memctl.core.files.memory import (
    FIELD_ORDER,
    MEMORY_TYPES,
    SCOPES,
    SOURCES,
    Memory,
)
from memctl.core.files.safe_yaml import load_bounded
from memctl.core.language.text import utc_timestamp

_CONFLICT = re.compile(r"^(<{7}|={7}|>{7})(\s|$)")
_FENCE = "---"


def _norm_time(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return utc_timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _plain(value: Any) -> Any:
    """YAML may hand back dates for unknown keys; keep them as text so rendering is stable."""
    if isinstance(value, (datetime, date)):
        return _norm_time(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):  # Why: `!!set` is safe YAML but not JSON
        return sorted((_plain(v) for v in value), key=str)
    if isinstance(value, bytes):  # `!!binary`: kept as the base64 text it was written as
        return base64.b64encode(value).decode("ascii")
    return value


def check_text(path: Path | str, raw: bytes) -> str:
    """Decode file bytes, refusing binary content, bad UTF-8 and merge-conflict markers."""
    if b"\x00" in raw:
        nul_line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise InvalidMemoryFile(path, nul_line, "binary content (NUL byte); not a Markdown memory")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = raw[: exc.start].count(b"\n") + 1
        raise InvalidMemoryFile(
            path, bad_line, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})"
        ) from None
    text = text.removeprefix("\ufeff")
    for number, line in enumerate(text.splitlines(), start=1):
        if _CONFLICT.match(line):
            raise InvalidMemoryFile(
                path, number, "merge-conflict marker; resolve the conflict first"
            )
    return text


def split_front_matter(path: Path | str, text: str) -> tuple[dict[str, Any], str, int]:
    """Return (front matter, body, line where the body starts)."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != _FENCE:
        return {}, text, 1
    for end in range(1, len(lines)):
        if lines[end].rstrip() == _FENCE:
            break
    else:
        raise InvalidMemoryFile(path, 1, "front matter opened with '---' but never closed")
    block = "\n".join(lines[1:end])
    try:
        data = load_bounded(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = (mark.line + 2) if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InvalidMemoryFile(path, line, f"broken YAML front matter: {problem}") from None
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        # Why: a value PyYAML cannot build must not stop every command (see core/safe_yaml).
        raise InvalidMemoryFile(path, 2, f"broken YAML front matter: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidMemoryFile(path, 2, "front matter must be a mapping of key: value")
    body = "\n".join(lines[end + 1 :])
    return data, body, end + 2


def _as_float(path, data, key, default: float) -> float:
    if key not in data or data[key] is None:
        return default
    try:
        value = float(data[key])
    except (TypeError, ValueError):
        raise InvalidMemoryFile(path, _line_of(data, key), f"'{key}' must be a number") from None
    if not 0.0 <= value <= 1.0:
        raise InvalidMemoryFile(path, _line_of(data, key), f"'{key}' must be between 0 and 1")
    return value


def _line_of(data: dict, key: str) -> int:
    keys = list(data)
    return keys.index(key) + 2 if key in keys else 2


def _choice(path, data, key, allowed, default):
    value = data.get(key)
    if value is None or value == "":
        return default
    value = str(value)
    if value not in allowed:
        raise InvalidMemoryFile(
            path, _line_of(data, key), f"'{key}' is '{value}'; expected one of {', '.join(allowed)}"
        )
    return value


def parse_memory(path: Path | str, raw: bytes, default_id: str, default_type: str) -> Memory:
    """Build a Memory from file bytes. Missing fields take defaults; nothing is written back.

    Any problem, whatever Python error it starts as, is an InvalidMemoryFile with a line.
    """
    text = check_text(path, raw)
    data, body, body_line = split_front_matter(path, text)
    try:
        memory = _memory_from(path, data, body, default_id, default_type)
        if data:
            block = "\n".join(text.split("\n")[1 : body_line - 2])
            memory.warnings = tuple(lenient_warnings(data, block))
        return memory
    except InvalidMemoryFile:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise InvalidMemoryFile(path, 2, f"unusable front matter: {exc}") from None


def _checked_id(path, data: dict, default_id: str) -> str:
    value = data.get("id")
    if not value:
        return default_id
    memory_id = str(value)
    if not is_safe_id(memory_id):
        shown = memory_id if len(memory_id) <= 100 else memory_id[:100] + "…"
        raise InvalidMemoryFile(
            path, _line_of(data, "id"), f"'id' is '{shown}'; an id must {ID_RULE}"
        )
    return memory_id


def _memory_from(path, data: dict, body: str, default_id: str, default_type: str) -> Memory:
    tags = data.get("tags") or []
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    if not isinstance(tags, list):
        raise InvalidMemoryFile(path, _line_of(data, "tags"), "'tags' must be a list")
    relations = data.get("relations") or []
    if not isinstance(relations, list) or not all(isinstance(r, dict) for r in relations):
        raise InvalidMemoryFile(
            path, _line_of(data, "relations"), "'relations' must be a list of {type, target}"
        )
    try:
        version = int(data.get("version") or 1)
    except (TypeError, ValueError):
        raise InvalidMemoryFile(
            path, _line_of(data, "version"), "'version' must be an integer"
        ) from None
    known = set(FIELD_ORDER)
    problem = anchor_problem(data)
    if problem is not None:
        raise InvalidMemoryFile(path, _line_of(data, problem[0]), problem[1])
    return Memory(
        id=_checked_id(path, data, default_id),
        title=str(data.get("title") or ""),
        type=_choice(path, data, "type", MEMORY_TYPES, default_type),
        tags=[str(t) for t in tags],
        importance=_as_float(path, data, "importance", 0.5),
        confidence=_as_float(path, data, "confidence", 0.8),
        source=_choice(path, data, "source", SOURCES, "explicit_user_input"),
        scope=_choice(path, data, "scope", SCOPES, "project"),
        agent=str(data["agent"]) if data.get("agent") else None,
        created=_norm_time(data.get("created")),
        updated=_norm_time(data.get("updated")),
        expires=_norm_time(data.get("expires")),
        pinned=read_flag(data.get("pinned", False)),
        relations=[{str(k): str(v) for k, v in r.items()} for r in relations],
        version=version,
        body=body.lstrip("\n"),
        extra={str(k): _plain(v) for k, v in data.items() if k not in known},
        present=frozenset(str(k) for k in data),
    )


def front_matter_dict(memory: Memory, full: bool = True) -> dict[str, Any]:
    """The front matter to write. `full=False` keeps only the keys the file already had."""
    values: dict[str, Any] = {
        "id": memory.id,
        "title": memory.title,
        "type": memory.type,
        "tags": list(memory.tags),
        "importance": round(float(memory.importance), 4),
        "confidence": round(float(memory.confidence), 4),
        "source": memory.source,
        "scope": memory.scope,
        "agent": memory.agent,
        "created": memory.created,
        "updated": memory.updated,
        "expires": memory.expires,
        "pinned": memory.pinned,
        "relations": [dict(r) for r in memory.relations],
        "version": memory.version,
    }
    out: dict[str, Any] = {}
    for key in FIELD_ORDER:
        value = values[key]
        keep = key in memory.present or (full and value not in (None, "", [], False))
        if key in ("id", "type", "version") and full:
            keep = True
        if keep:
            out[key] = value
    # Why this order: where and when a memory applies (core/anchors) reads best right after
    # memctl's own fields; a memory without them renders exactly as before.
    for key in ANCHOR_ORDER:
        if key in memory.extra:
            out[key] = memory.extra[key]
    for key in sorted(memory.extra):
        if key not in ANCHOR_ORDER:
            out[key] = memory.extra[key]
    return out


class _Dumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_presenter)


def render_memory(memory: Memory, full: bool = True) -> bytes:
    """Serialize a memory to bytes; same memory, same bytes."""
    data = front_matter_dict(memory, full=full)
    block = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100_000,
    )
    body = memory.body.strip("\n")
    text = f"{_FENCE}\n{block}{_FENCE}\n"
    if body:
        text += f"\n{body}\n"
    return text.encode("utf-8")
