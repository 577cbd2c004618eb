"""The automatic pipeline: what `lorelab run` does after each round of polls.

1. plan a review run for each new complete version a suite watches (bot.runs.planner), stopping the
   older versions' unfinished runs;
2. act on `#lorelab` commands in mail stored since the last round (bot.commands.handler);
3. send the new runs to the workers (Celery; eager in the embedded default);
4. deliver the replies that are due (bot.report.deliver.delivery).
Each part is idempotent: a round repeated after a crash plans, answers and sends nothing twice.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

import sqlalchemy as sa

from bot.config import Settings, data_dir
from bot.db.models import Message, Run, RunStep
from bot.db.session import Database
from bot.runs.states import RunState, StepState
from bot.runs.taskqueue import send_run

log = logging.getLogger(__name__)


@dataclass
class Round:
    """What one round did."""

    planned: list[int] = field(default_factory=list)  # run ids
    superseded: list[int] = field(default_factory=list)
    commands: int = 0
    dispatched: list[int] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)


def unstarted_runs(db: Database) -> list[int]:
    """Runs no worker has touched (every step still queued): after a crash between committing
    a run and sending it to Celery, these would wait forever."""
    with db.session() as session:
        started = sa.select(RunStep.id).where(RunStep.run_id == Run.id,
                                              RunStep.state != StepState.QUEUED).exists()
        return list(session.scalars(sa.select(Run.id).where(Run.state == RunState.QUEUED, ~started)
                                    .order_by(Run.id)))


def dispatch_runs(db: Database, settings: Settings, run_ids: list[int]) -> list[int]:
    return [run_id for run_id in run_ids if send_run(db, settings, run_id)]


def run_round(db: Database, settings: Settings, since: dt.datetime) -> Round:
    """Plan, handle commands in mail stored after `since`, dispatch, deliver."""
    from bot.commands.handler import handle_command_mails
    from bot.report.deliver.delivery import deliver_due, make_transport
    from bot.runs.planner import plan_new_versions

    result = Round()
    with db.session() as session:
        for planned in plan_new_versions(session, settings):
            result.planned.append(planned.run_id)
            result.superseded.extend(planned.superseded)
    with db.session() as session:
        new_mail = list(session.scalars(sa.select(Message.msgid).where(
            Message.ingested_at > since, Message.reply.is_(True)).order_by(Message.id)))
    command_runs: list[int] = []
    if new_mail:
        outcomes = handle_command_mails(db, settings, new_mail)
        result.commands = len(outcomes)
        command_runs = [run_id for o in outcomes for run_id in o.run_ids]
    result.dispatched = dispatch_runs(db, settings, [*result.planned, *command_runs])
    delivery = deliver_due(db, make_transport(settings.report, data_dir()), settings.report)
    result.sent = list(delivery.sent)
    if any((result.planned, result.commands, result.dispatched, result.sent)):
        log.info("pipeline: planned %s, superseded %s, %d commands, dispatched %s, sent %s",
                 result.planned, result.superseded, result.commands, result.dispatched,
                 result.sent)
    return result
