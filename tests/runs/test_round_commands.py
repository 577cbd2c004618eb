"""A round of `lorelab run` reads the commands in every reply stored since the previous round:
one whose client dropped the "Re:", and one that another process stamped before the round
began but committed while it ran (on SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
import sqlalchemy as sa

from bot.db.models import CommandRequest, Message, utcnow
from bot.db.session import Database
from bot.demo.threads import make_reply
from bot.mail import parse_message
from bot.runs.rounds import COMMIT_LAG, run_round
from tests.support.command_thread import ADA, HANNES, Thread
from tests.support.dkim_signing import sign


def _requests(db: Database) -> list[tuple[str, str]]:
    with db.session() as session:
        return [tuple(row) for row in session.execute(
            sa.select(CommandRequest.message_id, CommandRequest.command))]


@pytest.fixture
def thread(db: Database, tmp_path, monkeypatch) -> Thread:
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path / "data"))  # the outbox maildir
    thread = Thread(db, tmp_path)
    thread.settings.plan.auto = False  # no review runs: only the commands are under test
    return thread


@pytest.mark.parametrize("subject", [
    b"[PATCH 1/2] mm/vmscan: account reclaimed folios in shrink_inactive_list()",  # the patch's
    b"reclaim in larger batches",  # one of the sender's own
])
def test_a_round_reads_a_command_in_a_reply_without_re(
        db: Database, thread: Thread, subject: bytes) -> None:
    since = utcnow()
    raw = make_reply(thread.v1[1], author=HANNES, date=utcnow(), body="#lorelab help\n",
                     trailers=[f"Acked-by: {HANNES[0]} <{HANNES[1]}>"])
    head, body = raw.split(b"\n\n", 1)
    head = re.sub(rb"(?m)^Subject: .*$", lambda _: b"Subject: " + subject, head)
    raw = sign(head + b"\n\n" + body, "cmpxchg.org")
    assert not parse_message(raw).subject.reply
    thread.store(raw)

    done = run_round(db, thread.settings, since)

    assert done.commands == 1
    assert _requests(db) == [(parse_message(raw).msgid, "help")]
    assert run_round(db, thread.settings, since).commands == 0  # acted on once


def test_a_round_reads_mail_committed_after_the_previous_round_began(
        db: Database, thread: Thread) -> None:
    raw = sign(make_reply(thread.v1[1], author=ADA, body="#lorelab help\n", date=utcnow()),
               "example.org")
    thread.store(raw)
    msgid = parse_message(raw).msgid
    previous_round = utcnow()
    # The batch was stamped before the previous round began and committed while it ran: that
    # round did not see it.
    with db.session() as session:
        session.execute(sa.update(Message).where(Message.msgid == msgid).values(
            ingested_at=previous_round - COMMIT_LAG / 2))

    done = run_round(db, thread.settings, previous_round)

    assert done.commands == 1
    assert _requests(db) == [(msgid, "help")]
    # Mail stored longer before than a batch takes was read by an earlier round.
    with db.session() as session:
        session.execute(sa.delete(CommandRequest))
        session.execute(sa.update(Message).where(Message.msgid == msgid).values(
            ingested_at=previous_round - COMMIT_LAG - dt.timedelta(minutes=1)))
    assert run_round(db, thread.settings, previous_round).commands == 0
