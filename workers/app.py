"""The Celery app: queues, routing, time limits, acknowledgement and retry policy.

Queues: `git` (apply), `build` (kernel builds), and one `lab.<host>` per configured lab host
(started with concurrency 1: two benchmarks never share a host). Tasks are acknowledged late
and are idempotent (a redelivered step starts over, a done step is skipped), so a worker lost
mid-task loses nothing. Without a broker URL (the embedded default) tasks run eagerly in the
calling process. Start a deployed worker with:

    export LORELAB_CELERY_BROKER_URL=redis://127.0.0.1:6379/0
    celery -A workers.app worker -Q git,build -c 1

This module must not import `bot.cli` or any web module: workers run without them.
"""

from __future__ import annotations

from celery import Celery
from kombu import Queue

from bot.config import ConfigError, Settings, load_settings
from workers.lab.hosts import configured_hosts

app = Celery("lorelab", include=["workers.tasks"])
_settings: Settings | None = None


def queues(settings: Settings) -> list[str]:
    return ["git", "build", *(h.queue_name for h in configured_hosts(settings.lab_hosts))]


def configure(settings: Settings) -> Celery:
    """(Re)configure the app from `settings`; the tasks read their settings from here."""
    global _settings
    _settings = settings
    celery = settings.celery
    eager = not celery.broker_url
    app.conf.update(
        broker_url=celery.broker_url or "memory://",
        result_backend=(celery.result_backend or celery.broker_url) or None,
        task_always_eager=eager,
        task_eager_propagates=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_max_tasks_per_child=celery.max_tasks_per_child,
        task_default_queue="git",
        task_annotations={
            "lorelab.apply": {"time_limit": celery.apply_time_limit,
                              "soft_time_limit": celery.apply_time_limit - 30},
            "lorelab.build": {"time_limit": celery.build_time_limit,
                              "soft_time_limit": celery.build_time_limit - 60},
            "lorelab.bench": {"time_limit": celery.bench_time_limit,
                              "soft_time_limit": celery.bench_time_limit - 60},
        },
        # lorelab.bench goes to its lab host's queue, chosen per run (workers.pipeline.dispatch).
        task_routes={"lorelab.apply": {"queue": "git"}, "lorelab.build": {"queue": "build"},
                     "lorelab.report": {"queue": "git"}},
        task_queues=[Queue(name) for name in queues(settings)],
        task_create_missing_queues=True,
        result_expires=7 * 24 * 3600,
        broker_connection_retry_on_startup=True,
        task_track_started=True,
    )
    return app


def settings() -> Settings:
    """The settings the app was configured with (loaded from the environment if never)."""
    if _settings is None:
        configure(load_settings())
    assert _settings is not None
    return _settings


try:  # a worker started by `celery -A workers.app` is configured from the environment
    configure(load_settings())
except ConfigError:
    _settings = None  # the caller configures it (the CLI with --config), or settings() raises
