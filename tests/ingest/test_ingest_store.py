"""Storing mail, on SQLite and PostgreSQL: what is stored does not depend on the backend's insert
path or on how the mail was split into batches."""

from __future__ import annotations

import datetime as dt

import orjson
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import Message, Thread
from bot.db.session import Database, ensure_schema
from bot.ingest.prepare import prepare_mail
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest


def mail(msgid: str, subject: str, parent: str | None = None, body: str = "Hello.\n") -> bytes:
    head = [
        "From: Ada Author <ada@example.org>",
        "To: linux-mm@kvack.org",
        f"Subject: {subject}",
        "Date: Tue, 02 Jan 2024 10:00:00 +0100",
        f"Message-ID: <{msgid}>",
    ]
    if parent:
        head += [f"In-Reply-To: <{parent}>", f"References: <{parent}>"]
    return ("\n".join(head) + "\n\n" + body).encode()


PATCH_BODY = """\
The counter is updated under the lock.

Reviewed-by: Rita Reviewer <rita@example.org>
Signed-off-by: Ada Author <ada@example.org>
---
 mm/vmscan.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/mm/vmscan.c b/mm/vmscan.c
--- a/mm/vmscan.c
+++ b/mm/vmscan.c
@@ -1,3 +1,3 @@
 int a;
-int b;
+int c;
 int d;
--
2.43.0
"""


def test_a_stored_message_reads_back_as_parsed(db: Database) -> None:
    raw = mail("p1@example.org", "[PATCH v2 1/1] mm/vmscan: fix the counter", body=PATCH_BODY)
    expected = prepare_mail(RawMail(raw, "test#0"), IngestSettings())
    ingest(db, [RawMail(raw, "test#0")], settings=IngestSettings(), list_name="linux-mm")
    with db.session() as session:
        stored = session.scalars(sa.select(Message)).one()
        assert stored.date == dt.datetime(2024, 1, 2, 9, 0, tzinfo=dt.UTC)
        assert stored.ingested_at.tzinfo is not None
        assert stored.raw == raw
        for key in ("msgid", "kind", "version", "version_explicit", "counter", "total", "rfc",
                    "reply", "insertions", "deletions", "title", "raw_size"):  # fmt: skip
            assert getattr(stored, key) == getattr(expected, key), key
        for key in ("references", "prefixes", "files", "trailers", "problems"):  # JSON text
            assert getattr(stored, key) == orjson.loads(getattr(expected, key)), key
        assert stored.trailers[0] == ["Reviewed-by", "Rita Reviewer <rita@example.org>"]
        assert stored.thread_id is not None


def threads_of(db: Database) -> tuple[list[str], dict[str, str]]:
    with db.session() as session:
        roots = sorted(session.scalars(sa.select(Thread.root_msgid)))
        member_root = dict(
            session.execute(
                sa.select(Message.msgid, Thread.root_msgid).join(
                    Thread, Thread.id == Message.thread_id
                )
            ).all()
        )
    return roots, member_root


def test_threads_merged_within_a_batch_as_across_batches(db: Database, db_url: str) -> None:
    # b replies to a (not seen yet), c starts a thread, then a arrives as a reply to c: all
    # three are one thread, whether they come in one batch or one at a time.
    mails = [
        RawMail(mail("b@x", "Re: question", parent="a@x"), "t#1"),
        RawMail(mail("c@x", "question"), "t#2"),
        RawMail(mail("a@x", "Re: question", parent="c@x"), "t#3"),
        RawMail(mail("d@x", "unrelated"), "t#4"),
    ]
    ingest(db, mails, settings=IngestSettings(batch_size=100), list_name="linux-mm")
    in_one_batch = threads_of(db)
    other = Database(db_url.replace("lorelab.db", "other.db")) if "sqlite" in db_url else None
    if other is None:  # PostgreSQL: empty the tables and ingest again, one mail per batch
        with db.session() as session:
            session.execute(sa.text("TRUNCATE messages, threads RESTART IDENTITY CASCADE"))
        other = db
    ensure_schema(other.engine)
    ingest(other, mails, settings=IngestSettings(batch_size=1), list_name="linux-mm")
    one_by_one = threads_of(other)
    assert in_one_batch == one_by_one
    roots, member_root = in_one_batch
    assert roots == ["a@x", "d@x"]
    assert member_root == {"a@x": "a@x", "b@x": "a@x", "c@x": "a@x", "d@x": "d@x"}
