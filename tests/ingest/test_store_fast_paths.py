"""The storing process's short ways to the database, on SQLite and PostgreSQL: each stores and
finds what SQLAlchemy's general way does (issue 15)."""

from __future__ import annotations

import pickle
from types import SimpleNamespace
from typing import Any

import orjson
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import MailingList, Message, PackedMail, pack_mail
from bot.db.session import Database
from bot.db.value_lists import in_param, insert_tuples
from bot.ingest.prepare import MessageRow, prepare_batch, prepare_mail
from bot.ingest.sources import RawMail
from bot.ingest.store import _insert_messages
from bot.series.shared_ids import shared_ids
from tests.ingest.test_ingest_store import PATCH_BODY
from tests.support.statements import statements

PATCH = ("""\
From: =?utf-8?q?J=C3=B6rg?= Author <jorg@example.org>
To: linux-mm@kvack.org
Subject: [PATCH RFC RESEND v2 1/3] mm/vmscan: fix the counter
Date: Tue, 02 Jan 2024 10:00:00 +0100
Message-ID: <p1@example.org>
In-Reply-To: <cover@example.org>
References: <cover@example.org>

""" + PATCH_BODY).encode()

# What each row stores, as the database holds it (booleans as SQLite's integers, times and JSON
# as their text): all but the id, the Message-ID and the time of storing.
STORED = [c.key for c in Message.__table__.c if c.key not in ("id", "msgid", "ingested_at")]


def stored_as_is(db: Database, msgid: str) -> tuple[Any, ...]:
    columns = ", ".join(f'"{key}"' for key in STORED)
    with db.engine.connect() as conn:
        row = conn.exec_driver_sql(f"SELECT {columns} FROM messages WHERE msgid = '{msgid}'").one()
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)


def test_the_short_message_insert_stores_what_sqlalchemys_insert_stores(db: Database) -> None:
    row = prepare_mail(RawMail(PATCH, "test#0"), IngestSettings())
    assert isinstance(row, MessageRow) and "msgid" in row and "reason" not in row
    assert row.rfc and row.resend and row.version_explicit and not row.reply
    assert row.trailers != "[]" and row.references != "[]" and row.problems == "[]"
    # The same row as SQLAlchemy's insert takes it: JSON as values, the mail marked compressed.
    json_columns = [c.key for c in Message.__table__.c if isinstance(c.type, sa.JSON)]
    general = {**row._asdict(), **{key: orjson.loads(getattr(row, key)) for key in json_columns},
               "msgid": "general@example.org", "raw": PackedMail(row.raw), "thread_id": None}
    with db.session() as session:
        session.connection().execute(sa.insert(Message.__table__), [general])
        short = [row._replace(msgid=f"short{n}@example.org") for n in range(3)]
        ids = _insert_messages(session, short, [None] * 3)
        stored_ids = dict(session.execute(sa.select(Message.msgid, Message.id)).all())
    assert list(ids) == [stored_ids[r.msgid] for r in short]
    assert stored_as_is(db, "short0@example.org") == stored_as_is(db, "general@example.org")


def test_a_mail_whose_values_say_reason_is_a_message_not_a_quarantine_record() -> None:
    """`prepare_batch` tells message rows from quarantine records by `"reason" in row`: for a
    message row that asks for a column, not a value."""
    raw = b"From: reason <reason@x>\nSubject: reason\nMessage-ID: <reason>\n\nreason\n"
    batch = prepare_batch([RawMail(raw, "test#0")], IngestSettings())
    assert batch.quarantine == [] and [row.msgid for row in batch.messages] == ["reason"]
    assert pickle.loads(pickle.dumps(batch.messages)) == batch.messages  # as workers hand it


def test_input_of_nothing_but_ascii_whitespace_is_quarantined_as_empty() -> None:
    """`prepare_mail` tells empty input without copying the mail: what `bytes.strip` strips."""
    for raw in (b"", b"\n", b" \t\r\n\x0b\x0c"):
        row = prepare_mail(RawMail(raw, "test#0"), IngestSettings())
        assert isinstance(row, dict) and row["reason"] == "empty input: no headers and no body"
    for raw in (b"\n\xa0\n", b"\x85", b" \x1c "):  # blank in Unicode, not in ASCII
        row = prepare_mail(RawMail(raw, "test#0"), IngestSettings())
        assert isinstance(row, dict) and row["reason"].startswith("not an RFC 822 message")


def test_a_message_row_holds_every_column_but_those_the_store_fills_in() -> None:
    filled_in = {"id", "thread_id", "ingested_at"}
    assert set(MessageRow._fields) == {c.key for c in Message.__table__.c} - filled_in
    assert MessageRow._fields[-1] == "date"  # the one value `_insert_messages` converts


def test_rows_inserted_as_tuples_are_found_by_a_list_parameter(db: Database) -> None:
    named = sa.select(MailingList.name).where(in_param(MailingList.name, "names"))
    with db.session() as session:
        conn = session.connection()
        insert_tuples(
            conn,
            MailingList.__table__,
            ("name", "address"),
            [("linux-mm", "linux-mm@kvack.org"), ("o'brien", "")],
        )
        insert_tuples(conn, MailingList.__table__, ("name", "address"), [])
        assert set(conn.scalars(named, {"names": ["o'brien", "linux-mm", "other"]})) == {
            "linux-mm",
            "o'brien",
        }
        assert list(conn.scalars(named, {"names": []})) == []
    with db.session() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(MailingList)) == 2


# sqlite_stat1 of `messages` as `Database.optimize` left it after the 20,000 messages of the
# ingest benchmark: every `claimed_msgid` NULL, so a value is taken to be found in 1,001 rows.
BENCHMARK_STATISTICS = [
    ("messages", "ix_messages_claimed_msgid", "17168 1001"),
    ("messages", "ix_messages_thread_id_kind", "18865 17 7"),
    ("messages", "ix_messages_date", "5886 1"),
    ("messages", "sqlite_autoindex_messages_1", "10614 1"),
]


def test_shared_ids_are_looked_up_in_the_index_however_few_mails_share_one(
    db: Database,
) -> None:
    """With those statistics SQLite scanned every message to look up a batch's ids (with any
    number of ids: more at every batch as the archive grew), unless told to take the index."""
    raw = pack_mail(b"Subject: filler\n\nfiller\n")
    with db.session() as session:
        session.execute(sa.insert(Message), [
            {"msgid": f"m{n}@example.org", "kind": "patch", "raw": raw, "raw_size": 24}
            for n in range(1200)
        ] + [{"msgid": f"copy{n}@copy.lorelab.invalid", "claimed_msgid": f"m{n}@example.org",
              "kind": "patch", "raw": raw, "raw_size": 24} for n in (7, 1100)])  # fmt: skip
    db.optimize()
    sqlite = db.engine.dialect.name == "sqlite"
    if sqlite:
        with db.engine.begin() as conn:
            conn.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE tbl = 'messages'")
            conn.exec_driver_sql("INSERT INTO sqlite_stat1 VALUES (?, ?, ?)", BENCHMARK_STATISTICS)
        db.engine.dispose()  # connections read the statistics when they open
    parts = [SimpleNamespace(msgid=f"m{n}@example.org", claimed_msgid=None) for n in range(600)]
    parts.append(
        SimpleNamespace(msgid="copy1100@copy.lorelab.invalid", claimed_msgid="m1100@example.org")
    )
    with statements() as seen, db.session() as session:
        found = shared_ids(session.connection(), {1: parts})
    assert found == {"m7@example.org", "m1100@example.org"}
    if not sqlite:
        return
    [(statement, params)] = [(s, p) for s, p in seen if "claimed_msgid" in s]
    with db.engine.connect() as conn:
        plan = [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params)]
    assert not [step for step in plan if step.startswith("SCAN messages")], plan


def test_a_batch_parsed_a_chunk_at_a_time_keeps_its_mail_in_order(monkeypatch: Any) -> None:
    """A worker parses a chunk of a batch's mail before it builds those rows (`PARSED_CHUNK_
    BYTES`): every mail still comes out once, in input order, whatever the chunks hold, and a
    mail that fails between others is quarantined without taking its neighbours along."""
    from bot.ingest import prepare

    mails = [RawMail(PATCH.replace(b"<p1@example.org>", f"<p{n}@example.org>".encode()),
                     f"test#{n}") for n in range(7)]
    mails[3] = RawMail(b"\n\n", "test#3")
    expected = [f"p{n}@example.org" for n in range(7) if n != 3]
    for chunk_bytes in (1, len(PATCH) * 2 + 1, 10 * len(PATCH)):
        monkeypatch.setattr(prepare, "PARSED_CHUNK_BYTES", chunk_bytes)
        batch = prepare_batch(mails, IngestSettings())
        assert [row.msgid for row in batch.messages] == expected
        assert [row["source"] for row in batch.quarantine] == ["test#3"]
