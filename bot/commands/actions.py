"""What an allowed `#lorelab` command does to the runs of a series version.

`test` makes a review run (the named benchmarks, else the suite's, on the planned tree, against
its base or base=REV; pairs=N caps each campaign's pairs); `retest` repeats the version's latest
review run (or makes one); `stop` cancels the version's unfinished runs. A request for a review
run that is already queued or running joins it instead of making another, and is "collapsed"
(not answered) when a request for that run was answered already; so is a stop with nothing left
to stop after an answered stop.

The follow-ups (bot.runs.follow_ups) follow the version's latest review that finished and
measured: `bisect`, `test ... align`, `compare MSGID`, and `test` in a reviewer's own reply that
carries an inline diff (a compare with that diff, on request). The same follow-up of the same
review is made once: asking again joins it, or is told what it found. What cannot be done (no
finished review, no such message, not an inline diff, a single patch to bisect) is answered
with why. Runs are created, not dispatched: the caller sends them to the workers after the
commit.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.commands import answers
from bot.commands.language import Command
from bot.config import Settings
from bot.db.models import LabCampaign, Message, Run, SeriesVersion
from bot.mail.record import MessageKind
from bot.runs.follow_ups import answers_patch, changed_benchmarks, followed_review, start_follow_up
from bot.runs.lifecycle import FOLLOW_UPS, cancel_run, create_run, retest_run
from bot.runs.outcome import outcome_of
from bot.runs.planner import planned_tree
from bot.runs.states import FINISHED, STOPPED, RunState
from bot.runs.stops import series_stopped
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
    options: dict[str, int] | None = None  # pairs=N

    def is_like(self, run: Run) -> bool:
        return (run.tree, list(run.benchmarks or ()), run.requested_base,
                dict(run.options or {})) == (self.tree, list(self.benchmarks), self.base,
                                             dict(self.options or {}))


def act(session: Session, settings: Settings, version: SeriesVersion, command: Command,
        sender: str, since: dt.datetime, message: Message | None = None) -> Action:
    """Do an allowed command of `sender`, given in `message`; `since`: the start of the window
    in which the same stop, answered, makes this one collapse."""
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
    if command.name in ("bisect", "compare") or command.align or (
            command.name == "test" and message is not None and own_alternative(message, version)):
        return follow_up(session, version, command, sender, message)
    latest = next((run for run in reversed(runs) if run.kind == "review"), None)
    if command.name == "retest" and latest is not None:
        wanted = Wanted(latest.tree, list(latest.benchmarks or ()), latest.requested_base,
                        options=dict(latest.options or {}))
    elif not settings.trees:
        return Action("refused", ("lorelab cannot test this series: no kernel tree is "
                                  "configured. Nothing was queued."))
    else:
        suite = suite_for(settings.suites, version.touched_files)
        wanted = Wanted(planned_tree(session, settings, version),
                        list(command.benchmarks) or (suite.benchmarks if suite else []),
                        command.base, (suite.lab_host or None) if suite else None,
                        _pairs(command))
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
                         runner=wanted.runner, trigger=trigger, options=wanted.options)
    return Action("queued", describe_run(run, version), (run.id,),
                  queue_position(session, run), run.id)


def _pairs(command: Command) -> dict[str, int]:
    return {"pairs": command.pairs} if command.pairs is not None else {}


def own_alternative(message: Message, version: SeriesVersion) -> bool:
    """Whether the mail is a reviewer's alternative to the version: an inline diff, not from
    its author, answering one of its patches."""
    return (message.kind == MessageKind.INLINE_DIFF
            and message.from_email.strip().lower() != version.author_email.strip().lower()
            and answers_patch(message, _patch_ids(version)))


def _patch_ids(version: SeriesVersion) -> set[str]:
    return {patch.message.msgid for patch in version.applied_patches}


def follow_up(session: Session, version: SeriesVersion, command: Command, sender: str,
              message: Message | None) -> Action:
    """A bisect, align or compare follow-up of the version's latest finished review."""
    nothing = "Nothing was queued."
    if series_stopped(session, version.series_id):
        return Action("refused", "The tests of this series were stopped (#lorelab stop); "
                                 f'"#lorelab test" starts them again. {nothing}')
    if command.name == "bisect" and version.expected < 2:
        return Action("refused", f"v{version.version} is a single patch: there is no patch to "
                                 f"find. {nothing}")
    review = followed_review(session, version)
    if review is None:
        return Action("refused", f"{_no_review(session, version)} {nothing}")
    campaigns = list(session.scalars(sa.select(LabCampaign)
                                     .where(LabCampaign.run_id == review.id)))
    changed = list(changed_benchmarks(review, campaigns))
    options: dict[str, object] = dict(_pairs(command))
    if command.name == "bisect":
        kind, benchmarks = "bisect", changed
    elif command.align:
        kind, benchmarks = "align", list(command.benchmarks) or changed
    else:
        alternative = command.alternative or (message.msgid if message is not None else "")
        if problem := alternative_problem(session, version, alternative):
            return Action("refused", f"{problem} {nothing}")
        kind, benchmarks = "compare", list(command.benchmarks)
        options["alternative"] = alternative
    run, new = start_follow_up(session, review, kind, options, f"email:{sender}", benchmarks)
    what = describe_follow_up(run, version, review)
    if new:
        return Action("queued", what, (run.id,), queue_position(session, run), run.id)
    if run.state in FINISHED and run.state not in STOPPED:
        found = outcome_of(session, run)
        return Action("done", f"This was done already: {what}, run {run.id}, which found: "
                              f"{found.label} ({found.why}). {nothing}", run_id=run.id)
    if run.state in STOPPED:
        return Action("refused", f"The same was asked for before, and run {run.id} was "
                                 f"{run.state}. {nothing}", run_id=run.id)
    # Asked for by mail now: a compare on request says so when the diff does not apply.
    run.trigger = f"email:{sender}"
    return Action("queued", f"{what} (asked for already: run {run.id})", (),
                  queue_position(session, run), run.id,
                  collapsed=answers.run_answered(session, run.id))


def alternative_problem(session: Session, version: SeriesVersion, msgid: str) -> str | None:
    """Why the message cannot be compared with the version, if it cannot."""
    message = session.scalar(sa.select(Message).where(Message.msgid == msgid))
    if message is None:
        return f"lorelab has no message <{msgid}>: it may not have arrived yet, or be on " \
               "another list."
    if message.kind != MessageKind.INLINE_DIFF:
        return f"<{msgid}> carries no inline diff: there is no alternative to compare."
    if not answers_patch(message, _patch_ids(version)):
        return (f"<{msgid}> does not answer a patch of v{version.version}: lorelab cannot "
                "tell which patch its diff stands for.")
    return None


def _no_review(session: Session, version: SeriesVersion) -> str:
    """Why there is no review to follow, in a sentence."""
    latest = session.scalar(sa.select(Run).where(Run.series_version_id == version.id,
                                                 Run.kind == "review")
                            .order_by(Run.id.desc()).limit(1))
    if latest is None:
        return (f"v{version.version} has no review to follow up yet; "
                '"#lorelab test" asks for one.')
    if latest.state in (RunState.QUEUED, RunState.RUNNING):
        return (f"the review of v{version.version} (run {latest.id}) has not finished; ask "
                "again once its reply is on the list.")
    return (f"the latest review of v{version.version} (run {latest.id}) did not measure "
            f"anything to follow up: {outcome_of(session, latest).label}.")


def queue_position(session: Session, run: Run) -> int | None:
    """1 when no queued run for the lab was asked for before it; None once it is running."""
    if run.state != "queued":
        return None
    ahead = session.scalar(sa.select(sa.func.count(Run.id)).where(
        Run.kind.in_(("review", *FOLLOW_UPS)), Run.state == "queued", Run.id < run.id))
    return (ahead or 0) + 1


def describe_run(run: Run, version: SeriesVersion) -> str:
    """E.g. 'hackbench on "mm/vmscan: ..." v2, tree mm, against its base'."""
    what = ", ".join(run.benchmarks or ()) or "the build"
    base = f"against {run.requested_base}" if run.requested_base else "against its base"
    pairs = f", at most {run.options['pairs']} pairs" if (run.options or {}).get("pairs") else ""
    return f'{what} on "{version.title}" v{version.version}, tree {run.tree}, {base}{pairs}'


def describe_follow_up(run: Run, version: SeriesVersion, review: Run) -> str:
    """E.g. 'a bisection of "mm/vmscan: ..." v2 (2 patches) with hackbench, to find the patch
    that brings the change run 7 found'."""
    what = ", ".join(run.benchmarks or ()) or "its benchmarks"
    series = f'"{version.title}" v{version.version}'
    pairs = f", at most {run.options['pairs']} pairs" if (run.options or {}).get("pairs") else ""
    if run.kind == "bisect":
        return (f"a bisection of {series} ({version.expected} patches) with {what}, to find "
                f"the patch that brings what run {review.id} found{pairs}")
    if run.kind == "align":
        return (f"{what} on {series}, base and patched kernels rebuilt with forced function "
                f"alignment, to see whether what run {review.id} found survives it{pairs}")
    return (f"{what} on {series} and on the series with the alternative "
            f"<{run.options.get('alternative')}>, in triples beside the base{pairs}")
