"""`lorelab apply`, `lorelab build` and `lorelab runs`: series applied and built by the workers.

`apply`/`build` record a run, hand its steps to Celery (in this process on the embedded
default, to the git and build queues when a broker is configured) and show each step as it
changes until the run ends. `runs list|show` read the recorded rows (a follow-up names the review
it follows, a review lists its follow-ups); `runs resume` sends a run's unfinished steps again
(after a worker crash, or a fix to the tree).
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
import typer
from rich.table import Table
from sqlalchemy.orm import Session

from bot.cli import terminal
from bot.cli.context import UserError, emit_json, settings
from bot.cli.database import open_database
from bot.cli.query import choose_version
from bot.cli.step_lines import StepLines
from bot.db.models import Run, RunStep, SeriesVersion
from bot.db.session import Database
from bot.runs.findings import Headline, headline, run_campaigns, run_reply
from bot.runs.lifecycle import PlanError, cancel_run, create_run, find_tree, resume_run, retest_run
from bot.runs.skipped import failed_need
from bot.runs.states import FINISHED, RunState, StepState
from bot.runs.steps import LISTENERS, worker_gone

runs_app = typer.Typer(help="Apply and build runs, and their steps.")

JSON_OPTION = typer.Option(False, "--json", help="Print JSON (README, \"JSON shapes\").")
VERSION_OPTION = typer.Option(None, "--version", "-v", help="Series version (default: the posting "
                              "a message-id names, else the latest).")
TREE_OPTION = typer.Option(None, "--tree", "-t", help="A configured [[trees]] name.")
BASE_OPTION = typer.Option(None, "--base", help="Apply on this revision (skips base selection).")
WAIT_OPTION = typer.Option(True, "--wait/--no-wait", help="Wait for the run and show progress.")


def register(app: typer.Typer) -> None:
    app.command("apply")(apply_command)
    app.command("build")(build_command)
    app.command("retest")(retest_command)
    app.add_typer(runs_app, name="runs")


def _seconds(step: RunStep) -> float | None:
    if step.started_at and step.finished_at:
        return round((step.finished_at - step.started_at).total_seconds(), 3)
    return None


def run_dict(session: Session, run: Run) -> dict[str, Any]:
    """`lorelab runs show --json`: the run, what it found, and its steps (stable keys, added
    never renamed)."""
    # The outcome imports the reply composer and the statistics: `--help` should not.
    from bot.runs.outcome import outcome_of

    version = session.get(SeriesVersion, run.series_version_id)
    campaigns = run_campaigns(session, run)
    outcome = outcome_of(session, run, campaigns)
    reply = run_reply(session, run)
    return {
        "id": run.id, "kind": run.kind, "state": run.state, "tree": run.tree,
        "parent_run_id": run.parent_run_id, "options": dict(run.options or {}),
        "follow_ups": follow_up_dicts(session, run),
        "outcome": outcome.label, "why": outcome.why, "exit_code": outcome.exit_code,
        "headline": [h.as_dict() for h in headline(campaigns)],
        "campaigns": [c.id for c in campaigns],
        "reply": None if reply.reply is None else {
            "id": reply.reply.id, "message_id": reply.reply.message_id,
            "state": reply.reply.state, "reason": reply.reply.reason},
        "reply_notes": reply.notes(),
        "series_version_id": run.series_version_id,
        "series_id": version.series_id if version else None,
        "version": version.version if version else None,
        "title": version.title if version else None,
        "trigger": run.trigger, "benchmarks": list(run.benchmarks or []),
        "lab_host": run.runner,
        "requested_base": run.requested_base, "base_commit": run.base_commit,
        "base_reason": run.base_reason, "patched_commit": run.patched_commit,
        "created_at": run.created_at.isoformat(), "updated_at": run.updated_at.isoformat(),
        "steps": [{
            "name": s.name, "state": s.state, "host": s.host, "attempts": s.attempts,
            "queued_at": s.queued_at.isoformat(),
            "started_at": s.started_at.isoformat() if s.started_at else None,
            "finished_at": s.finished_at.isoformat() if s.finished_at else None,
            "seconds": _seconds(s), "error": s.error, "result": s.result,
            "log_excerpt": s.log_excerpt, "worker_gone": worker_gone(s.state, s.host),
            # The failed step this one needed: it was skipped, not run (bot.runs.skipped).
            "skipped_for": failed_need(s.name, {t.name: t.state for t in run.steps}),
        } for s in run.steps],
    }


def follow_up_dicts(session: Session, run: Run) -> list[dict[str, Any]]:
    """The follow-ups of a review run, oldest first: kind, state, what each found, its reply."""
    from bot.runs.outcome import outcome_of

    found = []
    for child in session.scalars(sa.select(Run).where(Run.parent_run_id == run.id)
                                 .order_by(Run.id)):
        outcome = outcome_of(session, child)
        reply = run_reply(session, child).reply
        found.append({"id": child.id, "kind": child.kind, "state": child.state,
                      "outcome": outcome.label, "why": outcome.why, "trigger": child.trigger,
                      "options": dict(child.options or {}),
                      "benchmarks": list(child.benchmarks or []),
                      "reply": None if reply is None else {
                          "id": reply.id, "message_id": reply.message_id,
                          "state": reply.state}})
    return found


def _options(options: dict[str, Any]) -> str:
    """A follow-up's options in a few words: "alternative <id>", "pairs 12", "commands (2)"."""
    words = []
    for key, value in sorted(options.items()):
        shown = f"({len(value)})" if isinstance(value, list | dict) else str(value)
        words.append(f"{key} <{shown}>" if key == "alternative" else f"{key} {shown}")
    return ", ".join(words)


def _dispatch(db: Database, run_id: int) -> None:
    # Celery costs a third of a second to import: only the commands that send a run pay it.
    from bot.runs.taskqueue import dispatch

    with db.session() as session:
        dispatch(session.get(Run, run_id), settings())  # type: ignore[arg-type]


def _start(series: str, version_number: int | None, tree: str | None, base: str | None,
           kind: str, wait: bool, as_json: bool) -> None:
    config = settings()
    try:
        tree_name = find_tree(config, tree).name
    except PlanError as exc:
        raise UserError(str(exc)) from None
    db = open_database()
    with db.session() as session:
        version = choose_version(session, series, version_number)
        found = version.series
        if not version.complete:
            raise UserError(f"v{version.version} of series {found.id} is incomplete "
                            f"({version.received}/{version.expected} patches)")
        run_id = create_run(session, version, kind=kind, tree=tree_name, base=base).id
    if not as_json:
        terminal.stderr().print(f"run {run_id}: {kind} series {found.id} v{version.version} "
                      f"on {tree_name}")
    eager = not config.celery.broker_url
    listener = None
    if eager and not as_json:
        listener = StepLines(lambda line: terminal.stderr().print(f"  {line}", markup=False))
        LISTENERS.append(listener)
    try:
        _dispatch(db, run_id)
    finally:
        if listener is not None:
            LISTENERS.remove(listener)
    if wait and not eager:
        _wait(db, run_id, quiet=as_json)
    _finish(db, run_id, as_json, waited=wait or eager)


def _wait(db: Database, run_id: int, quiet: bool, poll: float = 0.5) -> None:
    seen: dict[str, str] = {}
    lines = StepLines(lambda line: terminal.stderr().print(f"  {line}", markup=False))
    while True:
        with db.session() as session:
            run = session.get(Run, run_id)
            assert run is not None
            for step in run.steps:
                if seen.get(step.name) != step.state:
                    seen[step.name] = step.state
                    if not quiet and step.state != StepState.QUEUED:
                        where = f" on {step.host}" if step.host else ""
                        lines(run_id, step.name, step.state, where)
            if run.state in FINISHED and all(s.state != StepState.RUNNING for s in run.steps):
                return
        time.sleep(poll)


def _finish(db: Database, run_id: int, as_json: bool, waited: bool,
            show_reply: bool = False) -> None:
    with db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        data = run_dict(session, run)
        reply = run_reply(session, run).reply
        raw = bytes(reply.raw) if reply is not None else None
    if as_json:
        emit_json(data | ({"reply_text": raw.decode("utf-8", "replace") if raw else None}
                          if show_reply else {}))
    else:
        _print_run(data)
        if show_reply and raw:
            out = terminal.stdout()
            out.print("this run's reply:")
            out.print("-" * 72)
            out.print(raw.decode("utf-8", "replace"), markup=False, highlight=False)
    if waited and data["state"] == RunState.FAILED:
        raise typer.Exit(1)


def _print_run(data: dict[str, Any]) -> None:
    out = terminal.stdout()
    out.print(f"run {data['id']} ({data['kind']}) {data['state']}: series {data['series_id']} "
              f"v{data['version']} \"{data['title']}\" on {data['tree']}", markup=False)
    out.print(f"  outcome: {data['outcome']} ({data['why']})", markup=False, highlight=False)
    if data["parent_run_id"] is not None:
        asked = f": {_options(data['options'])}" if data["options"] else ""
        out.print(f"  follows run {data['parent_run_id']}{asked}", markup=False,
                  highlight=False)
    for follow_up in data["follow_ups"]:
        reply = (f"; reply <{follow_up['reply']['message_id']}> ({follow_up['reply']['state']})"
                 if follow_up["reply"] else "")
        asked = f" ({_options(follow_up['options'])})" if follow_up["options"] else ""
        out.print(f"  follow-up: run {follow_up['id']} {follow_up['kind']}{asked} "
                  f"{follow_up['state']}: {follow_up['outcome']}{reply}", markup=False,
                  highlight=False)
    for change in data["headline"]:
        out.print(f"    {Headline.from_dict(change).line()}", markup=False, highlight=False)
    if data["campaigns"]:
        ids = " ".join(str(c) for c in data["campaigns"])
        out.print(f"  lab campaigns: {ids} (`lorelab analyze {data['id']}` judges them again)")
    if data["reply"]:
        out.print(f"  reply: <{data['reply']['message_id']}> ({data['reply']['state']}; "
                  f"`lorelab outbox show {data['reply']['id']}`)", markup=False,
                  highlight=False)
    for note in data["reply_notes"]:
        out.print(f"    {note}", markup=False, highlight=False)
    if data["base_commit"]:
        out.print(f"  base {data['base_commit'][:12]} ({data['base_reason']})")
    if data["patched_commit"]:
        out.print(f"  patched {data['patched_commit'][:12]}")
    for step in data["steps"]:
        if step["skipped_for"]:
            out.print(f"  {step['name']}: skipped ({step['skipped_for']} failed)")
            continue
        took = f" in {step['seconds']:.1f} s" if step["seconds"] is not None else ""
        cached = " (cached)" if step["result"].get("cached") else ""
        out.print(f"  {step['name']}: {step['state']}{took}{cached}")
        if step["worker_gone"]:
            out.print(f"    its worker ({step['host']}) is gone, killed mid-step: "
                      f"`lorelab runs resume {data['id']}` runs it again", markup=False,
                      highlight=False)
        if step["error"]:
            out.print(f"    {step['error']}")
        for conflict in step["result"].get("conflicts", []):
            out.print(f"    conflict in {conflict['path']}")
        for error in step["result"].get("errors", []):
            for line in error["excerpt"]:
                out.print(f"    {line}", markup=False, highlight=False)


def apply_command(
    series: str = typer.Argument(..., help="Series id, or a message-id / lore URL of the posting."),
    version: int = VERSION_OPTION, tree: str = TREE_OPTION, base: str = BASE_OPTION,
    wait: bool = WAIT_OPTION, as_json: bool = JSON_OPTION,
) -> None:
    """Apply a series to a tree (in a worktree) and record the base and any conflicts."""
    _start(series, version, tree, base, "apply", wait, as_json)


def build_command(
    series: str = typer.Argument(..., help="Series id, or a message-id / lore URL of the posting."),
    version: int = VERSION_OPTION, tree: str = TREE_OPTION, base: str = BASE_OPTION,
    wait: bool = WAIT_OPTION, as_json: bool = JSON_OPTION,
) -> None:
    """Apply a series, then build the base and the patched kernel (sandboxed, cached)."""
    _start(series, version, tree, base, "build", wait, as_json)


@runs_app.command("list")
def runs_list(
    limit: int = typer.Option(30, "--limit", "-n", help="At most this many, newest first."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Runs, newest first."""
    db = open_database()
    with db.session() as session:
        runs = session.scalars(sa.select(Run).order_by(Run.id.desc()).limit(limit)).all()
        rows = [run_dict(session, r) for r in runs]
    if as_json:
        emit_json(rows)
        return
    table = Table("run", "kind", "state", "outcome", "headline", "series", "tree", "base",
                  "steps")
    for row in rows:
        changes = [Headline.from_dict(h) for h in row["headline"]]
        kind = row["kind"]
        if row["parent_run_id"] is not None:
            kind += f"\nof run {row['parent_run_id']}"
        if row["follow_ups"]:
            kind += "\nfollow-ups " + " ".join(str(f["id"]) for f in row["follow_ups"])
        table.add_row(str(row["id"]), kind, row["state"], row["outcome"],
                      "\n".join(h.short() for h in changes),
                      f"{row['series_id']} v{row['version']}", row["tree"],
                      (row["base_commit"] or "")[:12],
                      " ".join(f"{s['name']}:{'skipped' if s['skipped_for'] else s['state']}"
                               for s in row["steps"]))
    terminal.stdout().print(table)


@runs_app.command("show")
def runs_show(run_id: int = typer.Argument(..., help="Run id."),
              as_json: bool = JSON_OPTION) -> None:
    """One run: base and why, each step's state, host, times, errors and conflicts."""
    db = open_database()
    with db.session() as session:
        _run(session, run_id)
    _finish(db, run_id, as_json, waited=False)


@runs_app.command("resume")
def runs_resume(run_id: int = typer.Argument(..., help="Run id."), wait: bool = WAIT_OPTION,
                as_json: bool = JSON_OPTION) -> None:
    """Run a run's unfinished steps again (a crashed, failed or never-started step)."""
    db = open_database()
    with db.session() as session:
        if not resume_run(session, _run(session, run_id)):
            raise UserError(f"run {run_id} is done; nothing to resume")
    _send(db, run_id, wait, as_json)


def retest_command(run_id: int = typer.Argument(..., help="The run to do again."),
                   wait: bool = WAIT_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Run a series again as an earlier run did (same version, tree, base and benchmarks)."""
    db = open_database()
    with db.session() as session:
        run = _run(session, run_id)
        new_id = retest_run(session, run, trigger="retest").id
    if not as_json:
        terminal.stderr().print(f"run {new_id}: a retest of run {run_id}")
    _send(db, new_id, wait, as_json, show_reply=True)


def _run(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise UserError(f"no run {run_id}; `lorelab runs list` shows the ids")
    return run


def _send(db: Database, run_id: int, wait: bool, as_json: bool,
          show_reply: bool = False) -> None:
    """Dispatch the run's unfinished steps, wait for them if asked (eager: they ran), show it."""
    _dispatch(db, run_id)
    eager = not settings().celery.broker_url
    if wait and not eager:
        _wait(db, run_id, quiet=as_json)
    _finish(db, run_id, as_json, waited=wait or eager, show_reply=show_reply)


@runs_app.command("cancel")
def runs_cancel(run_id: int = typer.Argument(..., help="Run id."),
                as_json: bool = JSON_OPTION) -> None:
    """Stop a run: its queued steps will not start (a running step finishes its work)."""
    db = open_database()
    with db.session() as session:
        run = _run(session, run_id)
        if not cancel_run(session, run):
            raise UserError(f"run {run_id} has {run.state} already; nothing to cancel")
    _finish(db, run_id, as_json, waited=False)
