"""Following a real public-inbox server: the lore HTTP feed and the git mirror, as users run
them (`lorelab ingest lore|pi-git` in a subprocess), including crashes and outages."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.demo.threads import SeriesSpec, as_mbox, make_reply, make_series, make_tree
from bot.ingest.epoch_slice import msgid_of
from tests.support.pi_server import LiveLorelab, PublicInbox, missing_reason
from tests.support.spools import remove_spools_of

pytestmark = [
    pytest.mark.slow,  # end to end: CI, not the fast loop
    pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or ""),
]

def mails(count: int, tree: Path, title: str) -> list[bytes]:
    """`count` list messages: a 3-patch series with a cover letter, then review replies."""
    series = make_series(tree, SeriesSpec(title=title, patches=3))
    out = list(series)
    n = 0
    while len(out) < count:
        n += 1
        out.append(make_reply(series[1 + n % 3], author=("Rita Reviewer", "rita@example.org"),
                              body=f"Comment number {n} on {title}."))
    return out[:count]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


@pytest.fixture
def pi(tmp_path: Path) -> Iterator[PublicInbox]:
    server = PublicInbox(tmp_path / "pi")
    yield server
    server.stop()


@pytest.fixture
def lorelab(tmp_path: Path) -> LiveLorelab:
    return LiveLorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")


def db_path(lorelab: LiveLorelab) -> str:
    return lorelab.env["LORELAB_DATABASE_URL"].split("///", 1)[1]


def stored_msgids(lorelab: LiveLorelab) -> list[str]:
    with sqlite3.connect(db_path(lorelab)) as conn:
        return [row[0] for row in conn.execute("SELECT msgid FROM messages")]


def cursor(lorelab: LiveLorelab, kind: str) -> dict:
    rows = [r for r in lorelab.json("sources") if r["kind"] == kind]
    assert len(rows) == 1, rows
    return rows[0]


def ids(raws: list[bytes]) -> set[str]:
    return {msgid_of(raw) for raw in raws}


def import_(pi: PublicInbox, raws: list[bytes], tmp_path: Path) -> None:
    mbox = tmp_path / f"import-{time.monotonic_ns()}.mbox"
    mbox.write_bytes(as_mbox(raws))
    pi.import_mbox(mbox)


def test_lore_poll_stores_each_message_once_and_then_only_new_ones(
    pi: PublicInbox, lorelab: LiveLorelab, tree: Path, tmp_path: Path
) -> None:
    first = mails(6, tree, "mm/vmscan: first batch")
    import_(pi, first, tmp_path)
    pi.start()
    got = lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    assert (got["stored"], got["quarantined"]) == (6, 0)
    assert set(stored_msgids(lorelab)) == ids(first)

    later = mails(5, tree, "mm/vmscan: delivered later")[3:]  # two replies
    for raw in later:
        pi.deliver(raw)
    got = lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    assert (got["stored"], got["duplicates"]) == (2, 0)  # only the new ones were fetched
    assert set(stored_msgids(lorelab)) == ids(first) | ids(later)
    row = cursor(lorelab, "lore")
    assert row["messages_ingested"] == 8 and row["last_error"] is None and row["last_poll"]


def test_lore_backfills_by_search_after_an_outage_longer_than_the_feed(
    pi: PublicInbox, lorelab: LiveLorelab, tree: Path, tmp_path: Path
) -> None:
    first = mails(4, tree, "mm/vmscan: before the outage")
    import_(pi, first, tmp_path)
    pi.start()
    lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    during = mails(40, tree, "mm/vmscan: during the outage")  # more than new.atom shows
    import_(pi, during, tmp_path)
    got = lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    assert got["stored"] == 40
    assert sorted(stored_msgids(lorelab)) == sorted(ids(first) | ids(during))


def _kill_when_stored(proc: subprocess.Popen[bytes], lorelab: LiveLorelab, at_least: int) -> None:
    """SIGKILL the poller as soon as it has committed something (mid-poll: batches are small)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if len(stored_msgids(lorelab)) >= at_least:
                break
        except sqlite3.OperationalError:
            pass  # the schema is not there yet
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    remove_spools_of(proc.pid)  # the batches it had in flight


def test_lore_poller_killed_mid_poll_loses_and_duplicates_nothing(
    pi: PublicInbox, lorelab: LiveLorelab, tree: Path, tmp_path: Path
) -> None:
    raws = mails(24, tree, "mm/vmscan: killed poller")
    import_(pi, raws, tmp_path)
    pi.start()
    proc = lorelab.popen("ingest", "lore", pi.base_url, "--list", "linux-mm",
                         LORELAB_INGEST_BATCH_SIZE="3")
    _kill_when_stored(proc, lorelab, 1)
    assert proc.returncode == -signal.SIGKILL
    assert len(stored_msgids(lorelab)) < 24  # it really died mid-poll
    more = mails(6, tree, "mm/vmscan: after the restart")
    for raw in more[4:]:
        pi.deliver(raw)
    lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    stored = stored_msgids(lorelab)
    assert sorted(stored) == sorted(ids(raws) | ids(more[4:]))
    assert cursor(lorelab, "lore")["messages_ingested"] == len(stored)


def test_git_mirror_over_http_walks_new_commits_and_records_removals(
    pi: PublicInbox, lorelab: LiveLorelab, tree: Path, tmp_path: Path
) -> None:
    first = mails(7, tree, "mm/vmscan: git mirror")
    import_(pi, first, tmp_path)
    pi.start()
    url = pi.base_url
    got = lorelab.json("ingest", "pi-git", url, "--list", "linux-mm")
    assert (got["stored"], got["removals"]) == (7, 0)

    later = mails(9, tree, "mm/vmscan: git mirror later")[7:]
    for raw in later:
        pi.deliver(raw)
    pi.remove(first[4])
    got = lorelab.json("ingest", "pi-git", url, "--list", "linux-mm")
    assert (got["stored"], got["duplicates"], got["removals"]) == (2, 0, 1)
    with sqlite3.connect(db_path(lorelab)) as conn:
        removed = conn.execute("SELECT msgid, list_name FROM message_removals").fetchall()
    assert removed == [(msgid_of(first[4]), "linux-mm")]
    assert msgid_of(first[4]) in stored_msgids(lorelab)  # kept, not deleted silently
    again = lorelab.json("ingest", "pi-git", url, "--list", "linux-mm")
    assert (again["stored"], again["removals"], again["read"]) == (0, 0, 0)
    row = cursor(lorelab, "pi-git")
    assert row["messages_ingested"] == 9 and set(row["position"]) == {"epoch/0"}


def test_git_walk_killed_mid_import_loses_and_duplicates_nothing(
    pi: PublicInbox, lorelab: LiveLorelab, tree: Path, tmp_path: Path
) -> None:
    raws = mails(60, tree, "mm/vmscan: killed git walk")
    import_(pi, raws, tmp_path)
    proc = lorelab.popen("ingest", "pi-git", str(pi.inbox), "--list", "linux-mm",
                         LORELAB_INGEST_BATCH_SIZE="2", LORELAB_INGEST_PARSE_WORKERS="0")
    _kill_when_stored(proc, lorelab, 1)
    assert len(stored_msgids(lorelab)) < 60
    got = lorelab.json("ingest", "pi-git", str(pi.inbox), "--list", "linux-mm")
    assert got["duplicates"] == 0  # the cursor covered exactly what was committed
    assert sorted(stored_msgids(lorelab)) == sorted(ids(raws))
    assert cursor(lorelab, "pi-git")["messages_ingested"] == 60


def test_git_walk_survives_rewritten_history(
    pi: PublicInbox, lorelab: LiveLorelab, tree: Path, tmp_path: Path
) -> None:
    raws = mails(5, tree, "mm/vmscan: purged later")
    import_(pi, raws, tmp_path)
    lorelab.json("ingest", "pi-git", str(pi.inbox), "--list", "linux-mm")
    proc = subprocess.run(["public-inbox-purge", str(pi.inbox)], input=raws[3], env=pi.env,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    pi.deliver(mails(6, tree, "mm/vmscan: after the purge")[5])
    got = lorelab.run("ingest", "pi-git", str(pi.inbox), "--list", "linux-mm", "--json")
    summary = json.loads(got.stdout)
    assert "rewritten" in got.stderr.decode()
    assert summary["stored"] == 1 and summary["duplicates"] == 4  # walked again, nothing twice
