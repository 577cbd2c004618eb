"""The automatic pipeline: what `lorelab run` does after each round of polls.

1. plan a review run for each new complete version a suite watches (bot.runs.planner), stopping the
   older versions' unfinished runs;
2. act on `#lorelab` commands in mail stored since the last round (bot.commands.handler);
3. follow-ups (bot.runs.follow_ups): a compare for each reviewer's inline diff stored since the
   last round on a version already reviewed, and the follow-ups review runs queued since;
4. send the new runs to the workers (Celery; eager in the embedded default), and again the runs
   an outage stranded (bot.runs.reaper);
5. deliver the replies that are due (bot.report.deliver.delivery).
Each part is idempotent: a round repeated after a crash plans, answers and sends nothing twice.
Each part is also isolated: one that fails is logged and the others run; within a part, a run
that cannot be sent, or a reply that cannot be delivered, is recorded on its row and the others
go on.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.config import Settings, data_dir
from bot.db.models import Message, Run, RunStep
from bot.db.session import Database
from bot.mail.record import MessageKind
from bot.runs.lifecycle import record_unsent
from bot.runs.reaper import find_overdue
from bot.runs.states import RunState, StepState
from bot.runs.taskqueue import RETRYABLE, send_run

log = logging.getLogger(__name__)
# What sending a run raises when its row cannot be sent: a lab host that is not configured
# (ValueError), a step no task runs (KeyError).
BAD_ROW = (ValueError, LookupError)


class RoundFailed(RuntimeError):
    """A part of the round failed (after every part ran): the caller does not move on past
    the mail it covered, so the next round tries that part again."""

    def __init__(self, done: Round) -> None:
        super().__init__("; ".join(done.failed))
        self.round = done


@dataclass
class Round:
    """What one round did."""

    planned: list[int] = field(default_factory=list)  # run ids
    superseded: list[int] = field(default_factory=list)
    commands: int = 0
    follow_ups: list[int] = field(default_factory=list)  # follow-up runs sent this round
    dispatched: list[int] = field(default_factory=list)
    resent: list[int] = field(default_factory=list)  # runs an outage stranded, sent again
    sent: list[int] = field(default_factory=list)  # reply ids
    failed: list[str] = field(default_factory=list)  # the parts that failed, with why


def unstarted_runs(db: Database, *, follow_ups: bool = False) -> list[int]:
    """Runs no worker has touched (every step still queued): after a crash between committing
    a run and sending it to Celery, these would wait forever. With `follow_ups`, only the
    follow-ups never sent (a review's report step queues them; the round sends them)."""
    with db.session() as session:
        started = sa.select(RunStep.id).where(RunStep.run_id == Run.id,
                                              RunStep.state != StepState.QUEUED).exists()
        query = sa.select(Run.id).where(Run.state == RunState.QUEUED, ~started)
        if follow_ups:
            sent = sa.select(RunStep.id).where(RunStep.run_id == Run.id,
                                               RunStep.sent_at.is_not(None)).exists()
            query = query.where(Run.parent_run_id.is_not(None), ~sent)
        return list(session.scalars(query.order_by(Run.id)))


def send_or_record(db: Database, settings: Settings, run_id: int,
                   from_step: int | None = None) -> bool:
    """Send the run (bot.runs.taskqueue.send_run); a failure is recorded on its rows
    (bot.runs.lifecycle.record_unsent) instead of raised: lasting when the row cannot be sent
    (it names a lab host or a step that does not exist), else passing (the broker down, or
    anything else: the run is sent again next round rather than lost)."""
    try:
        return send_run(db, settings, run_id, from_step)
    except Exception as exc:  # noqa: BLE001 - recorded on the run's rows; the round goes on
        lasting = isinstance(exc, BAD_ROW)
        error = f"{type(exc).__name__}: {exc}"
        log.log(logging.ERROR if lasting else logging.WARNING,
                "run %d: not sent to the workers%s: %s", run_id,
                "" if lasting else " (tried again next round)", error)
        try:
            with db.session() as session:
                run = session.get(Run, run_id)
                if run is not None:
                    record_unsent(session, run, error, lasting=lasting)
        except RETRYABLE as again:  # the database is down too: the reaper finds it unsent
            log.warning("run %d: the failed send was not recorded: %s", run_id, again)
        return False


def dispatch_runs(db: Database, settings: Settings, run_ids: list[int]) -> list[int]:
    """Send each run; those that could not be sent are recorded on their rows."""
    return [run_id for run_id in run_ids if send_or_record(db, settings, run_id)]


def resend_overdue(db: Database, settings: Settings) -> list[int]:
    """Send again, from their overdue step on, the runs an outage stranded."""
    resent = []
    for late in find_overdue(db, settings.celery):
        log.warning("run %d: step %d sent again: %s", late.run_id, late.step_id, late.why)
        if send_or_record(db, settings, late.run_id, late.step_id):
            resent.append(late.run_id)
    return resent


# Mail is stamped when its batch starts storing and seen when the batch commits, which another
# process (the delivery agent, a backfill) may do while a round runs: each round reads again
# the mail stamped this long before `since`. Reading a mail twice acts on it once.
COMMIT_LAG = dt.timedelta(minutes=10)


def mail_stored_since(session: Session, since: dt.datetime,
                      condition: sa.ColumnElement[bool]) -> list[str]:
    """The ids of the messages stored after `since` that meet `condition`, in storing order:
    what a round has not read yet, along `messages.ingested_at`'s index (ordered by id alone,
    SQLite walked the whole table in id order instead)."""
    return list(session.scalars(sa.select(Message.msgid).where(
        Message.ingested_at > since, condition).order_by(Message.ingested_at, Message.id)))


def run_round(db: Database, settings: Settings, since: dt.datetime) -> Round:
    """Plan, handle commands in mail stored after `since` (the start of the previous round;
    COMMIT_LAG earlier), dispatch, deliver; RoundFailed, once every part ran, when one of
    them failed."""
    result = Round()
    since -= COMMIT_LAG
    command_runs: list[int] = []
    follow_up_runs: list[int] = []

    def part(name: str, body: Callable[[], None]) -> None:
        try:
            body()
        except Exception as exc:  # noqa: BLE001 - logged; the next parts and round go on
            if isinstance(exc, RETRYABLE):  # an outage: one line a round, not a traceback
                log.warning("pipeline: %s failed, the other parts go on: %s", name, exc)
            else:
                log.exception("pipeline: %s failed; the other parts go on", name)
            result.failed.append(f"{name}: {type(exc).__name__}: {exc}")

    def plan() -> None:
        from bot.runs.planner import plan_new_versions

        with db.session() as session:
            for planned in plan_new_versions(session, settings):
                result.planned.append(planned.run_id)
                result.superseded.extend(planned.superseded)

    def commands() -> None:
        from bot.commands.handler import MAY_HOLD_COMMANDS, handle_command_mails

        with db.session() as session:
            new_mail = mail_stored_since(session, since, MAY_HOLD_COMMANDS)
        if new_mail:
            outcomes = handle_command_mails(db, settings, new_mail)
            result.commands = len(outcomes)
            command_runs.extend(run_id for o in outcomes for run_id in o.run_ids)

    def follow_ups() -> None:
        from bot.runs.follow_ups import compare_new_alternatives

        with db.session() as session:
            new_diffs = mail_stored_since(session, since, Message.kind == MessageKind.INLINE_DIFF)
            if new_diffs:
                compare_new_alternatives(session, settings, new_diffs)
        follow_up_runs.extend(run_id for run_id in unstarted_runs(db, follow_ups=True)
                              if run_id not in command_runs)

    def dispatch() -> None:
        result.dispatched = dispatch_runs(db, settings, [*result.planned, *command_runs])
        result.follow_ups = dispatch_runs(db, settings, follow_up_runs)
        result.resent = resend_overdue(db, settings)

    def deliver() -> None:
        from bot.report.deliver.delivery import deliver_due, make_transport

        delivery = deliver_due(db, make_transport(settings.report, data_dir()), settings.report)
        result.sent = list(delivery.sent)

    for name, body in (("planning", plan), ("commands", commands), ("follow-ups", follow_ups),
                       ("dispatch", dispatch), ("delivery", deliver)):
        part(name, body)
    if any((result.planned, result.commands, result.dispatched, result.follow_ups,
            result.resent, result.sent)):
        log.info("pipeline: planned %s, superseded %s, %d commands, dispatched %s, "
                 "follow-ups %s, sent again %s, replies sent %s", result.planned,
                 result.superseded, result.commands, result.dispatched, result.follow_ups,
                 result.resent, result.sent)
    if result.failed:
        raise RoundFailed(result)
    return result
