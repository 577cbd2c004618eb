"""Recording run steps: a row before a step runs and after it ends, whatever happens.

A step is `queued` when a run is made, `running` (with host:pid, start time and attempt
number) while a worker has it, then `done` or `failed` with its result, log excerpt and error.
A worker killed mid-step leaves `running`; running the step again (a Celery retry, a redelivery
after acks_late, or `lorelab runs resume`) starts it over: every step is idempotent.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from bot.db.models import Run, RunStep, utcnow
from bot.db.session import Database

MAX_EXCERPT = 8000  # characters of log kept on the row

# Called with (run_id, step name, state) on every change: the CLI's progress in eager mode.
LISTENERS: list[Callable[[int, str, str], None]] = []


class TransientError(RuntimeError):
    """A failure worth retrying (database unreachable, a git lock held): Celery retries it."""


def host_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def notify(run_id: int, name: str, state: str) -> None:
    for listener in LISTENERS:
        listener(run_id, name, state)


def excerpt(text: str, limit: int = MAX_EXCERPT) -> str:
    """The end of a log (where failures are), at most `limit` characters."""
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


def start_step(db: Database, step_id: int, task_id: str | None = None) -> bool:
    """Mark the step running; False when it is done (a duplicate delivery) or its run was
    cancelled or superseded while it waited in the queue."""
    with db.session() as session:
        step = session.get(RunStep, step_id, with_for_update=True)
        if step is None:
            raise LookupError(f"no run step {step_id}")
        if step.state in ("done", "cancelled", "superseded") or step.run.state in (
                "cancelled", "superseded"):
            return False
        step.state = "running"
        step.host = host_id()
        step.task_id = task_id or step.task_id
        step.attempts += 1
        step.started_at = utcnow()
        step.finished_at = None
        step.error = None
        run = step.run
        run.state = "running"
        run.updated_at = utcnow()
        run_id, name = run.id, step.name
    notify(run_id, name, "running")
    return True


def finish_step(
    db: Database,
    step_id: int,
    *,
    ok: bool,
    result: dict[str, Any] | None = None,
    log: str = "",
    error: str | None = None,
    run_fields: dict[str, Any] | None = None,
) -> None:
    """Record the step's end; the run is done when every step is, failed when one failed."""
    with db.session() as session:
        step = session.get(RunStep, step_id)
        assert step is not None
        step.state = "done" if ok else "failed"
        step.finished_at = utcnow()
        step.result = result or {}
        step.log_excerpt = excerpt(log)
        step.error = error
        run = step.run
        for key, value in (run_fields or {}).items():
            setattr(run, key, value)
        session.flush()
        states = list(session.scalars(sa.select(RunStep.state).where(RunStep.run_id == run.id)))
        if run.state in ("cancelled", "superseded"):
            pass  # a step that was running when the run was stopped: its result is kept
        elif "failed" in states:
            run.state = "failed"
        elif all(s == "done" for s in states):
            run.state = "done"
        run.updated_at = utcnow()
        run_id, name, state = run.id, step.name, step.state
    notify(run_id, name, state)


def load_run(db: Database, run_id: int) -> Run:
    with db.session() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise LookupError(f"no run {run_id}")
        _ = run.steps
        session.expunge_all()
        return run
