"""Recording run steps: a row before a step runs and after it ends, whatever happens.

A step is `queued` when a run is made, `running` (with host:pid, start time and attempt
number) while a worker has it, then `done` or `failed` with its result, log excerpt and error.
A worker killed mid-step leaves `running`; running the step again (a Celery retry, a redelivery
after acks_late, or `lorelab runs resume`) starts it over: every step is idempotent.

`run_step` is the one recorder every step body runs under: it marks the step running, runs the
body, and records its end; a `StepFailed` is a failure the body names, any other exception is
recorded with its traceback (the worker lives on), and a `TransientError` goes to Celery to
retry.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import RunStep, utcnow
from bot.db.session import Database
from bot.processes import process_gone, process_tag
from bot.runs.states import STOPPED, RunState, StepState

MAX_EXCERPT = 8000  # characters of log kept on the row
logger = logging.getLogger(__name__)

# Called with (run_id, step name, state) on every change: the CLI's progress in eager mode.
LISTENERS: list[Callable[[int, str, str], None]] = []


class TransientError(RuntimeError):
    """A failure worth retrying (database unreachable, a git lock held): Celery retries it."""


class StepFailed(Exception):
    """A step that ended in a failure its body can name (the series does not apply, no
    kernel to boot); recorded with this message and, if given, a result and a log."""

    def __init__(self, message: str, *, result: dict[str, Any] | None = None,
                 log: str = "") -> None:
        super().__init__(message)
        self.result = result or {}
        self.log = log


@dataclass
class StepEnd:
    """How a step body ended: ok or not, its record, its log, and run fields it sets."""

    ok: bool = True
    result: dict[str, Any] = field(default_factory=dict)
    log: str = ""
    error: str | None = None
    run_fields: dict[str, Any] = field(default_factory=dict)


def run_step(db: Database, step_id: int, task_id: str | None,
             body: Callable[[], StepEnd]) -> None:
    """Run `body` as step `step_id`, recording its start and end (nothing when the step is
    done already or its run was stopped)."""
    if not start_step(db, step_id, task_id):
        return
    try:
        end = body()
    except TransientError:
        raise
    except StepFailed as exc:
        end = StepEnd(ok=False, result=exc.result, log=exc.log, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - recorded on the row; the worker lives on
        end = StepEnd(ok=False, error=f"{exc.__class__.__name__}: {exc}",
                      log=traceback.format_exc())
    finish_step(db, step_id, ok=end.ok, result=end.result, log=end.log, error=end.error,
                run_fields=end.run_fields)


def worker_gone(state: str, host: str | None) -> bool:
    """Whether a step marked running was left so by a worker process of this machine that no
    longer exists (killed: an OOM kill, a reboot, ^C)."""
    if state != StepState.RUNNING or not host or ":" not in host:
        return False
    name, _, pid = host.rpartition(":")
    return process_gone(name, pid)


def notify(run_id: int, name: str, state: str) -> None:
    for listener in LISTENERS:
        listener(run_id, name, state)


def excerpt(text: str, limit: int = MAX_EXCERPT) -> str:
    """The end of a log (where failures are), at most `limit` characters."""
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


def stored_step(session: Session, step_id: int, *, lock: bool = False) -> RunStep:
    """The step's row (locked for update when `lock`); LookupError when there is none."""
    step = session.get(RunStep, step_id, with_for_update=lock)
    if step is None:
        raise LookupError(f"no run step {step_id}")
    return step


def start_step(db: Database, step_id: int, task_id: str | None = None) -> bool:
    """Mark the step running; False when it is done (a duplicate delivery) or its run was
    cancelled or superseded while it waited in the queue."""
    with db.session() as session:
        step = stored_step(session, step_id, lock=True)
        if step.state in (StepState.DONE, *STOPPED) or step.run.state in STOPPED:
            return False
        step.state = StepState.RUNNING
        step.host = process_tag()
        step.task_id = task_id or step.task_id
        step.attempts += 1
        step.started_at = utcnow()
        step.finished_at = None
        step.error = None
        run = step.run
        run.state = RunState.RUNNING
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
        step = stored_step(session, step_id)
        step.state = StepState.DONE if ok else StepState.FAILED
        step.finished_at = utcnow()
        step.result = result or {}
        step.log_excerpt = excerpt(log)
        step.error = error
        run = step.run
        for key, value in (run_fields or {}).items():
            setattr(run, key, value)
        session.flush()
        states = list(session.scalars(sa.select(RunStep.state).where(RunStep.run_id == run.id)))
        if run.state in STOPPED:
            pass  # a step that was running when the run was stopped: its result is kept
        elif StepState.FAILED in states:
            run.state = RunState.FAILED
        elif all(s == StepState.DONE for s in states):
            run.state = RunState.DONE
        run.updated_at = utcnow()
        run_id, name, state = run.id, step.name, step.state
    if not ok:
        # Loud in `lorelab run`'s log: a failed report step means no reply for a tested series.
        level = logging.ERROR if name == "report" else logging.WARNING
        logger.log(level, "run %d: %s failed%s: %s", run_id, name,
                 " (no reply was written)" if name == "report" else "", error)
    notify(run_id, name, state)
