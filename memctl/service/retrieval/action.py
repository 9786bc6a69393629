"""Action-time recall: the memories for the file or command an agent is about to touch.

First the memories anchored to it (front matter `paths:` / `commands:` / `symbols:`), checked
against the code: one whose anchors no longer exist is stale and is shown as such, never as
fact. Then the best recall matches for the path and the edit's text, above a relevance floor.
Memories already shown in the session, `apply: manual` ones and another project's memories
are left out; everything is cut to a token budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memctl.config import Store
from memctl.core.codebase.anchors import command_matches, path_matches
from memctl.core.files.history import agent_body
from memctl.core.language.tokens import estimate_tokens
from memctl.core.recall.hook_blocks import BlockItem, fit_block
from memctl.service.anchoring import GitRenames, code_tree, project_of
from memctl.service.retrieval.anchor_table import AnchorEntry, anchor_entries
from memctl.service.retrieval.hits import hit_json, memory_date
from memctl.store.files import max_file_bytes
from memctl.store.parsed_memories import read_memory_kept

HEADING = "## For what you are about to touch"
STALE_NOTE = "Possibly outdated (the code they point at is gone; check before relying on them):"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_PATH_SPLIT = re.compile(r"[/._\-\s]+|(?<=[a-z])(?=[A-Z])")

Stores = list[tuple[str, Store]]


@dataclass(frozen=True)
class ActionRequest:
    paths: tuple[str, ...] = ()  # files about to be read or changed (absolute or from the root)
    commands: tuple[str, ...] = ()  # shell command lines about to run
    text: str = ""  # the edit's new text, if any
    exclude: frozenset[str] = frozenset()  # ids already shown in this session
    budget: int = 300  # tokens
    k: int = 2  # best matches added after the anchored memories
    named: int = 0  # memories whose text names the file (core.recall.named_paths), at most
    named_share: float = 0.05  # a name held by more of the store than this says nothing
    min_relevance: float | None = 0.5  # floor for those matches; None: recall's own
    matches: bool = True  # False: anchored memories only
    include_private: bool = False


@dataclass
class ActionItem:
    id: str
    title: str
    type: str
    body: str
    store: str
    via: str  # "paths: src/*.py", "commands: make", "symbols: Foo", "match"
    stale: str = ""  # why it is stale; "" when its anchors hold
    relevance: float | None = None
    memory: Any = field(default=None, repr=False)  # for the quarantine gate; not in the JSON
    origin: str = ""
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON of a hit (service.retrieval.hits.HIT_KEYS), as recall gives it."""
        memory = self.memory
        return hit_json(
            id=self.id,
            path=self.path or None,
            title=self.title,
            type=self.type,
            tags=list(memory.tags) if memory is not None else [],
            store=self.store,
            via=self.via,
            date=memory_date(memory) if memory is not None else None,
            relevance=None if self.relevance is None else round(self.relevance, 4),
            stale=self.stale or None,
            origin=self.origin or None,
            body=self.body,
        )


@dataclass
class ActionResult:
    items: list[ActionItem] = field(default_factory=list)  # what is injected, in order
    stale: list[ActionItem] = field(default_factory=list)  # anchored but stale: shown as such
    markdown: str = ""
    shown: tuple[str, ...] = ()
    tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [item.to_dict() for item in self.items],
            "stale": [item.to_dict() for item in self.stale],
            "shown": list(self.shown),
            "tokens": self.tokens,
        }


def relative_paths(root: Path, paths: tuple[str, ...]) -> tuple[str, ...]:
    out = []
    for raw in paths:
        path = Path(raw)
        if path.is_absolute():
            try:
                path = path.resolve().relative_to(root.resolve())
            except ValueError:
                continue  # outside the project: nothing here is anchored to it
        out.append(path.as_posix().removeprefix("./"))
    return tuple(out)


def _anchor_reason(entry: AnchorEntry, paths, commands, words) -> str:
    anchors = entry.anchors
    for pattern in anchors.paths:
        if any(path_matches(pattern, path) for path in paths):
            return f"paths: {pattern}"
    for anchor in anchors.commands:
        if any(command_matches(anchor, line) for line in commands):
            return f"commands: {anchor}"
    for symbol in anchors.symbols:
        if symbol in words:
            return f"symbols: {symbol}"
    return ""


def usable(entry: AnchorEntry, project: str, include_private: bool) -> bool:
    return (
        entry.project in (None, project)
        and not entry.superseded
        and (include_private or entry.scope != "private")
    )


def action_recall(stores: Stores, request: ActionRequest) -> ActionResult:
    """What to put before the agent's action (see the module docstring)."""
    root, project = project_of(stores[0][1])
    paths = relative_paths(root, request.paths)
    words = set(_WORD.findall(request.text)) | set(_WORD.findall(" ".join(request.commands)))
    tree = None
    renames = GitRenames(stores[0][1])
    anchored: list[ActionItem] = []
    stale: list[ActionItem] = []
    taken: set[str] = set(request.exclude)
    for label, store in stores:
        for entry in anchor_entries(store):
            if entry.id in taken or entry.apply == "manual":
                continue
            if not usable(entry, project, request.include_private):
                continue
            via = _anchor_reason(entry, paths, request.commands, words)
            if not via and paths and entry.anchors.paths:
                tree = tree or code_tree(stores[0][1])
                if not set(entry.anchors.paths) <= tree.file_list():  # a file git may have moved
                    moved = replace(entry, anchors=renames.carry(entry.anchors))
                    via = _anchor_reason(moved, paths, request.commands, words)
            if not via:
                continue
            tree = tree or code_tree(stores[0][1])
            why = renames.staleness(entry.anchors, tree)
            item = _item(store, label, entry, via, why.reason() if why else "")
            if item is None:
                continue
            (stale if item.stale else anchored).append(item)
            taken.add(entry.id)
    named = _named(stores, request, paths, taken, project)
    taken.update(item.id for item in named)
    matched = _matches(stores, request, paths, taken, project) if request.matches else []
    return _fit(_not_quarantined(stores, anchored + named + matched), stale, request.budget)


def _not_quarantined(stores: Stores, items: list[ActionItem]) -> list[ActionItem]:
    """Items the quarantine lets through (service.provenance), each with its origin label."""
    if not items:
        return items
    from memctl.service.provenance import gates_for, injectable

    gates = gates_for(dict(stores))
    kept = []
    for item, origin in injectable(items, gates):
        item.origin = origin
        kept.append(item)
    return kept


def _item(store: Store, label: str, entry: AnchorEntry, via: str, why: str) -> ActionItem | None:
    try:
        memory = read_memory_kept(store.root, entry.relpath, max_file_bytes(store))
    except Exception:  # noqa: BLE001 - a file gone or broken since the table was read
        return None
    return ActionItem(
        entry.id,
        entry.title,
        entry.type,
        agent_body(memory.body),
        label,
        via,
        why,
        memory=memory,
        path=str(store.root / entry.relpath),
    )


def _named(
    stores: Stores, request: ActionRequest, paths: tuple[str, ...], taken: set[str], project: str
) -> list[ActionItem]:
    """Up to `request.named` durable memories whose text names one of the files (its path, a
    folder it sits in, its name or stem): the rule written about `.changeset/` for a file
    created there. Not one already taken, `apply: manual`, superseded, private unless shared,
    or another project's."""
    from memctl.core.codebase.anchors import APPLY_KEY, PROJECT_KEY
    from memctl.service.retrieval.named import memories_naming

    if request.named <= 0 or not paths:
        return []
    out: list[ActionItem] = []
    for label, store in stores:
        for memory_id, relpath in memories_naming(store, paths, request.named_share):
            if memory_id in taken or len(out) >= request.named:
                continue
            try:
                memory = read_memory_kept(store.root, relpath, max_file_bytes(store))
            except Exception:  # noqa: BLE001 - a file gone or broken since the index was read
                continue
            extra = memory.extra
            if (
                extra.get(APPLY_KEY) == "manual"
                or extra.get("superseded_by")
                or extra.get(PROJECT_KEY) not in (None, project)
                or (memory.scope == "private" and not request.include_private)
            ):
                continue
            out.append(
                ActionItem(
                    memory.id,
                    memory.display_title,
                    memory.type,
                    agent_body(memory.body),
                    label,
                    "named",
                    memory=memory,
                    path=str(store.root / relpath),
                )
            )
            taken.add(memory_id)
    return out


def path_query(paths: tuple[str, ...], text: str) -> str:
    """A recall query for an action: the path's words (`src/i18n/Resources.resx` ->
    "src i18n Resources resx") and the start of the edit's text."""
    parts = [" ".join(w for w in _PATH_SPLIT.split(path) if w) for path in paths]
    return " ".join([*parts, " ".join(text.split())[:600]]).strip()


def _matches(
    stores: Stores, request: ActionRequest, paths: tuple[str, ...], taken: set[str], project: str
) -> list[ActionItem]:
    from memctl.service.retrieval.use_case import PROMPT, RecallRequest, recall

    # Why only with the edit's text or a command: a path's words alone are a poor query (on
    # the project-task benchmark's dev half, 11 of 117 path-only matches were relevant).
    if not (request.text.strip() or request.commands) or request.k <= 0:
        return []
    query = path_query(paths, request.text) or " ".join(request.commands)[:600]
    hits = recall(
        RecallRequest(
            store=stores[0][1],
            query=query,
            k=request.k * 3,
            include_private=request.include_private,
            min_relevance=request.min_relevance,
            stores=stores,
            purpose=PROMPT,
        )
    ).hits
    manual = {
        entry.id
        for _, store in stores
        for entry in anchor_entries(store)
        if entry.apply == "manual" or entry.project not in (None, project)
    }
    out = []
    for hit in hits:
        if hit.id in taken or hit.id in manual:
            continue
        store_label = getattr(hit, "store", "project")
        out.append(
            ActionItem(
                hit.id,
                hit.title,
                hit.type,
                agent_body(hit.body),
                store_label,
                "match",
                "",
                hit.relevance,
                memory=hit.memory,
                path=str(hit.path),
            )
        )
        if len(out) >= request.k:
            break
    return out


def _fit(items: list[ActionItem], stale: list[ActionItem], budget: int) -> ActionResult:
    footer = ""
    if stale:
        footer = STALE_NOTE + "\n" + "\n".join(f"- {s.title} ({s.id}): {s.stale}" for s in stale)
    block = fit_block(
        HEADING, [BlockItem(i.id, i.title, i.type, i.body, i.origin) for i in items], budget, footer
    )
    kept = [item for item in items if item.id in set(block.shown)]
    markdown = block.markdown
    if not markdown and stale and estimate_tokens(footer) <= budget:
        markdown = footer + "\n"
    shown = tuple(block.shown) + tuple(s.id for s in stale if markdown)
    return ActionResult(kept, stale, markdown, shown, estimate_tokens(markdown) if markdown else 0)
