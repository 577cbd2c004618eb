"""What an allowed `#lorelab test`, `retest` or `stop` does to the runs of a series version.

`test` makes a review run (the named benchmarks, else the suite's, on the planned tree, against
its base or base=REV); `retest` repeats the version's latest review run (or makes one); `stop`
cancels the version's unfinished runs. A request for a review run that is already queued or
running joins it instead of making another, and is "collapsed" (not answered) when a request
for that run was answered already; so is a stop with nothing left to stop after an answered
stop. Runs are created, not dispatched: the caller sends them to the workers after the commit.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.commands import answers
from bot.commands.language import Command
from bot.config import Settings
from bot.db.models import Run, SeriesVersion
from bot.runs.lifecycle import cancel_run, create_run, retest_run
from bot.runs.planner import planned_tree
from bot.runs.states import FINISHED
from bot.runs.suites import suite_for


@dataclass(frozen=True)
class Action:
    """What an allowed test, retest or stop did."""

    outcome: str
    detail: str
    run_ids: tuple[int, ...] = ()  # runs made
    queue_position: int | None = None
    run_id: int | None = None  # the run made or joined
    collapsed: bool = False  # the same was asked and answered already: no answer


@dataclass(frozen=True)
class Wanted:
    """The review run a test or retest asks for."""

    tree: str
    benchmarks: list[str]
    base: str | None
    runner: str | None = None  # the suite's lab host

    def is_like(self, run: Run) -> bool:
        return (run.tree, list(run.benchmarks or ()), run.requested_base) == (
            self.tree, list(self.benchmarks), self.base)


def act(session: Session, settings: Settings, version: SeriesVersion, command: Command,
        sender: str, since: dt.datetime) -> Action:
    """Do an allowed test, retest or stop of `sender`; `since`: the start of the window in
    which the same stop, answered, makes this one collapse."""
    runs = list(session.scalars(sa.select(Run).where(Run.series_version_id == version.id)
                                .order_by(Run.id)))
    if command.name == "stop":
        stopped = [run for run in runs if cancel_run(session, run)]
        if stopped:
            what = ", ".join(f"run {run.id} ({run.kind} on {run.tree})" for run in stopped)
            return Action("stopped", f"{what}, of v{version.version}")
        told = answers.same_answered(session, since, command="stop",
                                     arguments=[], series_version_id=version.id)
        return Action("stopped", f"nothing was queued or running for v{version.version}",
                      collapsed=told)
    if not version.complete:
        return Action("refused", (
            f"v{version.version} of this series is incomplete ({version.received} of "
            f"{version.expected} patches have arrived); lorelab tests it once all have. "
            "Nothing was queued."))
    latest = next((run for run in reversed(runs) if run.kind == "review"), None)
    if command.name == "retest" and latest is not None:
        wanted = Wanted(latest.tree, list(latest.benchmarks or ()), latest.requested_base)
    elif not settings.trees:
        return Action("refused", ("lorelab cannot test this series: no kernel tree is "
                                  "configured. Nothing was queued."))
    else:
        suite = suite_for(settings.suites, version.touched_files)
        wanted = Wanted(planned_tree(session, settings, version),
                        list(command.benchmarks) or (suite.benchmarks if suite else []),
                        command.base, (suite.lab_host or None) if suite else None)
    # Two people asking for the same test get one run, and one answer.
    same = next((run for run in runs if run.kind == "review" and run.state not in FINISHED
                 and wanted.is_like(run)), None)
    if same is not None:
        detail = f"{describe_run(same, version)} (asked for already: run {same.id})"
        return Action("queued", detail, (), queue_position(session, same), same.id,
                      collapsed=answers.run_answered(session, same.id))
    trigger = f"email:{sender}"
    if command.name == "retest" and latest is not None:
        run = retest_run(session, latest, trigger=trigger)
    else:
        run = create_run(session, version, kind="review", tree=wanted.tree,
                         base=wanted.base, benchmarks=list(wanted.benchmarks),
                         runner=wanted.runner, trigger=trigger)
    return Action("queued", describe_run(run, version), (run.id,),
                  queue_position(session, run), run.id)


def queue_position(session: Session, run: Run) -> int | None:
    """1 when no queued review run was asked for before it; None once it is running."""
    if run.state != "queued":
        return None
    ahead = session.scalar(sa.select(sa.func.count(Run.id)).where(
        Run.kind == "review", Run.state == "queued", Run.id < run.id))
    return (ahead or 0) + 1


def describe_run(run: Run, version: SeriesVersion) -> str:
    """E.g. 'hackbench on "mm/vmscan: ..." v2, tree mm, against its base'."""
    what = ", ".join(run.benchmarks or ()) or "the build"
    base = f"against {run.requested_base}" if run.requested_base else "against its base"
    return f'{what} on "{version.title}" v{version.version}, tree {run.tree}, {base}'
