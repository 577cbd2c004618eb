"""Steps an outage stranded: found by each round of `lorelab run` and sent to the workers again.

A run's steps travel as a Celery chain: the worker that ends one step publishes the next. An
outage can break that: a step never sent (the broker was down when the run was dispatched), a
message lost with the broker (the rest of the chain with it), or a worker that gave up retrying
while the database was down (the step left `running`). Retries with backoff
(bot.runs.taskqueue.retry_delay) ride out most outages; this finds what they did not. For each
run that was not stopped, its first step that has not ended is overdue when it

- was never sent, and was made more than UNSENT_GRACE ago (the process that made it sends it
  itself; a failed send is recorded on the step: bot.runs.lifecycle.record_unsent);
- was sent and still waits, [celery] queued_deadline after it could start (it was sent, or
  the step before it ended);
- runs past its task's hard time limit plus RUNNING_GRACE (a live worker would have ended
  it by then), or its worker process on this machine is gone.

A worker that starts (workers/app.py) releases the steps its machine's dead workers held
(`release_orphans`): a worker that an outage brought down and its supervisor restarted gives
its step back at once, not a time limit later.

Sending again is safe: a duplicate message does nothing (bot.runs.steps.may_start), and a
reply's Message-ID derives from its series version, so no reply is written twice.
"""

from __future__ import annotations

import datetime as dt
import socket
from dataclasses import dataclass

import sqlalchemy as sa

from bot.config.build import CelerySettings
from bot.db.models import Run, RunStep, utcnow
from bot.db.session import Database
from bot.runs.states import STOPPED, StepState
from bot.runs.steps import worker_gone
from bot.runs.taskqueue import step_time_limit

UNSENT_GRACE = dt.timedelta(minutes=1)
RUNNING_GRACE = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class Overdue:
    """A run to send again, from step `step_id` on, and why."""

    run_id: int
    step_id: int
    why: str


def overdue_step(steps: list[RunStep], now: dt.datetime,
                 celery: CelerySettings) -> tuple[RunStep, str] | None:
    """The run's first step that has not ended, if it is overdue, and why (`steps` in order)."""
    index = next((i for i, s in enumerate(steps)
                  if s.state in (StepState.QUEUED, StepState.RUNNING)), None)
    if index is None:
        return None
    step = steps[index]
    if step.state == StepState.RUNNING:
        if worker_gone(step.state, step.host):
            return step, f"its worker {step.host} is gone"
        limit = dt.timedelta(seconds=step_time_limit(step.name, celery)) + RUNNING_GRACE
        if step.started_at is not None and now - step.started_at > limit:
            return step, f"running since {step.started_at:%H:%M:%S}, past its time limit"
        return None
    if step.sent_at is None:
        return (step, "never sent to the workers") if now - step.queued_at > UNSENT_GRACE \
            else None
    ready = step.sent_at  # or, in a chain, when the step before it ended
    before = steps[index - 1].finished_at if index else None
    if before is not None and before > ready:
        ready = before
    if now - ready > dt.timedelta(seconds=celery.queued_deadline):
        return step, f"queued since {ready:%H:%M:%S} and not started"
    return None


def find_overdue(db: Database, celery: CelerySettings,
                 now: dt.datetime | None = None) -> list[Overdue]:
    """Every run with an overdue step; a running one is queued again (its row says why), so
    that the step it is sent with may start."""
    now = now or utcnow()
    found: list[Overdue] = []
    with db.session() as session:
        unfinished = sa.select(RunStep.run_id).where(
            RunStep.state.in_((StepState.QUEUED, StepState.RUNNING)))
        runs = session.scalars(sa.select(Run).where(Run.id.in_(unfinished),
                                                    Run.state.notin_(STOPPED)).order_by(Run.id))
        for run in runs:
            late = overdue_step(list(run.steps), now, celery)
            if late is None:
                continue
            step, why = late
            if step.state == StepState.RUNNING:
                step.state = StepState.QUEUED
                step.error = f"sent again at {now:%H:%M:%S}: {why}"
            found.append(Overdue(run.id, step.id, why))
    return found


def release_orphans(db: Database, host: str | None = None) -> list[int]:
    """Queue again, as never sent, the running steps whose worker process on machine `host`
    (this one by default) is gone; their ids. The next round of `lorelab run` sends them."""
    host = host or socket.gethostname()
    released = []
    with db.session() as session:
        for step in session.scalars(sa.select(RunStep).where(
                RunStep.state == StepState.RUNNING, RunStep.host.startswith(f"{host}:"))):
            if worker_gone(step.state, step.host):
                step.error = f"its worker {step.host} was gone when a worker started here"
                step.state, step.sent_at = StepState.QUEUED, None
                released.append(step.id)
    return released
