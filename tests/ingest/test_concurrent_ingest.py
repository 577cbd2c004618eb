"""Ingest processes writing one database at once store what one process storing all of their
mail would (`bot.ingest.serial`), on SQLite and PostgreSQL.

A list server's delivery agent stores mail while a maintainer backfills an archive, or two
backfills of overlapping mboxes run side by side. Before each batch took the ingest lock, three
such `lorelab ingest mbox` commands ended in tracebacks (deadlocks on the threads' unique keys on
PostgreSQL, "database is locked" on SQLite) or stored other series than one process did.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa

import bot.db.session
import bot.ingest.serial
from bot.config import IngestSettings
from bot.db.session import Database
from bot.demo.threads import as_mbox
from bot.ingest.serial import INGEST_LOCK_KEY, ingest_transaction
from tests.cli import Lorelab
from tests.series.mailing import emptied, state, store, thread_partition
from tests.support.waiting import wait_for

ON_POSTGRESQL = pytest.mark.parametrize(
    "db_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True)
ON_SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
START = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
ADA = "Ada Reclaim <ada@example.org>"
RITA = "Rita Reviewer <rita@example.org>"


def _mail(msgid: str, author: str, subject: str, minutes: int, body: str,
          parents: Sequence[str] = ()) -> bytes:
    head = [f"From: {author}", "To: linux-mm@kvack.org", f"Subject: {subject}",
            f"Date: {email.utils.format_datetime(START + dt.timedelta(minutes=minutes))}",
            f"Message-ID: <{msgid}>"]
    if parents:
        head += [f"In-Reply-To: <{parents[-1]}>",
                 "References: " + " ".join(f"<{p}>" for p in parents)]
    return ("\n".join(head) + "\n\n" + body).encode()


def _patch_body(series: int, index: int, version: int) -> str:
    return (f"Batch the LRU updates of step {index}.\n\nSigned-off-by: {ADA}\n---\n"
            " mm/vmscan.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
            "diff --git a/mm/vmscan.c b/mm/vmscan.c\nindex 1111111..2222222 100644\n"
            f"--- a/mm/vmscan.c\n+++ b/mm/vmscan.c\n@@ -{index},3 +{index},3 @@\n"
            f" a\n-old {series} {index}\n+new {series} {index} v{version}\n d\n")


def traffic(series: int = 24) -> list[bytes]:
    """Series in two versions, v2 in reply to v1's cover letter in every other one, each patch
    reviewed with a trailer, and a discussion under each cover letter: threads that grow in
    every batch, whichever process stores it."""
    mails: list[bytes] = []
    for s in range(series):
        title = f"mm/vmscan: batch the LRU updates, part {s}"
        base = s * 100
        v1_cover = f"s{s}-v1-0@example.org"
        for version in (1, 2):
            cover = f"s{s}-v{version}-0@example.org"
            above = [v1_cover] if version == 2 and s % 2 else []
            tag = "PATCH" if version == 1 else "PATCH v2"
            mails.append(_mail(cover, ADA, f"[{tag} 0/3] {title}", base + 10 * version,
                               "This series batches the LRU updates.\n", above))
            for i in (1, 2, 3):
                patch = f"s{s}-v{version}-{i}@example.org"
                mails.append(_mail(patch, ADA, f"[{tag} {i}/3] mm/vmscan: step {i} of {s}",
                                   base + 10 * version + i, _patch_body(s, i, version),
                                   [*above, cover]))
                mails.append(_mail(f"r-{patch}", RITA, f"Re: [{tag} {i}/3] step {i}",
                                   base + 10 * version + i + 5,
                                   f"Looks right.\n\nReviewed-by: {RITA}\n",
                                   [*above, cover, patch]))
        chain = [v1_cover]
        for d in range(6):
            msgid = f"s{s}-talk-{d}@example.org"
            mails.append(_mail(msgid, RITA if d % 2 else ADA, f"Re: [PATCH 0/3] {title}",
                               base + 40 + d, "What about memcg reclaim?\n", chain))
            chain = [*chain, msgid]
    return mails


def in_parallel(lorelab: Lorelab, mboxes: list[Path]) -> None:
    """`lorelab ingest mbox` of each at once, in small batches; each must exit 0."""
    env = {"LORELAB_INGEST_BATCH_SIZE": "4", "LORELAB_INGEST_PARSE_WORKERS": "0"}
    with ThreadPoolExecutor(len(mboxes)) as pool:
        done = [pool.submit(lorelab.run_process, "ingest", "mbox", str(m), "--json",
                            check=False, **env) for m in mboxes]
        runs = [f.result() for f in done]
    for run in runs:
        assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]


def test_overlapping_ingests_at_once_store_what_one_would(db: Database, db_url: str,
                                                          tmp_path: Path) -> None:
    mails = traffic()
    store(db, mails, IngestSettings(batch_size=len(mails), parse_workers=0))
    alone, threads = state(db), thread_partition(db)
    assert len(alone["versions"]) == 48 and alone["trailers"]
    emptied(db)
    # Every message in two of them, in different orders; the reversed one meets the others.
    halves = [tmp_path / "even.mbox", tmp_path / "odd.mbox", tmp_path / "reversed.mbox"]
    for path, part in zip(halves, (mails[0::2], mails[1::2], mails[::-1]), strict=True):
        path.write_bytes(as_mbox(part))
    in_parallel(Lorelab(tmp_path, db_url), halves)
    assert thread_partition(db) == threads
    together = state(db)
    for key in alone:
        assert together[key] == alone[key], (key, together[key] ^ alone[key])


def _waiting_for_the_lock(db: Database) -> bool:
    with db.engine.connect() as conn:
        return bool(conn.scalar(sa.text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND objid = :low"), {"low": INGEST_LOCK_KEY & 0xFFFFFFFF}))


@ON_POSTGRESQL
def test_a_batch_waits_for_another_process_batch(db: Database, db_url: str,
                                                 tmp_path: Path) -> None:
    mails = traffic(series=2)
    mbox = tmp_path / "list.mbox"
    mbox.write_bytes(as_mbox(mails))
    lorelab = Lorelab(tmp_path, db_url)
    with ThreadPoolExecutor(1) as pool:
        with ingest_transaction(db):
            ingest = pool.submit(lorelab.run_process, "ingest", "mbox", str(mbox), "--json")
            wait_for(lambda: _waiting_for_the_lock(db) or ingest.done(), "a wait for the lock")
            assert not ingest.done()  # it waits for this transaction to end
        assert json.loads(ingest.result().stdout)["stored"] == len(mails)


def test_a_lock_not_given_in_time_ends_the_command_with_75_and_keeps_what_is_stored(
        db: Database, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that keeps the lock (an `ingest mbox` stopped with Ctrl-Z in a batch) holds the
    others up for `LOCK_WAIT_SECONDS` (30), then they end as when the database is away."""
    mails = traffic(series=2)
    mbox = tmp_path / "list.mbox"
    mbox.write_bytes(as_mbox(mails))
    lorelab = Lorelab(tmp_path, db_url)  # in this process: the wait is cut to 0.2 s here
    monkeypatch.setattr(bot.db.session, "LOCK_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(bot.ingest.serial, "LOCK_WAIT_SECONDS", 0.2)
    with ingest_transaction(db):
        failed = lorelab.run("ingest", "mbox", str(mbox), check=False)
    assert failed.returncode == 75
    said = failed.stderr.decode()
    assert "the database could not store a batch" in said and "run the command again" in said
    assert "0 messages read before it are in the database" in said
    assert "Traceback" not in said
    assert lorelab.json("ingest", "mbox", str(mbox))["stored"] == len(mails)


@ON_SQLITE
def test_a_batch_takes_sqlite_write_lock_before_it_reads(db: Database, db_url: str) -> None:
    """A SQLite transaction that reads first cannot take the write lock after another writer's
    commit; a batch takes it first, and another writer is kept out until it ends."""
    other = sa.create_engine(db_url, connect_args={"timeout": 0})
    try:
        with (ingest_transaction(db), other.connect() as conn,
              pytest.raises(sa.exc.OperationalError, match="locked")):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        with other.connect() as conn:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            conn.exec_driver_sql("COMMIT")
    finally:
        other.dispose()
