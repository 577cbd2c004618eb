"""Steps stranded by an outage are found and sent again, and sending again is safe: a duplicate
message never runs a step twice at once nor ahead of its run (on SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
from pathlib import Path

import sqlalchemy as sa

from bot.config import Settings, load_settings
from bot.db.models import Run, RunStep, SeriesVersion, utcnow
from bot.db.session import Database
from bot.demo.simtree import batch_series_spec, make_sim_tree
from bot.demo.threads import make_series
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from bot.runs.lifecycle import create_run
from bot.runs.reaper import find_overdue, release_orphans
from bot.runs.rounds import run_round
from bot.runs.steps import finish_step, start_step

HOUR = dt.timedelta(hours=1)


def _setup(tmp_path: Path, db_url: str) -> tuple[Database, Settings, int]:
    """A database with one ingested series on the stand-in tree; the version's id."""
    tree = make_sim_tree(tmp_path / "linux")
    config = tmp_path / "config.toml"
    config.write_text(f'[[trees]]\nname = "sim"\npath = "{tree}"\n\n[plan]\nauto = false\n\n'
                      f'[build]\nwork_dir = "{tmp_path / "work"}"\n')
    settings = load_settings(config, env={"LORELAB_DATABASE_URL": db_url})
    db = Database(db_url)
    ingest(db, [RawMail(m, f"t{i}") for i, m in enumerate(make_series(tree, batch_series_spec()))],
           settings=settings.ingest, list_name="linux-mm")
    with db.session() as session:
        version_id = session.scalars(sa.select(SeriesVersion.id)).one()
    return db, settings, version_id


def _run(db: Database, version_id: int, kind: str, **steps: dict) -> int:
    """A run whose steps have the given columns (by step name, dashes as underscores)."""
    with db.session() as session:
        run = create_run(session, session.get(SeriesVersion, version_id), kind=kind, tree="sim")
        for step in run.steps:
            for key, value in steps.get(step.name.replace("-", "_"), {}).items():
                setattr(step, key, value)
        return run.id


def _steps(db: Database, run_id: int) -> dict[str, RunStep]:
    with db.session() as session:
        return {s.name: s for s in session.scalars(
            sa.select(RunStep).where(RunStep.run_id == run_id).order_by(RunStep.id))}


def test_a_duplicate_message_neither_runs_a_step_twice_nor_ahead_of_its_run(tmp_path, db_url):
    db, _, version = _setup(tmp_path, db_url)
    run_id = _run(db, version, "build")
    ids = {name: step.id for name, step in _steps(db, run_id).items()}
    assert start_step(db, ids["apply"], "task-a")
    assert not start_step(db, ids["apply"], "task-b")  # held by a live task: a duplicate
    assert not start_step(db, ids["build-base"], "task-c")  # apply has not ended
    assert start_step(db, ids["apply"], "task-a")  # the same task: a Celery retry
    finish_step(db, ids["apply"], ok=True)
    assert not start_step(db, ids["apply"], "task-b")  # done
    assert start_step(db, ids["build-base"], "task-c")
    # A holder whose process is gone (killed mid-step) gives the step up to another task.
    child = subprocess.Popen(["true"])
    child.wait()
    with db.session() as session:
        session.get(RunStep, ids["build-base"]).host = f"{socket.gethostname()}:{child.pid}"
    assert start_step(db, ids["build-base"], "task-d")
    assert _steps(db, run_id)["build-base"].attempts == 2
    db.dispose()


def test_the_reaper_finds_steps_never_sent_lost_or_stuck_and_nothing_else(tmp_path, db_url):
    db, settings, version = _setup(tmp_path, db_url)
    now = utcnow()
    old, fresh = now - 2 * HOUR, now - dt.timedelta(seconds=10)
    unsent = _run(db, version, "apply", apply={"queued_at": old})
    lost = _run(db, version, "build", apply={"state": "done", "sent_at": old, "finished_at": old},
                build_base={"sent_at": old})
    stuck = _run(db, version, "apply", apply={"state": "running", "sent_at": old,
                                              "started_at": old, "host": "elsewhere:1"})
    # Not overdue: just made, just sent, running within its time limit, or stopped.
    _run(db, version, "apply", apply={"queued_at": fresh})
    _run(db, version, "apply", apply={"queued_at": old, "sent_at": fresh})
    _run(db, version, "apply", apply={"state": "running", "sent_at": old, "started_at": fresh,
                                      "host": "elsewhere:1"})
    cancelled = _run(db, version, "apply", apply={"queued_at": old})
    with db.session() as session:
        session.get(Run, cancelled).state = "cancelled"

    found = {late.run_id: late for late in find_overdue(db, settings.celery, now)}

    assert sorted(found) == [unsent, lost, stuck]
    assert found[unsent].why == "never sent to the workers"
    assert found[lost].step_id == _steps(db, lost)["build-base"].id
    assert "past its time limit" in found[stuck].why
    stuck_step = _steps(db, stuck)["apply"]
    assert stuck_step.state == "queued" and "sent again" in stuck_step.error
    db.dispose()


def test_a_starting_worker_gives_back_the_steps_of_dead_workers_of_its_machine(tmp_path,
                                                                              db_url):
    db, settings, version = _setup(tmp_path, db_url)
    child = subprocess.Popen(["true"])
    child.wait()
    here, now = socket.gethostname(), utcnow()
    dead = _run(db, version, "apply", apply={"state": "running", "sent_at": now,
                                             "started_at": now, "host": f"{here}:{child.pid}"})
    alive = _run(db, version, "apply", apply={"state": "running", "sent_at": now,
                                              "started_at": now, "host": f"{here}:1"})
    elsewhere = _run(db, version, "apply", apply={"state": "running", "sent_at": now,
                                                  "started_at": now, "host": "other:4242"})

    assert release_orphans(db) == [_steps(db, dead)["apply"].id]

    assert [(s.state, s.sent_at) for s in _steps(db, dead).values()] == [("queued", None)]
    assert {_steps(db, r)["apply"].state for r in (alive, elsewhere)} == {"running"}
    assert [late.run_id for late in find_overdue(db, settings.celery, now + 2 * HOUR)
            if late.why == "never sent to the workers"] == [dead]
    db.dispose()


def test_a_round_sends_a_stranded_run_again_and_it_finishes(tmp_path, db_url, monkeypatch):
    db, settings, version = _setup(tmp_path, db_url)
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path / "data"))
    old = utcnow() - 2 * HOUR
    lost = _run(db, version, "apply", apply={"queued_at": old, "sent_at": old})
    unsent = _run(db, version, "apply", apply={"queued_at": old})

    first = run_round(db, settings, utcnow())
    again = run_round(db, settings, utcnow())

    assert first.resent == [lost, unsent] and again.resent == []
    for run_id in (lost, unsent):
        step = _steps(db, run_id)["apply"]
        assert (step.state, step.attempts) == ("done", 1)
    db.dispose()


def test_the_default_retries_ride_out_minutes_of_outage():
    from bot.config.build import CelerySettings
    from bot.runs.taskqueue import retry_delay

    celery = CelerySettings()
    delays = [retry_delay(n, celery) for n in range(celery.max_retries)]
    ceilings = [min(celery.retry_backoff_max, celery.retry_backoff * 2 ** n)
                for n in range(celery.max_retries)]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    # the old budget (3 retries, 0-2 s apart) was spent in about 5 s; the least this one waits:
    assert sum(c / 2 for c in ceilings) > 10 * 60
