"""One bad row does not stop a round of `lorelab run`: a run that cannot be sent to the workers
and a reply that cannot be delivered are each recorded on their row, and the same round
dispatches the other runs and delivers the other replies (on SQLite and PostgreSQL).
"""

from __future__ import annotations

import datetime as dt
import mailbox
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.config import load_settings
from bot.db.models import OutboxReply, Run, utcnow
from bot.db.session import Database
from bot.demo.simtree import batch_series_spec, make_sim_tree
from bot.demo.threads import Change, SeriesSpec, make_series
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from bot.runs.rounds import run_round

NEEDS_MAKE = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                                reason="make and gcc are needed to build the simulator tree")

INIT_CHANGE = Change("init/main.c", " * Usage: bzImage [operations per CPU]",
                     (" * Usage: bzImage [operations per simulated CPU]",),
                     "init: say which CPUs the usage means", "Clearer usage.")


def _reply(msgid: str, now: dt.datetime, lists: list) -> OutboxReply:
    raw = f"Message-ID: <{msgid}>\r\nSubject: Re: x\r\n\r\nx\r\n".encode()
    return OutboxReply(message_id=msgid, kind="command", in_reply_to="x@example.org",
                       subject="Re: x", author="ada@example.org", lists=lists,
                       recipients=["ada@example.org"], raw=raw, state="queued", attempts=0,
                       created_at=now, updated_at=now)


def _broken_reply(now: dt.datetime) -> OutboxReply:
    """A queued reply whose list is not an address (a row lorelab cannot read)."""
    return _reply("broken@lorelab.example.org", now, [None])


def test_a_broken_reply_is_recorded_and_the_next_one_is_delivered(
        tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(env={"LORELAB_DATABASE_URL": db_url})
    db = Database(db_url)
    with db.session() as session:
        session.add(_broken_reply(utcnow()))
        session.add(_reply("good@lorelab.example.org", utcnow(), ["linux-mm@kvack.org"]))
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path / "data"))

    done = run_round(db, settings, utcnow())

    with db.session() as session:
        states = dict(session.execute(sa.select(OutboxReply.message_id, OutboxReply.state)).all())
    assert states == {"broken@lorelab.example.org": "failed",
                      "good@lorelab.example.org": "sent"}
    assert len(done.sent) == 1
    delivered = [str(m["Message-ID"]).strip("<>")
                 for m in mailbox.Maildir(tmp_path / "data" / "outbox", create=False)]
    assert delivered == ["good@lorelab.example.org"]
    db.dispose()


@pytest.mark.slow  # a whole review (apply, builds, bench, reply) runs in the round
@NEEDS_MAKE
def test_a_run_that_cannot_be_sent_and_a_broken_reply_do_not_stop_the_round(
        tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = make_sim_tree(tmp_path / "linux")
    config = tmp_path / "config.toml"
    config.write_text(
        f'[database]\nurl = "{db_url}"\n\n[[trees]]\nname = "sim"\npath = "{tree}"\n\n'
        f'[build]\nwork_dir = "{tmp_path / "work"}"\nbase_config = "defconfig"\nfragments = []\n\n'
        '[[lab_hosts]]\nname = "here"\npairs_max = 4\npairs_min = 4\n\n'
        '[[suites]]\nname = "reclaim"\nwatched = ["mm/"]\nbenchmarks = ["reclaim-sim:ops=200000"]\n'
        '\n[[suites]]\nname = "init"\nwatched = ["init/"]\n'
        'benchmarks = ["reclaim-sim:ops=200000"]\n\n[plan]\nmax_age_days = 100000\n\n'
        # The round's follow-ups: tests/runs/test_follow_up_rounds.py.
        '[follow_ups]\nbisect = false\nalign = false\ncompare = false\nexperiment = false\n')
    settings = load_settings(config, env={})
    # The reclaim suite's runs name a lab host that is gone (removed from the config after they
    # were planned, say): they cannot be sent.
    settings.suites[0].lab_host = "gone"
    db = Database(db_url)
    messages = [*make_series(tree, batch_series_spec()),
                *make_series(tree, SeriesSpec(title=INIT_CHANGE.subject, patches=1,
                                              changes=(INIT_CHANGE,)))]
    ingest(db, [RawMail(m, f"t{i}") for i, m in enumerate(messages)],
           settings=settings.ingest, list_name="linux-mm")
    with db.session() as session:
        session.add(_broken_reply(utcnow()))
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path / "data"))  # the outbox maildir
    before = utcnow() - dt.timedelta(minutes=1)

    first = run_round(db, settings, before)
    again = run_round(db, settings, before)

    with db.session() as session:
        runs = {r.runner: r for r in session.scalars(sa.select(Run))}
        assert set(runs) == {"gone", None} and len(first.planned) == 2
        bad, good = runs["gone"], runs[None]
        assert first.dispatched == [good.id]
        assert good.state == "done" and [s.state for s in good.steps] == ["done"] * 5
        assert bad.state == "failed" and {s.state for s in bad.steps} == {"failed"}
        assert "no lab host 'gone'" in bad.steps[0].error
        replies = {r.message_id: r for r in session.scalars(sa.select(OutboxReply))}
        broken = replies.pop("broken@lorelab.example.org")
        assert broken.state == "failed" and "AttributeError" in broken.last_error
        (reply,) = replies.values()
        assert reply.state == "sent" and reply.kind == "benchmark"
    assert first.sent == [reply.id]
    assert again.dispatched == again.resent == again.sent == []
    delivered = [str(m["Message-ID"]).strip("<>")
                 for m in mailbox.Maildir(tmp_path / "data" / "outbox", create=False)]
    assert delivered == [reply.message_id]
    db.dispose()
