"""The Celery app: queues, routing, time limits, and sending a run's steps by task name.

Queues: `git` (apply, report), `build` (kernel builds), and one `lab.<host>` per configured lab
host (started with concurrency 1: two benchmarks never share a host). Tasks are acknowledged
late and are idempotent (a redelivered step starts over, a done step is skipped), so a worker
lost mid-task loses nothing; the broker hands an unacknowledged task to another worker only
after a visibility timeout longer than the longest step. A transient failure (the database or
the broker unreachable) is retried with backoff up to minutes (`retry_delay`); what an outage
strands anyway, `lorelab run` sends again (bot/runs/reaper.py). Without a broker URL (the
embedded default) tasks run eagerly in the calling process.

The control plane names tasks ("lorelab.apply", ...) and never imports their bodies: the app
includes `workers.tasks` by name, which a worker (`celery -A workers.app`) or, in eager mode,
`dispatch` imports when it needs them.
"""

from __future__ import annotations

import random

import kombu.exceptions
import sqlalchemy as sa
from celery import Celery, chain
from kombu import Queue

from bot.config import Settings
from bot.config.build import CelerySettings
from bot.config.lab_hosts import find_host, queue_names
from bot.db.models import Run, RunStep, utcnow
from bot.db.session import Database
from bot.runs.lifecycle import pending_steps
from bot.runs.states import FINISHED, STOPPED
from bot.runs.steps import TRANSIENT_ERRORS

app = Celery("lorelab", include=["workers.tasks"])

# The task that runs each step, by name; its body is in workers/tasks.py.
STEP_TASKS = {"apply": "lorelab.apply", "build-base": "lorelab.build",
              "build-patched": "lorelab.build", "bench": "lorelab.bench",
              "report": "lorelab.report",
              # the follow-ups' own steps (bot.runs.lifecycle.FOLLOW_UPS)
              "apply-alternative": "lorelab.apply-alternative",
              "build-alternative": "lorelab.build", "build-prefixes": "lorelab.build-prefixes",
              "bisect": "lorelab.bisect"}
# Steps that boot lab kernels: sent to the run's lab host's own queue.
LAB_STEPS = ("bench", "bisect")
# Failures that pass (the database or the broker unreachable): retried, not recorded as the
# step's or the dispatch's outcome.
RETRYABLE = (*TRANSIENT_ERRORS, kombu.exceptions.OperationalError, ConnectionError, TimeoutError)
# How much longer than its longest step the broker waits before it hands an unacknowledged task
# to another worker (a task is acknowledged when it ends).
VISIBILITY_MARGIN = 3600
_configured: Settings | None = None


def step_time_limit(name: str, celery: CelerySettings) -> int:
    """The hard time limit, in seconds, of the task that runs step `name`."""
    if name.startswith("build"):
        return celery.build_time_limit
    if name in LAB_STEPS:
        return celery.bench_time_limit
    return celery.apply_time_limit  # apply, report


def retry_delay(retries: int, celery: CelerySettings) -> float:
    """Seconds before retry number `retries` + 1: retry_backoff doubling up to
    retry_backoff_max, jittered between half and all of that (workers that failed together do
    not retry together, and 12 retries still span 14 to 28 minutes)."""
    ceiling = min(celery.retry_backoff_max, celery.retry_backoff * 2 ** retries)
    return random.uniform(ceiling / 2, ceiling)


def configure(settings: Settings) -> Celery:
    """Configure the app from `settings`; the tasks read their settings back with
    `configured_settings`."""
    global _configured
    _configured = settings
    celery = settings.celery
    eager = not celery.broker_url
    app.conf.update(
        broker_url=celery.broker_url or "memory://",
        # No result store unless one is configured: lorelab reads no task results, and a
        # store that lost its connection fails every later send ("must be restarted").
        result_backend=celery.result_backend or None,
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
            "lorelab.report": {"time_limit": celery.apply_time_limit,
                               "soft_time_limit": celery.apply_time_limit - 30},
        },
        broker_transport_options={"visibility_timeout": max(
            celery.apply_time_limit, celery.build_time_limit, celery.bench_time_limit)
            + VISIBILITY_MARGIN},
        # A worker keeps reconnecting to the broker through an outage of any length.
        broker_connection_max_retries=None,
        # lorelab.bench and lorelab.bisect go to their lab host's queue, chosen per run (dispatch).
        task_routes={"lorelab.apply": {"queue": "git"}, "lorelab.build": {"queue": "build"},
                     "lorelab.report": {"queue": "git"},
                     "lorelab.apply-alternative": {"queue": "git"},
                     "lorelab.build-prefixes": {"queue": "build"}},
        task_queues=[Queue(name) for name in queue_names(settings.lab_hosts)],
        task_create_missing_queues=True,
        result_expires=7 * 24 * 3600,
        broker_connection_retry_on_startup=True,
        # The steps' rows are the record: no task result is written.
        task_ignore_result=True,
    )
    return app


def configured_settings() -> Settings:
    """The settings the app was configured with; a worker configures it when it starts."""
    if _configured is None:
        raise RuntimeError("the Celery app is not configured: call configure(settings) first")
    return _configured


def dispatch(run: Run, settings: Settings, steps: list[RunStep] | None = None) -> None:
    """Send `steps` (by default the run's unfinished ones) to the workers as a chain, in order
    (eager: they run now, here), and record when on each. apply and report go to the `git`
    queue, builds to `build`, and the bench step to the lab host's own queue, where one worker
    runs one benchmark at a time."""
    configure(settings)
    if app.conf.task_always_eager:
        app.loader.import_default_modules()  # the task bodies run here: register them
    steps = pending_steps(run) if steps is None else steps
    signatures = []
    for step in steps:
        options = {}
        if step.name in LAB_STEPS:
            options["queue"] = find_host(settings.lab_hosts, run.runner).queue_name
        signatures.append(app.signature(STEP_TASKS[step.name], args=(step.id,), immutable=True,
                                        **options))
    if signatures:
        sent = utcnow()
        chain(*signatures).apply_async()
        for step in steps:
            step.sent_at = sent


def send_run(db: Database, settings: Settings, run_id: int,
             from_step: int | None = None) -> bool:
    """Dispatch the stored run `run_id` (committed by the caller): its unfinished steps, or
    with `from_step` those from that step on (bot.runs.reaper). False when it is not there,
    was stopped, or has nothing to send; a failure to send raises (bot.runs.rounds records
    it)."""
    with db.session() as session:
        run = session.get(Run, run_id)
        if run is None or run.state in STOPPED:
            return False
        if from_step is None:
            steps = [] if run.state in FINISHED else pending_steps(run)
        else:
            steps = [s for s in pending_steps(run) if s.id >= from_step]
        if not steps:
            return False
    dispatch(run, settings, steps)
    with db.session() as session:  # the steps were read in a session now closed
        session.execute(sa.update(RunStep).where(RunStep.id.in_([s.id for s in steps]))
                        .values(sent_at=steps[0].sent_at))
    return True
