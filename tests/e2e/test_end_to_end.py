"""The whole loop on real components: a list archive, the service, a Celery worker, SMTP, web.

A public-inbox server receives a generated series thread; `lorelab run` (the deployed service)
ingests it and plans a review run; a Celery worker on Redis applies it, builds the stand-in tree
and runs the local runner; the reply arrives at an aiosmtpd server, threaded under the cover
letter; the status page, backed by PostgreSQL, shows the series and its verdict.
"""

from __future__ import annotations

import email
import email.policy
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.db.models import IngestCursor, LabCampaign, Run
from bot.db.session import Database, ensure_schema
from bot.demo.simtree import batch_series_spec, make_sim_tree
from bot.demo.threads import make_series
from tests.conftest import drop_pg_database, make_pg_database, redis_reason
from tests.support.paths import REPO
from tests.support.pi_server import LIST_ADDRESS, LiveLorelab, PublicInbox, missing_reason
from tests.support.redis_broker import private_broker
from tests.support.smtp import Recorder, free_port

pytestmark = [
    pytest.mark.slow,  # end to end: CI, not the fast loop
    pytest.mark.postgres, pytest.mark.redis]


def _header(raw: bytes, name: str) -> str:
    return str(email.message_from_bytes(raw, policy=email.policy.default)[name] or "").strip()


def test_a_series_posted_to_the_list_gets_a_benchmark_reply_by_smtp(tmp_path, pg_server):
    for reason in (missing_reason(), redis_reason(),
                   None if shutil.which("make") and shutil.which("gcc") else "make/gcc"):
        if reason:
            pytest.skip(reason)
    from aiosmtpd.controller import Controller

    db_url = make_pg_database(pg_server)
    broker = private_broker()
    host = f"e2e{uuid.uuid4().hex[:6]}"  # a lab queue of this test's own
    recorder = Recorder()
    smtp = Controller(recorder, hostname="127.0.0.1", port=free_port())
    smtp.start()
    pi = PublicInbox(tmp_path / "pi")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        tree = make_sim_tree(tmp_path / "linux")
        messages = make_series(tree, batch_series_spec())
        for raw in messages:  # the list server receives the thread
            pi.deliver(raw)
        pi.start()
        config = tmp_path / "config.toml"
        config.write_text(f"""
[[sources]]
kind = "lore"
url = "{pi.base_url}"
list = "linux-mm"
interval = 1

[[trees]]
name = "sim"
path = "{tree}"

[build]
work_dir = "{tmp_path / 'work'}"
base_config = "defconfig"
fragments = []
jobs = 2

[celery]
broker_url = "{broker}"

[[lab_hosts]]
name = "{host}"
runner = "local"

[[suites]]
name = "simulator"
watched = ["mm/"]
benchmarks = ["reclaim-sim:ops=3000000"]

[plan]
max_age_days = 100000

# One reply per round, exactly once; the follow-ups' rounds: tests/runs/test_follow_up_rounds.py.
[follow_ups]
bisect = false
align = false
compare = false
experiment = false

[report]
mode = "smtp"
smtp_host = "127.0.0.1"
smtp_port = {smtp.port}
smtp_security = "plain"
from_address = "lorelab <lorelab@lorelab.example.org>"
contact = "Lab Admin <admin@lorelab.example.org>"
allowed_lists = ["{LIST_ADDRESS}"]
""")
        lorelab = LiveLorelab(tmp_path / "home", db_url)
        lorelab.env["LORELAB_CONFIG"] = str(config)
        lorelab.env["LORELAB_DATA_DIR"] = str(tmp_path / "data")
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", "worker",
             "-Q", f"git,build,lab.{host}", "-c", "1", "--without-heartbeat",
             "--without-gossip", "--without-mingle", "-n", f"{host}@%h", "--loglevel", "INFO"],
            env={**lorelab.env, "PYTHONPATH": str(REPO)},
            stdout=open(tmp_path / "worker.log", "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
        procs.append(worker)
        service = lorelab.popen("run")
        procs.append(service)

        deadline = time.monotonic() + 300
        while not recorder.received and time.monotonic() < deadline:
            assert service.poll() is None, service.stderr.read().decode() if service.stderr \
                else "lorelab run exited"
            time.sleep(1)
        assert recorder.received, (tmp_path / "worker.log").read_text()[-3000:]

        (received,) = recorder.received
        raw = received.content
        cover = messages[0]
        cover_id = _header(cover, "Message-ID")
        assert _header(raw, "In-Reply-To") == cover_id
        assert cover_id in _header(raw, "References")
        assert _header(raw, "Subject") == "Re: " + _header(cover, "Subject")
        assert LIST_ADDRESS in received.rcpt_tos
        assert "ada@example.org" in _header(raw, "To")
        body = raw.decode("utf-8", "replace")
        assert "reclaim-sim.throughput" in body

        db = Database(db_url)
        ensure_schema(db.engine)
        with db.session() as session:
            (run,) = session.scalars(sa.select(Run)).all()
            assert run.trigger == "auto" and run.state == "done"
            # the worker, not the service, ran every step (the service only planned it)
            assert all(s.host and s.host.split(":")[1] != str(service.pid) for s in run.steps)
            campaign = session.scalars(sa.select(LabCampaign)).one()
            verdict = campaign.result["metrics"][0]["words"]
            version_id = run.series_version_id
        db.dispose()
        _check_status_page(db_url, tmp_path, version_id, verdict)
        # Two more whole rounds of the service (each ends its poll, then delivers): nothing
        # is sent twice.
        _wait_for_polls(db_url, 3)
        assert len(recorder.received) == 1
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        pi.stop()
        smtp.stop()
        drop_pg_database(pg_server, db_url)


def _check_status_page(db_url: str, tmp_path: Path, version_id: int, verdict: str) -> None:
    """The status page on the same PostgreSQL database shows the series and its verdict."""
    import requests

    from bot.config import load_settings
    from bot.db.models import SeriesVersion
    from tests.support.web_server import serving

    settings = load_settings(tmp_path / "config.toml", env={"LORELAB_DATABASE_URL": db_url})
    db = Database(db_url)
    with db.session() as session:
        series_id = session.get(SeriesVersion, version_id).series_id  # type: ignore[union-attr]
    db.dispose()
    with serving(settings) as base:
        front = requests.get(f"{base}/", timeout=30)
        assert front.status_code == 200 and "batch reclaim event counter updates" in front.text
        page = requests.get(f"{base}/series/{series_id}", timeout=30)
    assert page.status_code == 200
    assert verdict.split(" (")[0] in page.text and "<svg" in page.text


def _wait_for_polls(db_url: str, count: int, limit: float = 120) -> None:
    """Until the service has ended `count` more polls of its source (or `limit` seconds)."""
    db = Database(db_url)
    seen: set[object] = set()
    deadline = time.monotonic() + limit
    try:
        while len(seen) <= count and time.monotonic() < deadline:
            with db.session() as session:
                seen.add(session.scalars(sa.select(IngestCursor.last_poll)).first())
            time.sleep(0.1)
    finally:
        db.dispose()
    assert len(seen) > count, f"the service ended {len(seen) - 1} polls, not {count}"
