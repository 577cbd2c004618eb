"""The Celery tasks: thin wrappers that run a recorded step (workers.pipeline) by its id.

Time limits come from [celery]; transient failures (the database unreachable, a git lock
held) are retried with backoff; anything else is recorded on the step row by the step itself.
"""

from __future__ import annotations

import functools

import sqlalchemy as sa

from bot.db.session import Database, ensure_schema
from workers import bench_step, pipeline, report_step
from workers.app import app, settings
from workers.steps import TransientError

_RETRY = {"autoretry_for": (TransientError, sa.exc.OperationalError), "retry_backoff": True,
          "retry_backoff_max": 300, "max_retries": 3, "acks_late": True}


@functools.cache
def _database(url: str) -> Database:
    db = Database(url)
    ensure_schema(db.engine)
    return db


def database() -> Database:
    return _database(settings().database.resolved_url())


@app.task(bind=True, name="lorelab.apply", **_RETRY)
def apply_task(self, step_id: int) -> int:  # type: ignore[no-untyped-def]
    pipeline.run_apply_step(database(), settings(), step_id, self.request.id)
    return step_id


@app.task(bind=True, name="lorelab.build", **_RETRY)
def build_task(self, step_id: int) -> int:  # type: ignore[no-untyped-def]
    pipeline.run_build_step(database(), settings(), step_id, self.request.id)
    return step_id


@app.task(bind=True, name="lorelab.bench", **_RETRY)
def bench_task(self, step_id: int) -> int:  # type: ignore[no-untyped-def]
    bench_step.run_bench_step(database(), settings(), step_id, self.request.id)
    return step_id


@app.task(bind=True, name="lorelab.report", **_RETRY)
def report_task(self, step_id: int) -> int:  # type: ignore[no-untyped-def]
    report_step.run_report_step(database(), settings(), step_id, self.request.id)
    return step_id
