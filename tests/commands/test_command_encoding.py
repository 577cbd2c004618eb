"""Encoded mail cannot stop the commands of a round (issue 16, item 11): an encoded From, any
From, Reply-To or Subject composes an answer or is recorded with its reason; a quoted-printable
`=23lorelab stop` is a command like any other; one failing command is recorded on its row and
the others are handled."""

from __future__ import annotations

import email
import email.policy

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.db.models import CommandRequest, Message, OutboxReply
from bot.report.compose.command_reply import CommandAnswer, compose_command_reply
from bot.report.compose.from_db import parent_message, reply_options
from tests.support.command_thread import ADA, HANNES, Thread
from tests.support.dkim_signing import sign


def _replace_header(raw: bytes, name: bytes, value: bytes) -> bytes:
    head, _, body = raw.partition(b"\n\n")
    lines = [line for line in head.split(b"\n") if not line.lower().startswith(name.lower() + b":")]
    return b"\n".join([*lines, name + b": " + value]) + b"\n\n" + body


def test_an_encoded_from_is_answered_on_the_list_and_the_round_goes_on(db, tmp_path):
    thread = Thread(db, tmp_path)
    raw = thread.reply(thread.v1[1], ADA, "#lorelab test hackbench", signed_by=None)
    encoded = sign(_replace_header(raw, b"From", b"=?utf-8?q?ada=40example.org?="),
                   "example.org")
    after = thread.reply(thread.v1[1], ADA, "#lorelab test hackbench")
    thread.store(encoded, after)
    first, second = thread.handle(encoded, after)
    assert first.outcome == "unverified" and "no address" in first.detail
    answer = thread.answer(first.outbox_id)  # nobody to write to but the list
    assert answer["To"] == "linux-mm@kvack.org"
    assert second.outcome == "queued" and len(second.run_ids) == 1


def test_a_quoted_printable_command_is_a_command(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [test] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    raw = thread.reply(thread.v1[0], ADA, "=23lorelab stop", signed_by=None)
    raw = raw.replace(b"Content-Transfer-Encoding: 8bit", b"Content-Transfer-Encoding: "
                      b"quoted-printable")
    thread.store(sign(raw, "example.org"))
    [stop] = thread.handle(raw)
    assert stop.command == "stop" and stop.outcome == "stopped"
    assert thread.run(test.run_ids[0]).state == "cancelled"


def test_a_failing_command_is_recorded_and_the_next_mail_is_handled(db, tmp_path):
    thread = Thread(db, tmp_path)
    # A MAINTAINERS that cannot be read: asking who maintains the files fails.
    (thread.tree / "MAINTAINERS").unlink()
    (thread.tree / "MAINTAINERS").mkdir()
    failing = thread.reply(thread.v1[1], HANNES, "#lorelab test hackbench")
    fine = thread.reply(thread.v1[1], ADA, "#lorelab test hackbench")
    thread.store(failing, fine)
    first, second = thread.handle(failing, fine)
    assert first.outcome == "failed" and "MAINTAINERS" in first.detail
    assert second.outcome == "queued" and len(second.run_ids) == 1
    with db.session() as session:
        rows = session.execute(sa.select(CommandRequest.state, CommandRequest.reason)
                               .order_by(CommandRequest.id)).all()
    assert rows[0][0] == "failed" and "IsADirectoryError" in rows[0][1]
    assert thread.handle(failing, fine) == []  # recorded: not tried again and again


# Header values as hostile mail has them: encoded words, several addresses, groups, comments,
# quotes, brackets, non-ASCII, control characters.
_PIECES = st.sampled_from([
    "=?utf-8?q?ada=40example.org?=", "=?utf-8?b?w6Rkw6Q=?=", "=?bogus?x?zz?=", "ada@example.org",
    "mallory@example.net", ",", " ", "<", ">", "\"", "(", ")", ":", ";", "@", "\\", "äöü",
    "группа", "\x00", "\x07", "\t", "Ada", "<ada@example.org>", "undisclosed-recipients:;",
    "a@b@c", "@", "..@..", "x" * 80,
])
_VALUES = st.lists(_PIECES, max_size=8).map("".join)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sender=_VALUES, reply_to=_VALUES, subject=_VALUES)
def test_no_from_reply_to_or_subject_stops_composition(db, tmp_path_factory, sender, reply_to,
                                                      subject):
    thread = _fuzz_thread(db, tmp_path_factory)
    raw = thread.reply(thread.v1[1], ADA, "#lorelab help", signed_by=None)
    for name, value in ((b"From", sender), (b"Reply-To", reply_to), (b"Subject", subject)):
        raw = _replace_header(raw, name, value.encode("utf-8"))
    thread.store(raw)
    outcomes = thread.handle(raw)
    assert [o.outcome for o in outcomes if o.outcome == "failed"] == []
    with db.session() as session:
        # every mail composes an answer, whether or not the handler sends one
        message = session.scalar(sa.select(Message).order_by(Message.id.desc()).limit(1))
        reply = compose_command_reply(
            CommandAnswer(parent=parent_message(message), command="#lorelab help",
                          outcome="help"), reply_options(thread.settings.report))
        parsed = email.message_from_bytes(reply.as_bytes(), policy=email.policy.default)
        assert parsed["To"] and reply.recipients
        for row in session.scalars(sa.select(OutboxReply)):
            assert email.message_from_bytes(row.raw, policy=email.policy.default)["To"]


_THREADS: dict[int, Thread] = {}


def _fuzz_thread(db, tmp_path_factory) -> Thread:
    """One thread per database for all the examples (a series made with git takes a while)."""
    if id(db) not in _THREADS:
        _THREADS.clear()
        _THREADS[id(db)] = Thread(db, tmp_path_factory.mktemp("fuzz"))
    return _THREADS[id(db)]
