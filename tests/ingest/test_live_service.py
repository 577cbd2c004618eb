"""`lorelab run` and `lorelab sources`: the configured sources polled on their interval, the
loop stopping cleanly on SIGTERM, and each source's cursor, last poll and last error shown."""

from __future__ import annotations

import datetime as dt
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from bot.config import ConfigError, load_settings
from bot.config.sections import SourceSettings
from bot.demo.threads import SeriesSpec, as_mbox, make_series, make_tree
from bot.ingest.epoch_slice import msgid_of
from tests.support.pi_server import LiveLorelab, PublicInbox, free_port, missing_reason

pytestmark = pytest.mark.slow  # end to end: CI, not the fast loop


def write_config(path: Path, sources: str) -> Path:
    path.write_text(f'[[lists]]\nname = "linux-mm"\naddress = "linux-mm@kvack.org"\n\n{sources}')
    return path


def test_sources_are_read_from_the_toml(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.toml",
        '[[sources]]\nkind = "lore"\n'
        'url = "http://127.0.0.1:9/linux-mm"\nlist = "linux-mm"\ninterval = 60\n'
        '[[sources]]\nkind = "pi-git"\nurl = "/srv/linux-mm"\n',
    )
    got = load_settings(config, env={}).sources
    assert got == [
        SourceSettings("lore", "http://127.0.0.1:9/linux-mm", "linux-mm", 60),
        SourceSettings("pi-git", "/srv/linux-mm"),
    ]
    bad = write_config(tmp_path / "bad.toml", '[[sources]]\nkind = "nntp"\nurl = "x"\n')
    with pytest.raises(ConfigError, match="kind = 'nntp': expected one of lore, pi-git"):
        load_settings(bad, env={})


@pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or "")
def test_run_polls_every_source_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    pi = PublicInbox(tmp_path / "pi")
    tree = make_tree(tmp_path / "tree")
    raws = make_series(tree, SeriesSpec(title="mm/vmscan: polled by the service", patches=2))
    (tmp_path / "a.mbox").write_bytes(as_mbox(raws))
    pi.import_mbox(tmp_path / "a.mbox", index=False)
    dead = f"http://127.0.0.1:{free_port()}/linux-mm"  # nothing listens there
    config = write_config(
        tmp_path / "config.toml",
        f'[[sources]]\nkind = "pi-git"\nurl = "{pi.inbox}"\nlist = "linux-mm"\ninterval = 1\n'
        f'[[sources]]\nkind = "lore"\nurl = "{dead}"\nlist = "linux-mm"\ninterval = 3600\n',
    )
    lorelab = LiveLorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    env = {"LORELAB_CONFIG": str(config)}
    # The dead source is retried with backoff (about 15 s) before its first error is recorded.
    proc = lorelab.popen("run", LORELAB_CONFIG=str(config))
    deadline = time.monotonic() + 120
    polls = 0
    while time.monotonic() < deadline and polls < 2:
        time.sleep(0.2)
        try:
            with sqlite3.connect(tmp_path / "lorelab.db") as conn:
                polls = (
                    conn.execute(
                        "SELECT count(*) FROM ingest_cursors WHERE kind = 'lore' "
                        "AND last_error IS NOT NULL"
                    ).fetchone()[0]
                    + 1
                )
        except sqlite3.OperationalError:
            pass
    proc.send_signal(signal.SIGTERM)
    try:
        _, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    log = stderr.decode(errors="replace")
    assert proc.returncode == 0, log
    assert "SIGTERM received" in log and log.rstrip().endswith("stopped")
    assert f"pi-git {pi.inbox}: stored {len(raws)}" in log
    assert f"lore {dead}: poll failed, will retry" in log

    rows = {row["kind"]: row for row in lorelab.json("sources", **env)}
    assert rows["pi-git"]["messages_ingested"] == len(raws)
    assert rows["pi-git"]["last_error"] is None and rows["pi-git"]["last_poll"]
    assert rows["pi-git"]["position"]["epoch/0"]
    assert "ConnectionError" in rows["lore"]["last_error"]
    assert rows["lore"]["messages_ingested"] == 0 and rows["lore"]["interval"] == 3600
    table = lorelab.run("sources", **env).stdout.decode()
    assert "pi-git" in table and "never" not in table


@pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or "")
def test_run_picks_up_a_newly_delivered_series_within_one_interval(tmp_path: Path) -> None:
    pi = PublicInbox(tmp_path / "pi")
    tree = make_tree(tmp_path / "tree")
    earlier = make_series(tree, SeriesSpec(title="mm: already on the list", patches=1, cover=False))
    (tmp_path / "a.mbox").write_bytes(as_mbox(earlier))
    pi.import_mbox(tmp_path / "a.mbox")
    pi.start()
    interval = 2
    config = write_config(
        tmp_path / "config.toml",
        f'[[sources]]\nkind = "lore"\nurl = "{pi.base_url}"\nlist = "linux-mm"\n'
        f"interval = {interval}\n",
    )
    lorelab = LiveLorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    env = {"LORELAB_CONFIG": str(config)}
    proc = lorelab.popen("run", **env)
    db = tmp_path / "lorelab.db"

    def stored_at(msgid: str) -> dt.datetime | None:
        # Read straight from SQLite: a CLI call per check would add its own start-up to the wait.
        try:
            with sqlite3.connect(db) as conn:
                row = conn.execute(
                    "SELECT ingested_at FROM messages WHERE msgid = ?", (msgid,)
                ).fetchone()
        except sqlite3.OperationalError:
            return None  # the schema is not there yet
        return dt.datetime.fromisoformat(row[0]).replace(tzinfo=dt.UTC) if row else None

    title = "mm/vmscan: delivered while running"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and stored_at(msgid_of(earlier[0])) is None:
            time.sleep(0.2)
        new = make_series(tree, SeriesSpec(title=title, patches=2))
        for raw in new:
            pi.deliver(raw)
        delivered = dt.datetime.now(dt.UTC)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and stored_at(msgid_of(new[-1])) is None:
            time.sleep(0.2)
        arrived = stored_at(msgid_of(new[-1]))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        pi.stop()
    assert proc.returncode == 0
    assert arrived is not None, "the series delivered while running never arrived"
    # Stored by the next poll: one interval, plus that poll's own fetching and storing.
    waited = (arrived - delivered).total_seconds()
    assert waited < interval + 10, waited
    assert title in [s["title"] for s in lorelab.json("series", "list", **env)]
