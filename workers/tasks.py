"""The Celery tasks, one per step kind, each running a recorded step by its id.

Named "lorelab.<step>": the control plane sends them by name (bot.runs.taskqueue). Time limits
come from [celery]; transient failures (the database or the broker unreachable, a git lock
held) are retried with backoff up to minutes ([celery] max_retries, retry_backoff,
retry_backoff_max), so that an outage of the database or the broker ends in a retry that
succeeds; anything else is recorded on the step's row by `bot.runs.steps.run_step`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from celery import Task

from bot.config import Settings
from bot.db.session import Database, open_database
from bot.runs.taskqueue import RETRYABLE, app, configured_settings, retry_delay
from workers.kernel.alternative import run_apply_alternative_step
from workers.kernel.prefixes import run_build_prefixes_step
from workers.kernel.steps import run_apply_step, run_build_step
from workers.lab.bisect_step import run_bisect_step
from workers.lab.step import run_bench_step
from workers.report_step import run_report_step

StepBody = Callable[[Database, Settings, int, "str | None"], None]


@functools.cache
def _database(url: str) -> Database:
    return open_database(url)


def database() -> Database:
    return _database(configured_settings().database.resolved_url())


def run_retrying(task: Task, body: StepBody, step_id: int) -> int:
    """Run step `step_id` with `body`; a transient failure is retried after `retry_delay`, and
    after max_retries the step is left for the reaper of `lorelab run` (bot/runs/reaper.py)."""
    settings = configured_settings()
    try:
        body(database(), settings, step_id, task.request.id)
    except RETRYABLE as exc:
        raise task.retry(exc=exc, countdown=retry_delay(task.request.retries, settings.celery),
                         max_retries=settings.celery.max_retries) from None
    return step_id


@app.task(bind=True, name="lorelab.apply", acks_late=True)
def apply_task(self: Task, step_id: int) -> int:
    return run_retrying(self, run_apply_step, step_id)


@app.task(bind=True, name="lorelab.build", acks_late=True)
def build_task(self: Task, step_id: int) -> int:
    return run_retrying(self, run_build_step, step_id)


@app.task(bind=True, name="lorelab.bench", acks_late=True)
def bench_task(self: Task, step_id: int) -> int:
    return run_retrying(self, run_bench_step, step_id)


@app.task(bind=True, name="lorelab.report", acks_late=True)
def report_task(self: Task, step_id: int) -> int:
    return run_retrying(self, run_report_step, step_id)


@app.task(bind=True, name="lorelab.apply-alternative", acks_late=True)
def apply_alternative_task(self: Task, step_id: int) -> int:
    return run_retrying(self, run_apply_alternative_step, step_id)


@app.task(bind=True, name="lorelab.build-prefixes", acks_late=True)
def build_prefixes_task(self: Task, step_id: int) -> int:
    return run_retrying(self, run_build_prefixes_step, step_id)


@app.task(bind=True, name="lorelab.bisect", acks_late=True)
def bisect_task(self: Task, step_id: int) -> int:
    return run_retrying(self, run_bisect_step, step_id)
