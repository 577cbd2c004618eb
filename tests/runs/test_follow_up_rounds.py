"""A round of `lorelab run` sends the follow-ups a review's report step queued, once, and starts
a compare for a reviewer's inline diff that arrives after the review."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from bot.config import DatabaseSettings
from bot.db.models import Run, RunStep, SeriesVersion
from bot.mail import parse_message
from bot.runs.follow_ups import start_follow_ups
from bot.runs.rounds import run_round
from tests.support.command_thread import RITA, Thread
from tests.support.finished_review import DIFF, children, finish_review


def test_a_round_sends_queued_follow_ups_once_and_compares_a_late_alternative(
        db, tmp_path, monkeypatch):
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path / "data"))  # the outbox maildir
    thread = Thread(db, tmp_path)
    thread.settings.plan.auto = False  # the review below is the only one
    thread.settings.database = DatabaseSettings(url=db.url)  # where eager tasks record steps
    with db.session() as session:
        version_id = session.scalars(sa.select(SeriesVersion.id)).one()
    review = finish_review(db, version_id)
    with db.session() as session:
        queued = start_follow_ups(session, thread.settings, session.get(Run, review))
    assert len(queued) == 2  # bisect and align
    since = dt.datetime.now(dt.UTC)
    first = run_round(db, thread.settings, since)
    assert first.follow_ups == queued and first.dispatched == []
    with db.session() as session:
        unsent = session.scalars(sa.select(RunStep.id).where(
            RunStep.run_id.in_(queued), RunStep.sent_at.is_(None))).all()
    assert unsent == []  # every step went to the workers (eager: ran here)
    assert run_round(db, thread.settings, since).follow_ups == []
    # Rita's diff comes after the review: the next round compares it, and only once.
    late = thread.reply(thread.v1[1], RITA, "How about this instead?", diff=DIFF)
    thread.store(late)
    third = run_round(db, thread.settings, since)
    [compare] = [r for r in children(db, review) if r.kind == "compare"]
    assert third.follow_ups == [compare.id]
    assert compare.options == {"alternative": parse_message(late).msgid}
    assert run_round(db, thread.settings, since).follow_ups == []
    assert len(children(db, review)) == 3
