"""list, show, edit: reading the files, never importing the index or the model."""

from __future__ import annotations

import shlex
import subprocess
import sys

import typer
from rich.table import Table
from rich.text import Text

from memctl.cli.output import handles_errors, print_json, stdout, warn_problems
from memctl.cli.state import current_stores, store_only_option
from memctl.config import editor_command
from memctl.core.errors import MemctlError, MemoryNotFound, UsageError
from memctl.core.files.frontmatter import front_matter_dict
from memctl.core.files.history import split_history
from memctl.core.language.text import counted
from memctl.core.trust.terminal import printable
from memctl.service import get_memory, list_memories


def memory_dict(memory, path) -> dict:
    data = front_matter_dict(memory)
    data["path"] = str(path)
    data["body"] = memory.body
    history = split_history(memory.body)[1]
    if history:
        data["history"] = history  # earlier values, oldest first (also in the body's ## History)
    return data


def shown_value(value) -> str:
    """A front matter value as a person reads it: `deploy, ops` for a list, `supports:
    deploy-steps` for a relation, never Python's `['deploy']`."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {shown_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        sep = "; " if any(isinstance(item, (dict, list)) for item in value) else ", "
        return sep.join(shown_value(item) for item in value)
    return str(value)


def find_memory(ctx: typer.Context, memory_id: str):
    """A memory of this store, else of the user store (ids shown by a federated recall)."""
    stores = current_stores(ctx)
    for number, (_, store) in enumerate(stores):
        try:
            return get_memory(store, memory_id)
        except MemoryNotFound:
            if number == len(stores) - 1:
                raise
    raise MemoryNotFound(memory_id)


def newest_page(stores, types, tags, include_archived: bool, limit: int, offset: int):
    """(listing, labels, roots): a page of the newest memories across the stores, the
    project's first when two were made together."""
    from memctl.service.memories.lookup import Listing

    entries, problems = [], []
    for order, (label, store) in enumerate(stores):
        page = list_memories(store, types or None, tags or None, include_archived, limit + offset)
        problems += page.problems
        for relpath, memory in page.memories:
            key = (memory.created or "", -order, memory.id)
            entries.append((key, label if len(stores) > 1 else None, store.root, relpath, memory))
    entries.sort(key=lambda entry: entry[0], reverse=True)
    chosen = entries[offset : offset + limit]
    listing = Listing([(e[3], e[4]) for e in chosen], problems)
    return listing, [e[1] for e in chosen], [e[2] for e in chosen]


def _bindings(project_store, memories, labels) -> list[str]:
    """Per memory: "this project", "shared" (every project) or the other project's name."""
    from memctl.service.anchoring import project_of

    here = project_of(project_store)[1]
    out = []
    for (_, memory), label in zip(memories, labels, strict=True):
        bound = memory.extra.get("project")
        if label in (None, "project") or bound == here:
            out.append("this project")
        else:
            out.append(str(bound) if bound else "shared")
    return out


@handles_errors
def list_command(
    ctx: typer.Context,
    types: list[str] = typer.Option([], "--type", "-t", help="Only this type; repeatable."),
    tags: list[str] = typer.Option([], "--tag", help="Only memories with this tag; repeatable."),
    include_archived: bool = typer.Option(False, "--include-archived", help="Also list archive/."),
    store_only: bool = store_only_option(),
    limit: int = typer.Option(
        None,
        "--limit",
        "-n",
        min=1,
        help="Only the N newest, newest first (reads only the files it shows).",
    ),
    offset: int = typer.Option(
        0, "--offset", min=0, help="With --limit: skip this many newest first (the next page)."
    ),
    by_project: bool = typer.Option(
        False,
        "--project",
        help="Show which project each memory is bound to: this project's store, another "
        "project's (user store, never recalled here) or shared by every project.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the memories as JSON."),
) -> None:
    """List memories, oldest first, or with --limit a page of the newest (the user store's
    too, unless --store-only).

    Example: memctl list --limit 20 --type procedural --tag deploy
    """
    stores = current_stores(ctx, store_only)
    labels: list[str | None]
    if offset and limit is None:
        raise UsageError("--offset pages with --limit: give both.")
    if limit is not None:
        listing, labels, roots = newest_page(stores, types, tags, include_archived, limit, offset)
    elif len(stores) == 1:
        store = stores[0][1]
        listing = list_memories(store, types or None, tags or None, include_archived)
        labels, roots = [None] * len(listing.memories), [store.root] * len(listing.memories)
    else:
        from memctl.service.retrieval.federated import federated_list

        listing = federated_list(stores, types or None, tags or None, include_archived)
        labels, roots = list(listing.stores), list(listing.roots)
    warn_problems(listing.problems)
    binding = _bindings(stores[0][1], listing.memories, labels) if by_project else None
    if as_json:
        print_json(
            [
                {
                    **memory_dict(m, root / p),
                    **({"store": label} if label else {}),
                    **({"bound_to": binding[n]} if binding else {}),
                }
                for n, ((p, m), label, root) in enumerate(
                    zip(listing.memories, labels, roots, strict=True)
                )
            ]
        )
        return
    table = Table(box=None, pad_edge=False)
    columns = (
        ["id", "type", "title", "tags", "updated"]
        + (["store"] if len(stores) > 1 else [])
        + (["project"] if binding else [])
    )
    for column in columns:
        table.add_column(column)
    for n, ((_, memory), label) in enumerate(zip(listing.memories, labels, strict=True)):
        table.add_row(
            memory.id,
            memory.type,
            memory.display_title,
            ", ".join(memory.tags),
            memory.updated or "",
            *([label] if label else []),
            *([binding[n]] if binding else []),
        )
    stdout.print(table)
    stdout.print(counted(len(listing.memories), "memory", "memories"))
    if binding:
        counts = {name: binding.count(name) for name in dict.fromkeys(binding)}
        stdout.print("by project: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


@handles_errors
def show_command(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., metavar="ID", help="The memory's id."),
    as_json: bool = typer.Option(False, "--json", help="Print the memory as JSON."),
) -> None:
    """Show one memory: its fields and body (from the user store when it is not here).

    Example: memctl show 1m80k2c9a7qz (ids are in list and recall output)
    """
    path, memory = find_memory(ctx, memory_id)
    if as_json:
        print_json(memory_dict(memory, path))
        return
    stdout.print(
        Text.assemble(
            (printable(memory.display_title), "bold"),
            printable(f"  ({memory.type}, {memory.id})"),
        )
    )
    stdout.print(Text(str(path), style="dim"))
    for key, value in front_matter_dict(memory).items():
        if key not in ("id", "title", "type") and value not in (None, "", []):
            stdout.print(f"{key}: {shown_value(value)}", markup=False)
    stdout.print()
    stdout.print(memory.body.rstrip(), markup=False)


def has_terminal() -> bool:
    """Can the editor be opened again (a person at a terminal), or is this a script?"""
    return sys.stdin.isatty()


def run_editor(editor: str, path) -> None:
    try:
        subprocess.run([*shlex.split(editor), str(path)], check=False)
    except FileNotFoundError:
        raise MemctlError(f"Editor '{editor}' not found; set $EDITOR.") from None


@handles_errors
def edit_command(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., metavar="ID", help="The memory's id."),
) -> None:
    """Open a memory in $EDITOR; a save the store could not read is not written.

    Like crontab -e: a broken save (YAML, limits) reopens the editor with the problem on top;
    without a terminal the old file stays and your edit is kept beside it. Broken files open
    too, so they can be fixed. The next read command re-indexes the memory.

    Example: EDITOR=nano memctl edit 1m80k2c9a7qz
    """
    from memctl.service.memories import editing

    target = editing.edit_target([store for _, store in current_stores(ctx)], memory_id)
    original = target.path.read_bytes()
    copy = editing.working_copy(target, memory_id)
    editing.write_working_copy(copy, original)
    editor = editor_command()
    while True:
        run_editor(editor, copy)
        saved = editing.without_notes(copy.read_bytes())
        if saved == original or not saved.strip():
            copy.unlink(missing_ok=True)
            stdout.print(f"No change saved: {target.path}", markup=False)
            return
        problem = editing.edit_problem(target, saved)
        if problem is None:
            break
        if not has_terminal():
            raise MemctlError(
                f"Not saved: {target.path}: {problem}. The file is unchanged; your edit is in "
                f"{copy} (fix it there and copy it over, or run memctl edit {memory_id} again "
                "in a terminal)."
            )
        editing.write_working_copy(copy, editing.with_note_on_top(saved, problem))
    if not editing.save_edit(target, saved, original):
        raise MemctlError(
            f"Not saved: {target.path} changed on disk while you edited it; your edit is in {copy}."
        )
    copy.unlink(missing_ok=True)
    stdout.print(f"Saved {target.path}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("list")(list_command)
    app.command("show")(show_command)
    app.command("edit")(edit_command)
