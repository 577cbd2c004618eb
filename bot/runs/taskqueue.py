"""The Celery app: queues, routing, time limits, and sending a run's steps by task name.

Queues: `git` (apply, report), `build` (kernel builds), and one `lab.<host>` per configured lab
host (started with concurrency 1: two benchmarks never share a host). Tasks are acknowledged
late and are idempotent (a redelivered step starts over, a done step is skipped), so a worker
lost mid-task loses nothing. Without a broker URL (the embedded default) tasks run eagerly in
the calling process.

The control plane names tasks ("lorelab.apply", ...) and never imports their bodies: the app
includes `workers.tasks` by name, which a worker (`celery -A workers.app`) or, in eager mode,
`dispatch` imports when it needs them.
"""

from __future__ import annotations

from celery import Celery, chain
from kombu import Queue

from bot.config import Settings
from bot.config.lab_hosts import find_host, queue_names
from bot.db.models import Run
from bot.db.session import Database
from bot.runs.lifecycle import pending_steps
from bot.runs.states import FINISHED

app = Celery("lorelab", include=["workers.tasks"])

# The task that runs each step, by name; its body is in workers/tasks.py.
STEP_TASKS = {"apply": "lorelab.apply", "build-base": "lorelab.build",
              "build-patched": "lorelab.build", "bench": "lorelab.bench",
              "report": "lorelab.report"}
_configured: Settings | None = None


def configure(settings: Settings) -> Celery:
    """Configure the app from `settings`; the tasks read their settings back with
    `configured_settings`."""
    global _configured
    _configured = settings
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
                              "soft_time_limit": celery.apply_time_limit - 30,
                              "max_retries": celery.max_retries},
            "lorelab.build": {"time_limit": celery.build_time_limit,
                              "soft_time_limit": celery.build_time_limit - 60,
                              "max_retries": celery.max_retries},
            "lorelab.bench": {"time_limit": celery.bench_time_limit,
                              "soft_time_limit": celery.bench_time_limit - 60,
                              "max_retries": celery.max_retries},
            "lorelab.report": {"max_retries": celery.max_retries},
        },
        # lorelab.bench goes to its lab host's queue, chosen per run (dispatch).
        task_routes={"lorelab.apply": {"queue": "git"}, "lorelab.build": {"queue": "build"},
                     "lorelab.report": {"queue": "git"}},
        task_queues=[Queue(name) for name in queue_names(settings.lab_hosts)],
        task_create_missing_queues=True,
        result_expires=7 * 24 * 3600,
        broker_connection_retry_on_startup=True,
        task_track_started=True,
    )
    return app


def configured_settings() -> Settings:
    """The settings the app was configured with; a worker configures it when it starts."""
    if _configured is None:
        raise RuntimeError("the Celery app is not configured: call configure(settings) first")
    return _configured


def dispatch(run: Run, settings: Settings) -> None:
    """Send the run's unfinished steps to the workers as a chain, in order (eager: they run
    now, here). apply and report go to the `git` queue, builds to `build`, and the bench step
    to the lab host's own queue, where one worker runs one benchmark at a time."""
    configure(settings)
    if app.conf.task_always_eager:
        app.loader.import_default_modules()  # the task bodies run here: register them
    signatures = []
    for step in pending_steps(run):
        options = {}
        if step.name == "bench":
            options["queue"] = find_host(settings.lab_hosts, run.runner).queue_name
        signatures.append(app.signature(STEP_TASKS[step.name], args=(step.id,), immutable=True,
                                        **options))
    if signatures:
        chain(*signatures).apply_async()


def send_run(db: Database, settings: Settings, run_id: int) -> bool:
    """Dispatch the stored run `run_id` (committed by the caller); False when it is not
    there or has finished."""
    with db.session() as session:
        run = session.get(Run, run_id)
        if run is None or run.state in FINISHED:
            return False
        list(run.steps)  # loaded while the session is open; dispatch only reads them
    dispatch(run, settings)
    return True
