"""Rotating senders cannot flood a list (issue 16, item 10): command answers are limited per
thread and per series as well as per sender, and identical requests for the same series version
are collapsed into one run and one answer."""

from __future__ import annotations

import sqlalchemy as sa

from bot.config.sections import CommandSettings
from bot.db.models import CommandRequest
from tests.support.command_thread import ADA, Thread

# What the probe sent: three commands a mail, each mail from an address of its own.
FLOOD = "#lorelab test hackbench\n#lorelab retest\n#lorelab help"


def _flood(thread: Thread, senders: int, body: str, domain: str = "example.net") -> None:
    mails = [thread.reply(thread.v1[1], (f"Sender {i}", f"sender{i}@{domain}"), body)
             for i in range(senders)]
    thread.store(*mails)
    thread.handle(*mails)


def _states(thread: Thread) -> dict[str, int]:
    with thread.db.session() as session:
        rows = session.execute(sa.select(CommandRequest.state, sa.func.count())
                               .group_by(CommandRequest.state)).all()
    return {state: count for state, count in rows}


def test_thirty_allowed_senders_make_one_run_and_few_answers(db, tmp_path):
    thread = Thread(db, tmp_path, CommandSettings(allow_list=["@example.net"]))
    _flood(thread, 30, FLOOD)
    runs, answers, requests = thread.counts()
    assert (runs, requests) == (1, 90)
    # the first test and the first help are answered; the same asked again is not
    assert answers == 2
    assert _states(thread) == {"accepted": 1, "answered": 1, "collapsed": 88}


def test_thirty_strangers_on_one_thread_get_at_most_the_threads_answers(db, tmp_path):
    thread = Thread(db, tmp_path)  # nobody at example.net may ask for a test
    _flood(thread, 30, "#lorelab test hackbench")
    runs, answers, requests = thread.counts()
    assert (runs, requests) == (0, 30)
    assert answers == CommandSettings().thread_answers == 5
    with db.session() as session:
        reasons = list(session.scalars(sa.select(CommandRequest.reason)
                                       .order_by(CommandRequest.id)))
    assert all(r.startswith("Only the author") for r in reasons)
    assert _states(thread) == {"refused": 30}


def test_the_bound_is_configurable_and_the_author_is_still_heard(db, tmp_path):
    thread = Thread(db, tmp_path, CommandSettings(thread_answers=2))
    _flood(thread, 10, "#lorelab test hackbench")
    assert thread.counts()[1] == 2
    # past the bound, the author's command is done, though not answered
    _, [test] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    assert test.outcome == "queued" and len(test.run_ids) == 1 and test.outbox_id is None
    assert thread.counts()[:2] == (1, 2)


def test_answers_are_limited_per_series_across_its_threads(db, tmp_path):
    thread = Thread(db, tmp_path, CommandSettings(thread_answers=0, series_answers=3),
                    versions=2)
    _flood(thread, 6, "#lorelab test hackbench")
    mails = [thread.reply(thread.v2[1], (f"Other {i}", f"other{i}@example.net"),
                          "#lorelab test hackbench") for i in range(3)]
    thread.store(*mails)
    thread.handle(*mails)
    assert thread.counts()[1] == 3
