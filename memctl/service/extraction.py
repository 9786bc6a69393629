"""`memctl extract`: a conversation in, a plan of ADD / UPDATE / NOOP out, then (unless a dry
run) the plan applied through the normal write path.

Offline, the rule-based extractor proposes candidates and dedup decides each operation. With
an LLM configured, the model sees the conversation and the nearest stored memories and returns
the operations as JSON, checked strictly; its ADDs still go through dedup. The whole plan is
checked before the first write, so a bad plan writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from memctl.config import LLMSettings, Store
from memctl.core.errors import MemctlError, UsageError
from memctl.core.files.history import current_text
from memctl.core.files.memory import Memory
from memctl.core.learning.conversation import Candidate, ToolCall, Turn
from memctl.core.learning.extract_llm import build_messages, checker
from memctl.core.learning.extract_rules import extract_candidates
from memctl.core.learning.quality import low_value_reason
from memctl.core.learning.revisions import Decision, Neighbor, decide, derive_subject
from memctl.core.learning.routing import PROJECT, USER, route
from memctl.core.trust.provenance import borrowed_origin, recorded_origin, stamp_origin
from memctl.service.memories.add import (
    build_memory,
    embed_texts,
    nearest_memories,
    thresholds,
)
from memctl.service.memories.batch import BatchItem, save_batch
from memctl.service.memories.redaction import redact_for_store
from memctl.service.retrieval.indexing import index_text, open_index, sync_index

# Front matter key: the transcript lines a learned memory came from (`session:<id>#L3-L9`).
LEARNED_FROM = "learned_from"
CARRIED_KEYS = ("commands", "paths", LEARNED_FROM)


@dataclass
class PlanItem:
    op: str  # ADD | UPDATE | NOOP
    type: str
    text: str
    confidence: float
    source: str
    target_id: str | None = None
    target_item: int | None = (
        None  # an earlier item of this plan (1-based) that it repeats or revises
    )
    reason: str = ""
    similarity: float | None = None
    subject: str | None = None
    store: str | None = None  # "project" or "user" when a user store exists; None: the one store
    origin: str | None = None  # whose words (core.trust.provenance); None: what `source` implies
    # anchors (`commands`, `paths`) and `learned_from` the memory is written with
    carried: dict[str, Any] = field(default_factory=dict)

    @property
    def target_label(self) -> str:
        if self.target_id:
            return self.target_id
        return f"item {self.target_item}" if self.target_item else ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.store is None:
            del data["store"]  # Why: with one store there is nothing to choose; output as before
        if self.origin is None:
            del data["origin"]
        if not self.carried:
            del data["carried"]
        return data


@dataclass
class ExtractResult:
    source: str
    mode: str  # "rules" or "llm"
    turns: int
    plan: list[PlanItem]
    dry_run: bool
    skipped: list[dict[str, str]] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)
    redacted: dict[str, int] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "source": self.source,
            "mode": self.mode,
            "turns": self.turns,
            "dry_run": self.dry_run,
            "plan": [item.to_dict() for item in self.plan],
            "skipped": self.skipped,
            "applied": self.applied,
            "redacted": self.redacted,
        }
        if self.usage is not None:
            data["usage"] = self.usage
        if self.warning:
            data["warning"] = self.warning
        return data


def extract(
    store: Store,
    turns: list[Turn],
    *,
    source: str = "<input>",
    dry_run: bool = False,
    use_llm: bool | None = None,
    mock_response: str | list[str] | None = None,
    user_store: Store | None = None,
    sync: bool = True,
    tool_outputs: Sequence[tuple[str, str]] = (),
    tool_calls: Sequence[ToolCall] = (),
    session: str = "",
    tool_output_lines: Sequence[int] = (),
    fallback_to_rules: bool = False,
) -> ExtractResult:
    """Plan the memories a conversation states and, unless `dry_run`, write them.

    `tool_outputs` (origin, text): what tools returned in the conversation; an item that copies
    their words keeps their (untrusted) origin (core.trust.provenance.borrowed_origin).
    `fallback_to_rules`: when the model fails, extract by rules instead of failing (a hook's
    ingest must not lose the session; `memctl extract` says what failed).
    `tool_output_lines`: the transcript line of each tool output, when known: a user's
    words are then checked only against what tools said before them (a commit message the
    agent wrote from the user's words later does not make them the tool's).
    `tool_calls`: the agent's tool calls, from which the offline path learns the project's
    commands and gotchas (core.learning.extract_commands). `session`: the transcript's session id,
    recorded with each memory's transcript lines (`learned_from: session:<id>#L<a>-L<b>`).

    `use_llm`: None means "if one is configured". `mock_response` goes to litellm's mock path.
    `user_store`: what is about the person goes there (config `routing:`), the rest here.
    `sync=False` leaves indexing what was written to the caller.
    """
    from memctl.integrations.llm import llm_settings

    settings = llm_settings(store)
    if use_llm and settings is None:
        raise UsageError(
            "No LLM configured: set llm.model in config.yaml or MEMCTL_LLM_MODEL, or use --no-llm."
        )
    turns, redacted = _redacted_turns(store, turns)
    stores = Targets(store, user_store)
    for each in stores.all():
        sync_index(each)
    warning = None
    plan: list[PlanItem] = []
    usage, mode = None, "rules"
    if settings is not None and use_llm is not False:
        mock = mock_response if mock_response is not None else settings.mock_response
        try:
            plan, usage = _llm_plan(stores, turns, settings, mock, tool_outputs, tool_calls)
            mode = "llm"
        except MemctlError as exc:
            if use_llm or not fallback_to_rules:
                raise
            # Why: a hook's ingest must not lose the session because the model failed once.
            warning = f"LLM extraction failed, extracted by rules instead: {exc}"
    if mode == "rules":
        plan = _rules_plan(stores, turns, tool_outputs, tool_calls, session, tool_output_lines)
    plan, skipped = _vet(stores, plan)
    result = ExtractResult(
        source, mode, len(turns), plan, dry_run, skipped, redacted=redacted, usage=usage
    )
    result.warning = warning
    if not dry_run:
        result.applied = apply_plan(store, plan, user_store, sync=sync)
    return result


@dataclass(frozen=True)
class Targets:
    """The stores a plan may write to: the project's, and the user's when there is one."""

    project: Store
    user: Store | None = None

    def all(self) -> list[Store]:
        return [self.project] + ([self.user] if self.user is not None else [])

    def label_for(self, memory_type: str, text: str) -> str | None:
        """Where a new memory goes ("user" / "project"); None when there is only one store."""
        if self.user is None:
            return None
        return route(memory_type, text, self.project.section("routing"))

    def get(self, label: str | None) -> Store:
        return self.user if label == USER and self.user is not None else self.project

    def holding(self, memory_id: str) -> str | None:
        """The label of the store that holds this memory id (the project's first)."""
        if self.user is None:
            return None
        from memctl.store.files import find_by_id

        if find_by_id(self.project.root, memory_id) is None and find_by_id(
            self.user.root, memory_id
        ):
            return USER
        return PROJECT


def _redacted_turns(store: Store, turns: list[Turn]) -> tuple[list[Turn], dict[str, int]]:
    """Redact before anything leaves for an LLM or reaches a file."""
    counts: dict[str, int] = {}
    cleaned = []
    for turn in turns:
        redaction = redact_for_store(store, turn.content)
        for kind, n in redaction.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        cleaned.append(replace(turn, content=redaction.text))
    return cleaned, counts


# --- planning -----------------------------------------------------------------------------


def _rules_plan(
    stores: Targets,
    turns: list[Turn],
    tool_outputs: Sequence[tuple[str, str]] = (),
    tool_calls: Sequence[ToolCall] = (),
    session: str = "",
    tool_output_lines: Sequence[int] = (),
) -> list[PlanItem]:
    from memctl.core.learning.extract_commands import anchor_test_rules, command_candidates

    said = anchor_test_rules(
        extract_candidates(turns), tool_calls, [t.line for t in turns if t.role == "user"]
    )
    candidates = said + command_candidates(tool_calls, home_folder())

    def outputs_before(candidate: Candidate) -> Sequence[tuple[str, str]]:
        if not candidate.line or len(tool_output_lines) != len(tool_outputs):
            return tool_outputs
        return [
            o for o, at in zip(tool_outputs, tool_output_lines, strict=True) if at < candidate.line
        ]

    proposed = [
        (
            stamp_origin(
                build_memory(
                    c.text,
                    type=c.type,
                    confidence=c.confidence,
                    source=c.source,
                    extra=_candidate_extra(c, session),
                ),
                # Why not for commands: the agent ran them; a tool printing the same words
                # (a script echoing its own name) does not make them the tool's.
                c.origin
                if c.commands
                else borrowed_origin(f"{c.evidence}\n{c.text}", outputs_before(c)) or c.origin,
            ),
            "",
        )
        for c in candidates
    ]
    return _dedup_plan(stores, proposed)


def _candidate_extra(candidate: Candidate, session: str) -> dict[str, Any]:
    """Front matter a candidate brings: its subject, anchors and transcript lines."""
    extra: dict[str, Any] = {"subject": candidate.subject_key}
    if candidate.commands:
        extra["commands"] = list(candidate.commands)
    if candidate.paths:
        extra["paths"] = list(candidate.paths)
    if session and candidate.line:
        last = max(candidate.last_line, candidate.line)
        extra[LEARNED_FROM] = f"session:{session}#L{candidate.line}-L{last}"
    return extra


def home_folder() -> str:
    """The user's home folder, written as `~` in what is learned from commands."""
    import os

    return os.path.expanduser("~") if os.path.expanduser("~") != "~" else ""


def _dedup_plan(
    stores: Targets, proposed: Sequence[tuple[Memory, str] | PlanItem]
) -> list[PlanItem]:
    """ADD, NOOP (near duplicate) or UPDATE (same subject) for each proposed memory, against the
    store it is routed to and the earlier items of the same plan. Ready PlanItems pass through."""
    store = stores.project
    fresh = [entry for entry in proposed if not isinstance(entry, PlanItem)]
    vectors = iter(embed_texts(store, [index_text(memory) for memory, _ in fresh]) if fresh else [])
    limits = thresholds(store)
    plan: list[PlanItem] = []
    # (item number, memory, vector, store label) of earlier ADDs
    planned: list[tuple[int, Memory, Any, str | None]] = []
    for entry in proposed:
        if isinstance(entry, PlanItem):
            plan.append(entry)
            continue
        memory, note = entry
        vector = next(vectors)
        subject = memory.extra.get("subject") or derive_subject(memory.body, memory.type)
        if subject:
            memory.extra["subject"] = subject
        label = stores.label_for(memory.type, memory.body)
        neighbors = nearest_memories(stores.get(label), memory, vector)
        earlier = {m.id: number for number, m, _, _ in planned}
        neighbors += [
            Neighbor(m, "", float(vector @ v))
            for _, m, v, where in planned
            if m.scope == memory.scope and where == label
        ]
        decision = decide(memory, memory.extra.get("subject"), neighbors, limits)
        item = _item(memory, decision, earlier, note)
        item.store = label
        plan.append(item)
        if item.op == "ADD":
            planned.append((len(plan), memory, vector, label))
    return plan


def _item(memory: Memory, decision: Decision, earlier: dict[str, int], note: str) -> PlanItem:
    op = {"add": "ADD", "merge": "NOOP", "update": "UPDATE"}[decision.op]
    item = PlanItem(
        op,
        memory.type,
        memory.body,
        memory.confidence,
        memory.source,
        subject=memory.extra.get("subject"),
        origin=recorded_origin(memory),
        carried={key: memory.extra[key] for key in CARRIED_KEYS if key in memory.extra},
    )
    if decision.target is None:
        item.reason = note or "new"
        return item
    target = decision.target.memory
    if target.id in earlier:
        item.target_item = earlier[target.id]
    else:
        item.target_id = target.id
    item.similarity = round(decision.target.cosine, 4)
    if op == "NOOP":
        item.reason = f"{decision.reason} ({item.similarity:.2f}): would merge, +1 mention"
    elif memory.confidence >= target.confidence:
        item.reason = f"{decision.reason}: replaces it; old value kept in its history"
    else:
        item.reason = (
            f"{decision.reason}: stored value has higher confidence "
            f"({target.confidence:.2f}); new one goes to its history"
        )
    if note:
        item.reason = f"{note}; {item.reason}"
    return item


def _llm_plan(
    stores: Targets,
    turns: list[Turn],
    settings: LLMSettings,
    mock_response,
    tool_outputs: Sequence[tuple[str, str]] = (),
    tool_calls: Sequence[ToolCall] = (),
) -> tuple[list[PlanItem], dict]:
    from memctl.integrations.llm import complete_json

    limit = stores.project.settings.extract.context_memories
    existing = [m for store in stores.all() for m in _context_memories(store, turns, limit)]
    messages = build_messages(
        turns,
        [(m.id, m.type, current_text(m.body)) for m in existing],
        stores.project.settings.extract.max_conversation_chars,
    )
    known = {memory.id for memory in existing}  # the model can only name ids it was shown
    items, reply = complete_json(
        settings, messages, mock_response=mock_response, validate=checker(known)
    )
    proposed: list[tuple[Memory, str] | PlanItem] = []
    for item in items:
        source = "implicit_inference"  # the wording is the model's, not the user's
        reason = f"LLM: {item.reason}" if item.reason else "LLM"
        borrowed = borrowed_origin(item.text, tool_outputs)
        if item.op == "ADD":
            # Why: the model's ADDs take the same dedup path as `memctl add`, so a paraphrase
            # of a stored memory merges instead of duplicating it.
            memory = build_memory(
                item.text, type=item.type, confidence=item.confidence, source=source
            )
            proposed.append((stamp_origin(memory, borrowed), reason))
        else:
            proposed.append(
                PlanItem(
                    item.op,
                    item.type,
                    item.text,
                    item.confidence,
                    source,
                    target_id=item.target_id,
                    reason=reason,
                    store=stores.holding(item.target_id) if item.target_id else None,
                    origin=borrowed,
                )
            )
    # Why also here: the model sees the conversation, not the tool calls; the commands that
    # worked come from those, the same way as offline.
    from memctl.core.learning.extract_commands import command_candidates

    for candidate in command_candidates(tool_calls, home_folder()):
        memory = build_memory(
            candidate.text,
            type=candidate.type,
            confidence=candidate.confidence,
            source=candidate.source,
            extra=_candidate_extra(candidate, ""),
        )
        proposed.append((stamp_origin(memory, candidate.origin), ""))
    return _dedup_plan(stores, proposed), reply.usage()


def _context_memories(store: Store, turns: list[Turn], limit: int) -> list[Memory]:
    """The stored memories nearest to what the user said (the LLM needs them to pick UPDATE/NOOP)."""
    queries = [t.content[:2000] for t in turns if t.role == "user" and t.content.strip()][-30:]
    if not queries or limit <= 0 or not open_index(store).exists():
        return []
    best: dict[str, Neighbor] = {}
    probe = Memory(id="", scope="project")
    for vector in embed_texts(store, queries):
        for neighbor in nearest_memories(store, probe, vector, limit=3):
            known = best.get(neighbor.memory.id)
            if known is None or neighbor.cosine > known.cosine:
                best[neighbor.memory.id] = neighbor
    ranked = sorted(best.values(), key=lambda n: n.cosine, reverse=True)[:limit]
    return [n.memory for n in ranked]


# --- checking and applying ----------------------------------------------------------------


def _vet(stores: Targets, plan: list[PlanItem]) -> tuple[list[PlanItem], list[dict[str, str]]]:
    """Drop low-value items (reported, not written) and check every item before any write."""
    min_chars = stores.project.settings.write.min_chars
    kept: list[PlanItem] = []
    skipped: list[dict[str, str]] = []
    renumber: dict[int, int] = {}
    for number, item in enumerate(plan, start=1):
        reason = low_value_reason(item.text, min_chars)
        if reason:
            skipped.append({"text": item.text, "reason": reason})
            continue
        build_memory(item.text, type=item.type, confidence=item.confidence, source=item.source)
        if item.target_id:
            _target_exists(stores.get(item.store), item.target_id)
        if item.target_item:
            if item.target_item not in renumber:
                item.op, item.target_item = "ADD", None  # its target was dropped: stands alone
            else:
                item.target_item = renumber[item.target_item]
        kept.append(item)
        renumber[number] = len(kept)
    return kept, skipped


def _target_exists(store: Store, memory_id: str) -> None:
    from memctl.service.memories.lookup import get_memory

    get_memory(store, memory_id)  # raises MemoryNotFound / InvalidMemoryFile


def _proposed(extra: dict[str, Any]) -> dict[str, Any]:
    """The anchors a written memory carries, for the report of what extraction did."""
    found = {key: extra[key] for key in ("paths", "symbols", "commands", "apply") if key in extra}
    return {"anchors": found} if found else {}


def _anchored(project: Store, item: PlanItem, extra: dict[str, Any], to_user: bool) -> dict:
    """Anchors the item's text names in the project's code (new memories only), and the
    project it came from when the user store receives it (core/anchors, service/anchoring)."""
    from memctl.service.anchoring import anchored_extra, bound_to_project, propose_for

    if item.op == "ADD" and not item.target_id:
        try:
            # Why the item's own anchors win: a command learned from a tool call is exact.
            extra = anchored_extra(
                extra,
                propose_for(project, item.text).anchors,
                commands=extra.get("commands"),
                paths=extra.get("paths"),
            )
        except OSError:
            pass  # no code tree to read: no anchors, the memory is still written
    return bound_to_project(project, item.type, item.text, extra) if to_user else extra


def apply_plan(
    store: Store, plan: list[PlanItem], user_store: Store | None = None, *, sync: bool = True
) -> list[dict[str, Any]]:
    """Write the plan as one batch per store it routes to (the user store's when routed
    there; see memories.batch); returns what each item did."""
    from memctl.service.memories.redaction import redact_memory_fields

    stores = Targets(store, user_store)
    batches: dict[str | None, list[BatchItem]] = {}
    position_of: dict[int, tuple[str | None, int]] = {}  # plan item -> (store, place in batch)
    order: list[tuple[str | None, int]] = []  # the batch slot of each outcome written
    outcomes: list[dict[str, Any]] = []
    for number, item in enumerate(plan, start=1):
        earlier = position_of.get(item.target_item) if item.target_item else None
        if item.op == "NOOP" and item.target_id is None and earlier is None:
            outcomes.append({"item": number, "action": "none", "id": None})
            continue
        fields: dict[str, Any] = {
            "type": item.type,
            "confidence": item.confidence,
            "source": item.source,
        }
        if item.subject or item.carried:
            fields["extra"] = {
                **({"subject": item.subject} if item.subject else {}),
                **item.carried,
            }
        # Why: an item about an earlier one goes where that one was written.
        label = earlier[0] if earlier is not None and not item.target_id else item.store
        target_store = stores.get(label)
        fields["extra"] = _anchored(
            store, item, fields.get("extra") or {}, target_store is not store
        )
        batch = batches.setdefault(label, [])
        text, fields, _ = redact_memory_fields(target_store, item.text, fields)
        entry = BatchItem(stamp_origin(build_memory(text, **fields), item.origin))
        op = "update" if item.op == "UPDATE" else "merge"
        if item.target_id:
            entry.update_of = item.target_id if op == "update" else None
            entry.duplicate_of = item.target_id if op == "merge" else None
        elif earlier is not None:
            entry.target_item, entry.op = earlier[1], op
        position_of[number] = (label, len(batch))
        order.append((label, len(batch)))
        batch.append(entry)
        outcomes.append({"item": number})
    results = {
        label: save_batch(stores.get(label), batch, sync=sync) for label, batch in batches.items()
    }
    written = (o for o in outcomes if "action" not in o)
    for outcome, (label, position) in zip(written, order, strict=True):
        result = results[label][position]
        outcome.update(
            {
                "action": result.action,
                "id": result.merged_into or result.memory.id,
                "path": str(result.path),
                **({"store": label} if label else {}),
                **_proposed(result.memory.extra),
            }
        )
    return outcomes
