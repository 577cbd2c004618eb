"""Runs finish after an outage of PostgreSQL and of Redis, and every reply is written once.

A PostgreSQL and a Redis of this test's own (tests/support/private_servers.py; the shared ones
are never stopped), a real Celery worker, `lorelab run` following a public-inbox archive of
series on the stand-in tree. In the middle of the runs PostgreSQL goes down (an immediate
shutdown: every connection drops), comes back, then Redis is killed and comes back; a series
posted while Redis is down is planned in that outage. Every run must end done and every reply
be in the outbox exactly once.

The outage length is `LORELAB_TEST_OUTAGE_SECONDS` (default 30): longer than what Celery's
old retry budget covered (3 retries, 0-2 s apart, spent in about 5 s), short enough for CI;
the issue's 60 s outage is `LORELAB_TEST_OUTAGE_SECONDS=60`. Step time limits are small here
(still above a step's time on a loaded machine), so that a step stranded mid-run is found by
the reaper of `lorelab run` within minutes. As docker-compose.yml restarts a lorelab service
that exits, so does this test: a Celery worker that a Redis outage brings down (its time-limit
timer fires while it cannot reach the broker) is started again.
"""

from __future__ import annotations

import mailbox
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.db.models import OutboxReply, Run, RunStep
from bot.db.session import Database, ensure_schema
from bot.demo.simtree import make_sim_tree
from bot.demo.threads import Change, SeriesSpec, make_series
from tests.support import pi_server, private_servers
from tests.support.paths import REPO

pytestmark = [
    pytest.mark.slow,  # end to end, with two outages: CI, not the fast loop
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="make and gcc are needed to build the simulator tree"),
]

OUTAGE = float(os.environ.get("LORELAB_TEST_OUTAGE_SECONDS", "30"))
STALL = 480.0  # no step or reply moved for this long: what is left is stranded


def _series(tree: Path, n: int) -> list[bytes]:
    batch = 8 << n
    title = f"mm/vmscan: batch reclaim events by {batch}"
    change = Change("mm/vmscan.c", "#define VM_EVENT_BATCH\t\t1",
                    (f"#define VM_EVENT_BATCH\t\t{batch}",), title, "Fewer atomic adds.")
    return make_series(tree, SeriesSpec(title=title, patches=1, changes=(change,),
                                        change_id=f"20261201-batch-{batch}"))


def _config(root: Path, tree: Path, inbox: Path, broker: str) -> Path:
    config = root / "config.toml"
    config.write_text(f"""
[[sources]]
kind = "pi-git"
url = "{inbox}"
list = "linux-mm"
interval = 2

[[trees]]
name = "sim"
path = "{tree}"

[build]
work_dir = "{root / 'work'}"
base_config = "defconfig"
fragments = []
jobs = 1

[celery]
broker_url = "{broker}"
apply_time_limit = 180
build_time_limit = 300
bench_time_limit = 300
queued_deadline = 20

[[lab_hosts]]
name = "outage"
pairs_max = 4
pairs_min = 4

[[suites]]
name = "sim"
watched = ["mm/"]
benchmarks = ["reclaim-sim:ops=200000"]

[plan]
max_age_days = 100000
""")
    return config


def _snapshot(db: Database) -> tuple:
    """Every step's (run, name, state) and every reply's state; None while the database is
    down."""
    try:
        with db.session() as session:
            steps = session.execute(sa.select(RunStep.run_id, RunStep.name, RunStep.state)
                                    .order_by(RunStep.id)).all()
            replies = session.execute(sa.select(OutboxReply.id, OutboxReply.state)).all()
        return tuple(map(tuple, steps)), tuple(map(tuple, replies))
    except sa.exc.OperationalError:
        return None  # type: ignore[return-value]


class Services:
    """Processes started again when they exit, as docker-compose's `restart: unless-stopped`
    does; `restarts` counts them."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        self.procs: dict[str, tuple[list[str], subprocess.Popen[bytes]]] = {}
        self.restarts: dict[str, int] = {}

    def start(self, name: str, argv: list[str]) -> None:
        with (self.root / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.procs[name] = (argv, proc)

    def keep_running(self) -> None:
        for name, (argv, proc) in list(self.procs.items()):
            if proc.poll() is not None:
                self.restarts[name] = self.restarts.get(name, 0) + 1
                self.start(name, argv)

    def hold(self, seconds: float) -> None:
        """Keep the services running for `seconds` (an outage's length)."""
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            self.keep_running()
            time.sleep(0.5)

    def stop(self) -> None:
        for _, proc in self.procs.values():
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait(db: Database, services: Services, condition: Callable[[tuple], bool],
          limit: float) -> tuple:
    """The snapshot once `condition` holds, or the last one when nothing moved for STALL
    seconds or `limit` passed."""
    deadline = time.monotonic() + limit
    last, moved = None, time.monotonic()
    while time.monotonic() < deadline:
        services.keep_running()
        now = _snapshot(db)
        if now is not None and condition(now):
            return now
        if now != last:
            last, moved = now, time.monotonic()
        elif time.monotonic() - moved > STALL:
            break
        time.sleep(0.5)
    return last  # type: ignore[return-value]


def _done_steps(snapshot: tuple) -> int:
    return sum(1 for _, _, state in snapshot[0] if state == "done")


def _finished(runs: int) -> Callable[[tuple], bool]:
    def check(snapshot: tuple) -> bool:
        steps, replies = snapshot
        return (len({run for run, _, _ in steps}) == runs
                and all(state in ("done", "failed") for _, _, state in steps)
                and len(replies) >= runs and all(state == "sent" for _, state in replies))
    return check


@pytest.mark.redis
@pytest.mark.postgres
def test_runs_finish_and_reply_once_after_postgresql_and_redis_outages(tmp_path: Path) -> None:
    for reason in (private_servers.missing_reason(), pi_server.missing_reason()):
        if reason:
            pytest.skip(reason)
    pg = private_servers.PrivatePostgres(tmp_path / "pg")
    broker = private_servers.PrivateRedis(tmp_path / "redis")
    services: Services | None = None
    try:
        pg.start()
        broker.start()
        db_url = pg.create_database("lorelab")
        db = Database(db_url)
        ensure_schema(db.engine)
        tree = make_sim_tree(tmp_path / "linux")
        inbox = pi_server.PublicInbox(tmp_path / "pi")
        for n in range(3):
            for raw in _series(tree, n):
                inbox.deliver(raw)
        config = _config(tmp_path, tree, inbox.inbox, broker.url())
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("LORELAB_")},
               "LORELAB_CONFIG": str(config), "LORELAB_DATABASE_URL": db_url,
               "LORELAB_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(REPO),
               "XDG_CONFIG_HOME": str(tmp_path / "xdg")}

        services = Services(tmp_path, env)
        services.start("worker", [sys.executable, "-m", "celery", "-A", "workers.app", "worker",
                                  "-Q", "git,build,lab.outage", "-c", "1",
                                  "--without-heartbeat", "--without-gossip", "--without-mingle",
                                  "-n", "outage@%h", "--loglevel", "INFO"])
        services.start("service", [sys.executable, "-c", "from bot.cli import main; main()", "run"])

        # PostgreSQL goes down once the first step is done, while the next one runs.
        _wait(db, services, lambda s: _done_steps(s) >= 1, limit=600)
        pg.crash()
        services.hold(OUTAGE)  # the outage itself, not a proof of anything
        pg.start()
        # Redis goes down once the runs moved on (or could not); a series posted meanwhile is
        # planned while it is down.
        after_pg = _wait(db, services, lambda s: _done_steps(s) >= 5, limit=600)
        broker.kill()
        for raw in _series(tree, 3):
            inbox.deliver(raw)
        services.hold(OUTAGE)
        broker.start()

        final = _wait(db, services, _finished(4), limit=1800)
        with db.session() as session:
            runs = session.execute(sa.select(Run.id, Run.state)).all()
            stranded = {run: [(name, state) for r, name, state in final[0]
                              if r == run and state != "done"] for run, state in runs
                        if state != "done"}
            replies = session.execute(sa.select(OutboxReply.message_id, OutboxReply.state)).all()
        db.dispose()
        assert len(runs) == 4 and not stranded, (
            f"{len(stranded)} of {len(runs)} runs stranded: {stranded}; after the PostgreSQL "
            f"outage {_done_steps(after_pg)} steps were done; restarts {services.restarts}")
        assert sorted(state for _, state in replies) == ["sent"] * 4
        outbox = mailbox.Maildir(tmp_path / "data" / "outbox", create=False)
        delivered = [str(m["Message-ID"]).strip("<>") for m in outbox]
        assert sorted(delivered) == sorted(mid for mid, _ in replies)  # each exactly once
    finally:
        if services is not None:
            services.stop()
        broker.kill()
        pg.stop()
