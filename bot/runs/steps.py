"""Recording run steps: a row before a step runs and after it ends, whatever happens.

A step is `queued` when a run is made, `running` (with host:pid, start time and attempt
number) while a worker has it, then `done` or `failed` with its result, log excerpt and error.
A worker killed mid-step leaves `running`; running the step again (a Celery retry, a redelivery
after acks_late, or `lorelab runs resume`) starts it over: every step is idempotent. A
duplicate message (one the reaper of `lorelab run` sent again while the first was only slow)
does nothing: a step starts only once every earlier step of its run has ended, and not while
another live task holds it (`may_start`); two workers that take the same queued step race on
its attempt number, and one of them wins.

`run_step` is the one recorder every step body runs under: it marks the step running, runs the
body, and records its end; a `StepFailed` is a failure the body names, any other exception is
recorded with its traceback (the worker lives on), and a transient failure (`TransientError`,
the database unreachable) goes to Celery to retry.
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
from bot.runs.skipped import failed_need
from bot.runs.states import STOPPED, RunState, StepState

MAX_EXCERPT = 8000  # characters of log kept on the row
logger = logging.getLogger(__name__)

# Called with (run_id, step name, state) on every change: the CLI's progress in eager mode.
LISTENERS: list[Callable[[int, str, str], None]] = []


class TransientError(RuntimeError):
    """A failure worth retrying (database unreachable, a git lock held): Celery retries it."""


# What a step's body may raise that says nothing about the step: retried, never recorded as its
# outcome (a build that failed because PostgreSQL restarted under it did not fail).
TRANSIENT_ERRORS = (TransientError, sa.exc.OperationalError, sa.exc.InterfaceError)


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
    except TRANSIENT_ERRORS:
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


def may_start(step: RunStep, task_id: str | None, earlier: list[str]) -> bool:
    """Whether task `task_id` may run `step`, whose earlier steps are in states `earlier`:
    not when one of them has not ended (a duplicate chain got ahead of the run), nor while the
    step runs under another task whose worker is alive (a duplicate message). The same task
    may: a Celery retry or a redelivery after its worker was lost."""
    if any(state in (StepState.QUEUED, StepState.RUNNING) for state in earlier):
        return False
    if step.state != StepState.RUNNING or (task_id is not None and step.task_id == task_id):
        return True
    return worker_gone(step.state, step.host)


def start_step(db: Database, step_id: int, task_id: str | None = None) -> bool:
    """Mark the step running; False when it is done (a duplicate delivery), its run was
    cancelled or superseded while it waited in the queue, or `may_start` says no."""
    with db.session() as session:
        step = stored_step(session, step_id, lock=True)
        run = step.run
        if step.state in (StepState.DONE, *STOPPED) or run.state in STOPPED:
            return False
        if not may_start(step, task_id, [s.state for s in run.steps if s.id < step.id]):
            return False
        # Compare-and-set on the attempt number: of two workers that read the same row, one
        # starts the step.
        started = session.execute(
            sa.update(RunStep).where(RunStep.id == step_id, RunStep.attempts == step.attempts)
            .values(state=StepState.RUNNING, host=process_tag(),
                    task_id=task_id or step.task_id, attempts=step.attempts + 1,
                    started_at=utcnow(), finished_at=None, error=None)
            .execution_options(synchronize_session=False))
        if started.rowcount != 1:  # type: ignore[attr-defined]
            return False
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
        # A step skipped for an earlier failure (bot.runs.skipped) is not a failure of its own:
        # that one was logged already, progress shows this one as skipped.
        skipped = not ok and failed_need(name, {s.name: s.state for s in run.steps}) is not None
    if not ok and not skipped:
        # Loud in `lorelab run`'s log: a failed report step means no reply for a tested series.
        level = logging.ERROR if name == "report" else logging.WARNING
        logger.log(level, "run %d: %s failed%s: %s", run_id, name,
                 " (no reply was written)" if name == "report" else "", error)
    notify(run_id, name, state)
