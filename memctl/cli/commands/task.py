from __future__ import annotations

import typer

from memctl.cli.output import handles_errors, print_json, stdout
from memctl.cli.state import current_store
from memctl.core.learning.task import STEP_STATUSES, render_task
from memctl.service.lifecycle.task import (
    begin_task,
    current_task,
    finish_task,
    note_task,
    step_task,
)


@handles_errors
def start_command(
    ctx: typer.Context,
    goal: str = typer.Argument(..., help="What the task is for.", metavar="GOAL"),
    plan: list[str] = typer.Option([], "--plan", "-p", help="A planned step; repeat for several."),
    target: str = typer.Option(
        None, "--target", help="What the task acts on (groups episodes for consolidation)."
    ),
    tags: list[str] = typer.Option([], "--tag", help="A tag for the episode; repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print the task as JSON."),
) -> None:
    """Start a task.

    Example: memctl task start "Upgrade Postgres" --plan dump --plan restore --target db
    """
    task = begin_task(current_store(ctx), goal, plan, target=target, tags=tags)
    if as_json:
        print_json(task.to_dict())
    else:
        stdout.print(f"Started task {task.id}.\n", markup=False)
        stdout.print(render_task(task), markup=False)


@handles_errors
def step_command(
    ctx: typer.Context,
    text: str = typer.Argument(
        ..., help="A step's number or text; a new text adds a step.", metavar="TEXT"
    ),
    status: str = typer.Option(None, "--status", help=f"One of: {', '.join(STEP_STATUSES)}."),
    result: str = typer.Option(None, "--result", help="What the step produced or found."),
    as_json: bool = typer.Option(False, "--json", help="Print the task as JSON."),
) -> None:
    """Record progress on a step, or add one (new steps start in progress).

    Example: memctl task step 1 --status done --result "dump is 4.2 GB"
    """
    task, index, created = step_task(current_store(ctx), text, status=status, result=result)
    if as_json:
        print_json({"step": index + 1, "created": created, "task": task.to_dict()})
        return
    step = task.steps[index]
    stdout.print(
        f"{'Added' if created else 'Updated'} step {index + 1}: {step.text} [{step.status}]",
        markup=False,
    )


@handles_errors
def note_command(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="Name of the note.", metavar="KEY"),
    value: str = typer.Argument(
        ..., help="Its value; a later note with the same key replaces it.", metavar="VALUE"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the task as JSON."),
) -> None:
    """Keep an intermediate finding on the task's scratchpad."""
    task = note_task(current_store(ctx), key, value)
    if as_json:
        print_json(task.to_dict())
    else:
        stdout.print(f"Noted {key}.", markup=False)


@handles_errors
def show_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the task as JSON (null when none)."),
) -> None:
    """Show the task in progress."""
    task = current_task(current_store(ctx))
    if as_json:
        print_json(task.to_dict() if task else None)
    elif task is None:
        stdout.print("No task in progress.")
    else:
        stdout.print(render_task(task, result_chars=None), markup=False)


@handles_errors
def done_command(
    ctx: typer.Context,
    failed: bool = typer.Option(False, "--failed", help="The task failed (failures weigh more)."),
    lessons: list[str] = typer.Option([], "--lesson", "-l", help="A lesson learned; repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Finish the task: it becomes an episode memory and the working memory is cleared.

    Example: memctl task done --lesson "restore needs --no-owner on the new cluster"
    """
    done = finish_task(current_store(ctx), failed=failed, lessons=lessons)
    if as_json:
        print_json(done.to_dict())
    else:
        stdout.print(
            f"Task {done.outcome}: wrote episode {done.episode_id} "
            f"(importance {done.importance:g}) at {done.episode_path}",
            markup=False,
        )


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help=(
            "Working memory: the task in progress (goal, plan, notes), ended into an episode.\n\n"
            'Example: memctl task start "Move CI to GitHub Actions" -p "port the jobs", then '
            "memctl task note, memctl task step, memctl task done."
        ),
        no_args_is_help=True,
    )
    app.add_typer(group, name="task")
    group.command("start")(start_command)
    group.command("step")(step_command)
    group.command("note")(note_command)
    group.command("show")(show_command)
    group.command("done")(done_command)
