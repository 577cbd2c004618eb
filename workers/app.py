"""A worker's entry point: `celery -A workers.app worker -Q git,build -c 1`.

The app itself (queues, routing, limits) is `bot.runs.taskqueue.app`; this configures it from
the environment's settings (LORELAB_CONFIG, LORELAB_*) and registers the task bodies. One lab
host's worker serves its queue alone, with concurrency 1:

    export LORELAB_CELERY_BROKER_URL=redis://127.0.0.1:6379/0
    celery -A workers.app worker -Q lab.<host> -c 1

When it is ready it gives back the steps that workers of this machine held when they died
(bot.runs.reaper.release_orphans): a worker restarted after a crash (an outage can bring one
down) does not leave its step `running` until its time limit.

This module must not import `bot.cli` or any web module: workers run without them.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready

from bot.config import load_settings
from bot.runs.reaper import release_orphans
from bot.runs.taskqueue import RETRYABLE, app, configure

configure(load_settings())

import workers.tasks  # noqa: E402 - registers the tasks on `app`

__all__ = ["app"]
log = logging.getLogger(__name__)


@worker_ready.connect
def give_back_orphans(**_: Any) -> None:
    try:
        released = release_orphans(workers.tasks.database())
    except RETRYABLE as exc:  # the database is down: the reaper finds them after their limit
        log.warning("could not release the steps of dead workers: %s", exc)
        return
    if released:
        log.warning("steps %s of dead workers here queued again for `lorelab run`", released)
