"""Migration 0013 on a database with threads in it: the ids stored mail names but no stored
message has are recorded with their threads, so mail arriving after the upgrade joins the
threads that named it, as mail stored after it does."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import Message, UnseenMessage
from bot.db.session import Database, downgrade, upgrade
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from tests.series.mailing import discussion_mail, thread_partition

pytestmark = pytest.mark.empty_database

WHEN = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)


def _store(db: Database, mails: list[bytes]) -> None:
    ingest(db, [RawMail(m, "test") for m in mails],
           settings=IngestSettings(batch_size=50, parse_workers=0), list_name="linux-mm")


def test_unseen_ids_are_filled_and_late_mail_joins_their_threads(db_url: str) -> None:
    engine = sa.create_engine(db_url)
    upgrade(engine)
    db = Database(db_url)
    # c answers b, which has not come, under a root of its own; f names e and a root e lacks
    _store(db, [discussion_mail("c@x", WHEN, "b@x", "elsewhere@x b@x"),
                discussion_mail("e@x", WHEN, "gone1@x", "gone1@x"),
                discussion_mail("f@x", WHEN, "e@x", "gone2@x e@x")])
    # The database as lorelab before 0013 left it: nothing recorded of the ids not stored.
    downgrade(engine, "0012")
    upgrade(engine)
    with engine.connect() as conn:
        unseen = dict(conn.execute(sa.select(UnseenMessage.msgid, UnseenMessage.thread_id)).all())
        thread_of = dict(conn.execute(sa.select(Message.msgid, Message.thread_id)).all())
    assert unseen == {"elsewhere@x": thread_of["c@x"], "b@x": thread_of["c@x"],
                      "gone1@x": thread_of["e@x"], "gone2@x": thread_of["e@x"]}

    # b comes, in reply to a message c does not name; g names only f's root
    _store(db, [discussion_mail("b@x", WHEN, "a@x", "a@x"),
                discussion_mail("g@x", WHEN, "gone3@x", "gone3@x gone2@x")])
    assert thread_partition(db) == {frozenset({"b@x", "c@x"}),
                                    frozenset({"e@x", "f@x", "g@x"})}
    with engine.connect() as conn:
        assert "b@x" not in set(conn.execute(sa.select(UnseenMessage.msgid)).scalars())
    db.dispose()
    engine.dispose()
