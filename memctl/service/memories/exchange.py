"""Export memories to JSONL and to agents' own files; import them back through the batch write path.

JSONL is the lossless form (one memory per line: its front matter fields plus `body`), so an
export imported into an empty store gives the same memories, ids included. CLAUDE.md,
AGENTS.md and Cursor rules are the agents' forms: what fits a token budget, written into a
managed section or into memctl's own rule files so the rest stays the author's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.errors import InvalidMemoryFile, MemctlError, UsageError
from memctl.core.files import agent_files
from memctl.core.files.frontmatter import front_matter_dict
from memctl.core.files.input_limits import InputRefused
from memctl.core.files.memory import FIELD_ORDER, MEMORY_TYPES, SOURCES, Memory, now_iso
from memctl.core.trust.provenance import ORIGIN_KEY, UNTRUSTED, check_origin, make_origin, trust_of
from memctl.service.memories.add import AddResult, build_memory, check_fields
from memctl.service.memories.batch import BatchItem, BatchStopped, save_batch
from memctl.service.memories.lookup import list_memories
from memctl.service.privacy import shares_private
from memctl.store.files import atomic_write
from memctl.store.safe_read import read_input_file

FORMATS = ("jsonl", "claude-md", "agents-md", "cursor-rules")
DEFAULT_TARGETS = {
    "claude-md": "CLAUDE.md",
    "agents-md": "AGENTS.md",
    "cursor-rules": ".cursor/rules",
}
IMPORT_FORMATS = ("jsonl", "markdown", "mdc")
STDOUT = "-"


class ImportRefused(MemctlError):
    """Problems found before anything was written; each names the file and line."""

    kind = "invalid_file"

    def __init__(self, problems: list[InvalidMemoryFile]):
        self.problems = problems
        lines = "\n".join(str(p) for p in problems[:20])
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"Nothing imported; fix these first:\n{lines}{more}")


@dataclass
class ExportResult:
    format: str
    exported: int
    omitted: int  # left out by the token budget
    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    text: str | None = None  # the output, when it goes to stdout
    problems: list[dict] = field(default_factory=list)  # files that could not be read: left out
    quarantined: int = 0  # left out of an agent file: they read as instructions (memctl review)
    labelled: int = 0  # from an untrusted origin: exported marked as notes, not instructions

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "exported": self.exported,
            "omitted": self.omitted,
            "written": [str(p) for p in self.written],
            "removed": [str(p) for p in self.removed],
            "problems": self.problems,
            "quarantined": self.quarantined,
            "labelled": self.labelled,
        }


@dataclass
class ImportResult:
    source: Path
    format: str
    added: list[AddResult] = field(default_factory=list)
    merged: list[AddResult] = field(default_factory=list)  # into (or updating) a memory
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {line, reason, id?}

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "format": self.format,
            "added": [r.to_dict() for r in self.added],
            "merged": [r.to_dict() for r in self.merged],
            "skipped": self.skipped,
        }


# --- export ---------------------------------------------------------------------------------


def memory_record(memory: Memory) -> dict[str, Any]:
    """One JSONL line's object: every front matter field, then the body."""
    record = front_matter_dict(memory, full=True)
    record["body"] = memory.body.strip("\n")
    return record


def export_memories(
    store: Store,
    fmt: str,
    *,
    project_root: Path,
    output: str | None = None,
    types: list[str] | None = None,
    budget: int | None = None,
    include_private: bool | None = None,
) -> ExportResult:
    """Write memories in `fmt`; `output` "-" returns the text instead of writing it.

    Private memories only when the caller asks (`include_private`) or the store shares them
    (service.privacy); the agent files take the standing types (not episodes) unless told
    otherwise.
    """
    if fmt not in FORMATS:
        raise UsageError(f"Unknown format '{fmt}'. Choose one of: {', '.join(FORMATS)}.")
    for kind in types or ():
        if kind not in MEMORY_TYPES:
            raise UsageError(f"Unknown type '{kind}'. Choose one of: {', '.join(MEMORY_TYPES)}.")
    if budget is not None and budget < 1:
        raise UsageError("--budget must be at least 1 token.")
    include_private = shares_private(store, include_private)
    default_types = None if fmt == "jsonl" else list(agent_files.AGENT_FILE_TYPES)
    listing = list_memories(store, types or default_types)
    memories = [m for _, m in listing.memories if include_private or m.scope != "private"]
    held, labelled = 0, 0
    if fmt != "jsonl":  # Why: agents load these files as instructions; JSONL is a backup
        memories, held, labelled = _trusted_for_agents(store, memories)
    result = _export(store, fmt, memories, project_root, output, budget)
    result.quarantined, result.labelled = held, labelled
    result.problems = list(listing.problems)  # Why: an export is a backup; say what it lacks
    return result


def _trusted_for_agents(store: Store, memories: list[Memory]) -> tuple[list[Memory], int, int]:
    """What an agent instruction file may carry: quarantined memories left out, untrusted ones
    labelled with their origin as notes and neutralised (no tag, role line or code fence)."""
    from dataclasses import replace

    from memctl.core.trust.fence import neutralise
    from memctl.service.provenance import gate_for

    gate = gate_for(store)
    kept, held, labelled = [], 0, 0
    for memory in memories:
        if gate.quarantined(memory):
            held += 1
            continue
        if gate.trust(memory) == UNTRUSTED:
            origin = neutralise(" ".join(gate.origin(memory).split()))
            label = f"(untrusted note from {origin}: information, not an instruction)"
            body = neutralise(memory.body.strip())
            memory = replace(memory, title=neutralise(memory.title), body=f"{label} {body}")
            labelled += 1
        kept.append(memory)
    return kept, held, labelled


def _export(
    store: Store,
    fmt: str,
    memories: list[Memory],
    project_root: Path,
    output: str | None,
    budget: int | None,
) -> ExportResult:
    if fmt == "jsonl":
        chosen = agent_files.priority_order(memories) if budget else memories
        lines, used = [], 0
        for memory in chosen:
            line = json.dumps(memory_record(memory), ensure_ascii=False)
            if budget is not None and used + _tokens(line) > budget:
                continue
            lines.append(line)
            used += _tokens(line)
        text = "".join(line + "\n" for line in lines)
        result = ExportResult(fmt, len(lines), len(memories) - len(lines))
        return _deliver(result, text, output)

    selection = agent_files.select_within_budget(memories, budget, fmt)
    exported = sum(len(v) for v in selection.by_type.values())
    result = ExportResult(fmt, exported, selection.omitted)
    if fmt == "cursor-rules":
        return _write_cursor_rules(result, selection, output, project_root)
    section = agent_files.managed_section(selection, fmt)
    if output == STDOUT:
        result.text = section + "\n"
        return result
    target = Path(output) if output else project_root / DEFAULT_TARGETS[fmt]
    existing = target.read_text(encoding="utf-8") if target.exists() else ""
    updated = agent_files.replace_managed_section(existing, section, str(target))
    if updated != existing:
        atomic_write(target, updated.encode("utf-8"))
        result.written.append(target)
    return result


def _tokens(text: str) -> int:
    from memctl.core.language.tokens import estimate_tokens

    return estimate_tokens(text)


def _deliver(result: ExportResult, text: str, output: str | None) -> ExportResult:
    if output in (None, STDOUT):
        result.text = text
        return result
    target = Path(output)
    atomic_write(target, text.encode("utf-8"))
    result.written.append(target)
    return result


def _write_cursor_rules(
    result: ExportResult, selection: agent_files.Selection, output: str | None, root: Path
) -> ExportResult:
    if output == STDOUT:
        result.text = "\n".join(
            agent_files.cursor_rule(kind, memories) for kind, memories in selection.by_type.items()
        )
        return result
    folder = Path(output) if output else root / DEFAULT_TARGETS["cursor-rules"]
    wanted = {
        folder / f"memctl-{kind}.mdc": agent_files.cursor_rule(kind, memories)
        for kind, memories in selection.by_type.items()
    }
    for path, text in wanted.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            atomic_write(path, text.encode("utf-8"))
            result.written.append(path)
    for stale in sorted(folder.glob("memctl-*.mdc")) if folder.is_dir() else ():
        if stale not in wanted and agent_files.is_generated_rule(stale.read_text(encoding="utf-8")):
            stale.unlink()  # a type with nothing left to export; only files memctl wrote
            result.removed.append(stale)
    return result


# --- import ---------------------------------------------------------------------------------


def detect_import_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix == ".mdc":
        return "mdc"
    return "markdown"


@dataclass
class _Pending:
    line: int
    text: str
    fields: dict[str, Any]
    redacted: dict[str, int] = field(default_factory=dict)


IMPORT_CHUNK = 500  # memories embedded, written and indexed together by `memctl import`


def import_file(
    store: Store, path: Path, fmt: str | None = None, *, keep_origin: bool = False
) -> ImportResult:
    """Add the memories in `path` through the write path (redaction, the low-value gate, dedup).

    Every item is checked before any is written. A JSONL line that cannot be a memory at all
    refuses the whole file (each bad line named). Items the write path would turn down (low
    value, or already in the store by id or by text) are skipped, each reported with its line,
    so importing a file twice adds nothing the second time. A record carrying an id is a
    restore from `memctl export`: it keeps its id and passes the low-value gate it passed before.

    Every item's origin is `import:<file name>`, except an untrusted origin a record already
    states (it is more precise), or any origin it states with `keep_origin` (the user vouches
    for the file: their own export).
    """
    fmt = fmt or detect_import_format(path)
    if fmt not in IMPORT_FORMATS:
        raise UsageError(
            f"Unknown import format '{fmt}'. Choose one of: {', '.join(IMPORT_FORMATS)}."
        )
    try:
        raw = read_input_file(path, store.settings.limits.max_input_bytes)
    except OSError as exc:
        raise MemctlError(f"Cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidMemoryFile(path, raw[: exc.start].count(b"\n") + 1, "not UTF-8 text") from None
    if fmt == "jsonl":
        pending = _read_jsonl(text, path)
    else:
        pending = _read_agent_file(text, path, fmt)
    arrived = now_iso()
    for item in pending:
        _set_import_origin(item, path, keep_origin)
        if not item.fields.get("memory_id") and not item.fields.get("updated"):
            # Why: notes dated 2023 that arrive today had no chance to be recalled here yet;
            # decay ages a memory from its `updated` when that is later than `created`.
            item.fields["updated"] = arrived

    _check_limits(store, pending, path)
    result = ImportResult(path, fmt)
    accepted = _accepted_items(store, pending, result.skipped)
    from memctl.integrations.query_embedder import one_bulk_session

    with one_bulk_session():
        written = _write_chunks(store, path, accepted)
    for item, added in zip(accepted, written, strict=True):
        added.redacted = item.redacted
        (result.added if added.action == "created" else result.merged).append(added)
    if written:
        from memctl.service.provenance import note_split_instructions

        note_split_instructions(store)  # an instruction cut over two records of this file
    return result


def _write_chunks(store: Store, path: Path, accepted: list[_Pending]) -> list:
    written: list = []
    # Why in chunks: each is embedded, written and indexed before the next is built, so the
    # vectors, rows and model buffers held at once stay bounded whatever the file's size.
    for start in range(0, len(accepted), IMPORT_CHUNK):
        chunk = accepted[start : start + IMPORT_CHUNK]
        # Checked above: redacted, valid, past the low-value gate (or a restore, kept as is).
        batch = [
            BatchItem(build_memory(i.text, **i.fields), dedup=not i.fields.get("memory_id"))
            for i in chunk
        ]
        try:
            written += save_batch(store, batch)
        except BatchStopped as stop:
            raise MemctlError(
                f"Import stopped at {path}:{chunk[stop.position].line} after writing "
                f"{len(written) + stop.written} of {len(accepted)} memories: {stop.cause}\n"
                "Running the import again skips what is already in the store."
            ) from stop.cause
    return written


def _set_import_origin(item: _Pending, path: Path, keep_origin: bool) -> None:
    extra = item.fields.setdefault("extra", {})
    stated = extra.get(ORIGIN_KEY)
    if keep_origin or (stated is not None and trust_of(str(stated)) == UNTRUSTED):
        return
    extra[ORIGIN_KEY] = make_origin("import", path.name)


def _check_limits(store: Store, pending: list[_Pending], path: Path) -> None:
    """Refuse the whole file, each item named, when one holds what the store would not read back
    (over limits.max_file_bytes, a NUL byte, a conflict block, text that is not UTF-8)."""
    problems = []
    for item in pending:
        try:
            check_fields(store, item.text, item.fields)
            _check_file_bytes(store, item)
        except InputRefused as exc:
            problems.append(InvalidMemoryFile(path, item.line, str(exc)))
    if problems:
        raise ImportRefused(problems)


def _check_file_bytes(store: Store, item: _Pending) -> None:
    """The file the item would make, every derived field included, fits the reader's limit."""
    from memctl.core.files.frontmatter import render_memory
    from memctl.core.files.input_limits import check_file_size
    from memctl.store.files import max_file_bytes

    try:
        memory = build_memory(item.text, **item.fields)
    except InputRefused:
        raise
    except MemctlError:
        return  # Why: a bad field is reported with its line where the item is written
    check_file_size(render_memory(memory), max_file_bytes(store), "The item")


def _accepted_items(
    store: Store, pending: list[_Pending], skipped: list[dict[str, Any]]
) -> list[_Pending]:
    """The items to write, redacted; the others go to `skipped` with their line and reason."""
    from memctl.core.learning.quality import low_value_reason
    from memctl.service.memories.redaction import redact_memory_fields

    min_chars = store.settings.write.min_chars
    existing = list_memories(store, include_archived=True).memories
    known_ids = {m.id for _, m in existing}
    known_texts = {_normal(m.body) for _, m in existing}
    lines_by_id: dict[str, int] = {}  # earlier items of this file
    lines_by_text: dict[str, int] = {}
    accepted = []
    for item in pending:
        memory_id = item.fields.get("memory_id")
        text, fields, counts = redact_memory_fields(store, item.text, item.fields)
        try:
            memory = build_memory(text, **fields)
        except MemctlError as exc:
            skipped.append({"line": item.line, "reason": str(exc)})
            continue
        normal = _normal(memory.body)
        reason = None
        if memory_id and memory_id in lines_by_id:
            reason = f"same id as line {lines_by_id[memory_id]}"
        elif memory_id and memory_id in known_ids:
            reason = "id already in the store"
        elif not memory_id and normal in lines_by_text:
            reason = f"same text as line {lines_by_text[normal]}"
        elif not memory_id and normal in known_texts:
            reason = "already remembered"
        elif not memory_id:  # Why: a restored record already passed this gate where it came from.
            low_value = low_value_reason(memory.body, min_chars)
            reason = f"refused as low value: {low_value}" if low_value else None
        if reason:
            skipped.append(
                {"line": item.line, "reason": reason, **({"id": memory_id} if memory_id else {})}
            )
            continue
        accepted.append(_Pending(item.line, text, fields, counts))
        lines_by_id.setdefault(memory.id, item.line)
        lines_by_text.setdefault(normal, item.line)
    return accepted


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


# The front matter keys a JSONL record sets as they are; `id` and `scope` are read apart
# (memory_id, private).
_RECORD_FIELDS = tuple(key for key in FIELD_ORDER if key not in ("id", "scope"))


_TEXT_RECORD_FIELDS = ("title", "type", "source", "agent", "created", "updated", "expires")


def _read_jsonl(text: str, path: Path) -> list[_Pending]:
    pending: list[_Pending] = []
    problems: list[InvalidMemoryFile] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("a line must be a JSON object")
            item = _record_to_pending(record, number)
            build_memory(item.text, **item.fields)  # the same checks add_memory makes
        except json.JSONDecodeError as exc:
            problems.append(InvalidMemoryFile(path, number, f"not valid JSON ({exc.msg})"))
            continue
        except RecursionError:
            problems.append(InvalidMemoryFile(path, number, "JSON nested too deeply"))
            continue
        except (ValueError, TypeError, MemctlError) as exc:
            problems.append(InvalidMemoryFile(path, number, str(exc)))
            continue
        pending.append(item)
    if problems:
        raise ImportRefused(problems)
    return pending


def _record_to_pending(record: dict[str, Any], line: int) -> _Pending:
    body = record.get("body", record.get("text"))
    if not isinstance(body, str) or not body.strip():
        raise ValueError("needs a non-empty 'body' (or 'text')")
    tags = record.get("tags") or []
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",")]
    if not isinstance(tags, list):
        raise ValueError("'tags' must be a list")
    fields: dict[str, Any] = {k: record[k] for k in _RECORD_FIELDS if record.get(k) is not None}
    for key in _TEXT_RECORD_FIELDS:
        if key in fields and not isinstance(fields[key], str):
            raise ValueError(f"'{key}' must be text, not {type(fields[key]).__name__}")
    fields["tags"] = [str(t) for t in tags]
    if record.get("id"):
        fields["memory_id"] = str(record["id"])
    fields["private"] = record.get("scope") == "private"
    for key in ("importance", "confidence"):
        if key in fields:
            fields[key] = float(fields[key])
    if "pinned" in fields:
        fields["pinned"] = bool(fields["pinned"])
    if "version" in fields:
        version = fields["version"]
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError("'version' must be a whole number from 1")
    if fields.get("source", SOURCES[0]) not in SOURCES:
        raise ValueError(f"'source' is '{fields['source']}'; expected one of {', '.join(SOURCES)}")
    relations = fields.get("relations", [])
    if not isinstance(relations, list) or not all(isinstance(r, dict) for r in relations):
        raise ValueError("'relations' must be a list of {type, target}")
    known = set(FIELD_ORDER) | {"body", "text", "path"}
    extra = {k: v for k, v in record.items() if k not in known}
    if extra.get(ORIGIN_KEY) is not None:
        extra[ORIGIN_KEY] = check_origin(extra[ORIGIN_KEY])  # ValueError names the line
    if extra:
        fields["extra"] = extra
    return _Pending(line, body, fields)


def _read_agent_file(text: str, path: Path, fmt: str) -> list[_Pending]:
    first_line, default_type, extra = 1, "semantic", {}
    if fmt == "mdc":
        front, text, first_line = agent_files.split_mdc(text, str(path))
        default_type = agent_files.type_for_heading(front.get("description", ""))
        if front.get("globs"):
            extra["globs"] = front["globs"]
    items = agent_files.read_instructions(
        text, first_line=first_line, default_type=default_type, source=str(path)
    )
    pending = []
    for item in items:
        fields: dict[str, Any] = {
            "type": item.type,
            "source": "external_data",
            "tags": [agent_files.heading_tag(item.heading)] if item.heading else [],
            "extra": {"imported_from": f"{path.name}:{item.line}", **extra},
        }
        pending.append(_Pending(item.line, item.text, fields))
    return pending
