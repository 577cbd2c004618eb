"""The Celery tasks, one per step kind, each running a recorded step by its id.

Named "lorelab.<step>": the control plane sends them by name (bot.runs.taskqueue). Time limits
come from [celery]; transient failures (the database unreachable, a git lock held) are
retried with backoff; anything else is recorded on the step's row by `bot.runs.steps.run_step`.
"""

from __future__ import annotations

import functools

import sqlalchemy as sa

from bot.db.session import Database, open_database
from bot.runs.steps import TransientError
from bot.runs.taskqueue import app, configured_settings
from workers.kernel.steps import run_apply_step, run_build_step
from workers.lab.step import run_bench_step
from workers.report_step import run_report_step

# How many retries: [celery] max_retries, set on each task by bot.runs.taskqueue.configure.
_RETRY = {"autoretry_for": (TransientError, sa.exc.OperationalError), "retry_backoff": True,
          "retry_backoff_max": 300, "acks_late": True}


@functools.cache
def _database(url: str) -> Database:
    return open_database(url)


def database() -> Database:
    return _database(configured_settings().database.resolved_url())


@app.task(bind=True, name="lorelab.apply", **_RETRY)
def apply_task(self, step_id: int) -> int:  # type: ignore[no-untyped-def]
    run_apply_step(database(), configured_settings(), step_id, self.request.id)
    return step_id


@app.task(bind=True, name="lorelab.build", **_RETRY)
def build_task(self, step_id: int) -> int:  # type: ignore[no-untyped-def]
    run_build_step(database(), configured_settings(), step_id, self.request.id)
    return step_id


@app.task(bind=True, name="lorelab.bench", **_RETRY)
def bench_task(self, step_id: int) -> int:  # type: ignore[no-untyped-def]
    run_bench_step(database(), configured_settings(), step_id, self.request.id)
    return step_id


@app.task(bind=True, name="lorelab.report", **_RETRY)
def report_task(self, step_id: int) -> int:  # type: ignore[no-untyped-def]
    run_report_step(database(), configured_settings(), step_id, self.request.id)
    return step_id
