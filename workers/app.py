"""A worker's entry point: `celery -A workers.app worker -Q git,build -c 1`.

The app itself (queues, routing, limits) is `bot.runs.taskqueue.app`; this configures it from
the environment's settings (LORELAB_CONFIG, LORELAB_*) and registers the task bodies. One lab
host's worker serves its queue alone, with concurrency 1:

    export LORELAB_CELERY_BROKER_URL=redis://127.0.0.1:6379/0
    celery -A workers.app worker -Q lab.<host> -c 1

This module must not import `bot.cli` or any web module: workers run without them.
"""

from __future__ import annotations

from bot.config import load_settings
from bot.runs.taskqueue import app, configure

configure(load_settings())

import workers.tasks  # noqa: E402,F401 - registers the tasks on `app`

__all__ = ["app"]
