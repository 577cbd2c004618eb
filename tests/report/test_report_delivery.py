"""Delivery against a real SMTP server (aiosmtpd on a loopback port) and a real maildir.

What the server received is checked as a mail client would read it (threading headers, body,
envelope). The exactly-once tests run the sender in a subprocess and SIGKILL it while the server
holds the conversation: once before the end of the message (the reply is sent again, once) and
once after it (the reply waits in 'in-doubt' for `outbox retry`, and is never sent twice on its
own). Every test runs on SQLite and on a fresh PostgreSQL database.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import mailbox
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from bot.config.report import ReportSettings
from bot.db.models import Message, OutboxReply
from bot.db.session import Database
from bot.report.compose.benchmark_reply import compose_benchmark_reply
from bot.report.compose.inputs import BotIdentity, Person, ReplyOptions
from bot.report.compose.message import ComposedReply
from bot.report.compose.results_file import load_results
from bot.report.deliver import outbox
from bot.report.deliver.delivery import deliver_due, make_transport
from bot.report.deliver.maildir import MaildirTransport
from bot.report.deliver.smtp import SmtpTransport
from tests.support.paths import FIXTURES, REPO
from tests.support.smtp import Recorder, free_port

RESULTS = FIXTURES / "results" / "vmscan-bailout-take2.json"
LISTS = ["linux-mm@kvack.org", "linux-kernel@vger.kernel.org"]
NOW = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
STALL_LIMIT = 30  # seconds to wait for the subprocess to reach the server


@pytest.fixture
def smtp_server():  # noqa: ANN201
    recorder = Recorder()
    controller = Controller(recorder, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield recorder, controller.port
    recorder.release.set()
    controller.stop()


def smtp_settings(port: int, **changes: object) -> ReportSettings:
    settings = ReportSettings(
        mode="smtp",
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_security="plain",
        smtp_timeout=10,
        from_address="lorelab <lorelab@lorelab.example.org>",
        contact="Lab Admin <admin@lorelab.example.org>",
        allowed_lists=list(LISTS),
    )
    return dataclasses.replace(settings, **changes)


def compose(series_version_id: int = 1042, author: str | None = None) -> ComposedReply:
    ctx, date = load_results(json.loads(RESULTS.read_text()))
    ctx = dataclasses.replace(
        ctx, series=dataclasses.replace(ctx.series, series_version_id=series_version_id)
    )
    if author:
        ctx = dataclasses.replace(
            ctx, parent=dataclasses.replace(ctx.parent, sender=Person("Someone", author))
        )
    identity = BotIdentity(Person("lorelab", "lorelab@lorelab.example.org"), "lorelab.example.org")
    assert date is not None
    return compose_benchmark_reply(ctx, ReplyOptions(identity=identity, date=date))


def store(db: Database, reply: ComposedReply, settings: ReportSettings) -> int:
    with db.session() as session:
        row, _ = outbox.enqueue(session, reply, settings, now=NOW)
        session.flush()
        return row.id


def row_of(db: Database, reply_id: int) -> OutboxReply:
    with db.session() as session:
        row = session.get(OutboxReply, reply_id)
        assert row is not None
        session.expunge(row)
        return row


def test_reply_arrives_threaded_with_its_envelope_and_is_sent_once(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port)
    reply = compose()
    reply_id = store(db, reply, settings)

    run = deliver_due(db, SmtpTransport(settings), settings, now=NOW)
    assert run.sent == [reply_id]
    assert len(recorder.received) == 1
    got = recorder.received[0]
    assert got.mail_from == "lorelab@lorelab.example.org"
    assert got.rcpt_tos == list(reply.recipients)
    assert got.rcpt_tos[0] == "kosaki.motohiro@jp.fujitsu.com"
    message = got.message()
    assert (
        message["Subject"] == "Re: [PATCH] vmscan: improve reclaim throuput to bail out patch take2"
    )
    assert message["Message-ID"] == f"<{reply.message_id}>"
    assert message["In-Reply-To"] == "<20081204102342.2DF1.KOSAKI.MOTOHIRO@jp.fujitsu.com>"
    assert message["References"].split() == [
        "<20081128140405.3D0B.KOSAKI.MOTOHIRO@jp.fujitsu.com>",
        "<20081204102342.2DF1.KOSAKI.MOTOHIRO@jp.fujitsu.com>",
    ]
    assert "hackbench.time groups=130  -2.98% [-5.54%, -0.51%]" in message.get_content()
    row = row_of(db, reply_id)
    assert row.state == outbox.SENT and row.attempts == 1 and row.transport == "smtp"
    # Exactly the stored bytes went out.
    assert got.content.replace(b"\r\n", b"\n") == row.raw

    # Delivering again sends nothing; composing and storing the same reply again adds nothing.
    assert deliver_due(db, SmtpTransport(settings), settings, now=NOW).sent == []
    with db.session() as session:
        again, new = outbox.enqueue(session, compose(), settings)
        assert (again.id, new, again.state) == (reply_id, False, outbox.SENT)
    assert deliver_due(db, SmtpTransport(settings), settings, now=NOW).sent == []
    assert len(recorder.received) == 1


SENDER = """
import json, sys
from bot.db.session import Database
from bot.report.deliver.delivery import deliver_due
from bot.config.report import ReportSettings
from bot.report.deliver.smtp import SmtpTransport

args = json.loads(sys.argv[1])
settings = ReportSettings(**args["settings"])
run = deliver_due(Database(args["url"]), SmtpTransport(settings), settings)
print(json.dumps(run.__dict__))
"""


def kill_sender_mid_send(
    db: Database, recorder: Recorder, settings: ReportSettings, stall_at: str
) -> str:
    """Run the sender in a subprocess, SIGKILL it while the server stalls at `stall_at`; the
    reply's state at the moment of the kill."""
    recorder.stall_at = stall_at
    args = {"url": db.url, "settings": dataclasses.asdict(settings)}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    sender = subprocess.Popen(
        [sys.executable, "-c", SENDER, json.dumps(args)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert recorder.reached.wait(STALL_LIMIT), sender.stderr.read().decode()  # type: ignore[union-attr]
        with db.session() as session:
            state = session.scalar(sa.select(OutboxReply.state))
        os.kill(sender.pid, signal.SIGKILL)
    finally:
        sender.wait(timeout=STALL_LIMIT)
        recorder.stall_at = None
        recorder.release.set()
    assert sender.returncode == -signal.SIGKILL
    return state


def test_sender_killed_after_the_end_of_data_never_sends_twice_on_its_own(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port)
    reply_id = store(db, compose(), settings)

    assert kill_sender_mid_send(db, recorder, settings, "DATA") == outbox.COMMITTING
    assert len(recorder.received) == 1  # the server has it; the sender never heard back

    # The restarted sender finds the dead claim and cannot know whether the server kept it.
    run = deliver_due(db, SmtpTransport(settings), settings)
    assert run.recovered == {reply_id: outbox.IN_DOUBT} and run.sent == []
    assert deliver_due(db, SmtpTransport(settings), settings).sent == []
    assert len(recorder.received) == 1
    row = row_of(db, reply_id)
    assert row.state == outbox.IN_DOUBT
    assert f"lorelab outbox retry {reply_id}" in (row.last_error or "")

    # Only a maintainer's retry sends it again.
    with db.session() as session:
        said = outbox.retry(session, outbox.find(session, str(reply_id)), "maintainer")
    assert said == f"reply {reply_id} queued again"
    assert deliver_due(db, SmtpTransport(settings), settings).sent == [reply_id]
    assert len(recorder.received) == 2


def test_sender_killed_before_the_end_of_data_sends_the_reply_once_after_restart(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port)
    reply_id = store(db, compose(), settings)

    assert kill_sender_mid_send(db, recorder, settings, "RCPT") == outbox.SENDING
    assert recorder.received == []  # a transaction without its end of data is discarded

    run = deliver_due(db, SmtpTransport(settings), settings)
    assert run.recovered == {reply_id: outbox.QUEUED}
    assert run.sent == [reply_id]
    assert deliver_due(db, SmtpTransport(settings), settings).sent == []
    assert len(recorder.received) == 1
    assert row_of(db, reply_id).attempts == 2


class SlowSmtp(SmtpTransport):
    """The real SMTP transport, held up before it connects long enough for its lease to run out
    and for another sender to take the reply over."""

    def __init__(self, settings: ReportSettings, meanwhile: Callable[[], object]) -> None:
        super().__init__(settings)
        self.meanwhile = meanwhile

    def send(self, envelope, commit_point):  # noqa: ANN001, ANN201
        self.meanwhile()
        return super().send(envelope, commit_point)


def test_a_sender_that_outlived_its_lease_stops_before_the_end_of_the_message(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port, send_lease_seconds=60)
    reply_id = store(db, compose(), settings)
    later = NOW + dt.timedelta(minutes=5)
    other_sender: list[object] = []

    def meanwhile() -> None:
        other_sender.append(deliver_due(db, SmtpTransport(settings), settings, now=later))

    run = deliver_due(db, SlowSmtp(settings, meanwhile), settings, now=NOW)
    taken_over = other_sender[0]
    assert taken_over.recovered == {reply_id: outbox.QUEUED}  # type: ignore[attr-defined]
    assert taken_over.sent == [reply_id]  # type: ignore[attr-defined]
    assert run.sent == [] and run.in_doubt == []
    assert len(recorder.received) == 1
    assert row_of(db, reply_id).state == outbox.SENT


def test_in_doubt_reply_found_in_the_list_archive_is_marked_sent_not_resent(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port)
    reply = compose()
    reply_id = store(db, reply, settings)
    with db.session() as session:
        session.get(OutboxReply, reply_id).state = outbox.IN_DOUBT  # type: ignore[union-attr]
    with db.session() as session:
        with pytest.raises(outbox.OutboxError, match="cannot approve"):
            outbox.approve(session, outbox.find(session, reply.message_id), "maintainer")
        # The bot ingested its own reply back from the list.
        session.add(
            Message(
                msgid=reply.message_id,
                kind="review",
                raw=reply.as_bytes(),
                raw_size=len(reply.as_bytes()),
            )
        )
    run = deliver_due(db, SmtpTransport(settings), settings)
    assert run.recovered == {reply_id: outbox.SENT}
    assert recorder.received == []
    with db.session() as session:
        row = outbox.find(session, str(reply_id))
        with pytest.raises(outbox.OutboxError, match="never sent again"):
            outbox.retry(session, row, "maintainer")


def test_moderation_holds_replies_until_approved(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port, moderation=True)
    held = store(db, compose(1042), settings)
    refused = store(db, compose(1043), settings)
    assert row_of(db, held).state == outbox.PENDING_APPROVAL
    assert deliver_due(db, SmtpTransport(settings), settings).sent == []
    assert recorder.received == []

    with db.session() as session:
        outbox.approve(session, outbox.find(session, str(held)), "akpm")
        outbox.reject(session, outbox.find(session, str(refused)), "akpm", "numbers look odd")
    assert deliver_due(db, SmtpTransport(settings), settings).sent == [held]
    assert len(recorder.received) == 1
    assert row_of(db, held).decided_by == "akpm"
    rejected = row_of(db, refused)
    assert (rejected.state, rejected.reason) == (outbox.REJECTED, "numbers look odd")


def test_list_rate_limit_defers_a_reply_until_the_day_has_room(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port, list_daily_limit=1)
    first = store(db, compose(1042, author="a@example.org"), settings)
    second = store(db, compose(1043, author="b@example.org"), settings)

    run = deliver_due(db, SmtpTransport(settings), settings, now=NOW)
    assert (run.sent, run.deferred) == ([first], [second])
    row = row_of(db, second)
    assert row.state == outbox.QUEUED
    assert "rate limit: 1 replies to the list linux-mm@kvack.org in 24 hours" in (
        row.last_error or ""
    )
    later = NOW + dt.timedelta(hours=23)
    assert deliver_due(db, SmtpTransport(settings), settings, now=later).sent == []
    next_day = NOW + dt.timedelta(hours=24, seconds=1)
    assert deliver_due(db, SmtpTransport(settings), settings, now=next_day).sent == [second]
    assert len(recorder.received) == 2


def test_author_rate_limit_counts_replies_to_one_author(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port, author_daily_limit=1)
    first = store(db, compose(1042), settings)
    second = store(db, compose(1043), settings)
    other = store(db, compose(1044, author="someone@example.org"), settings)
    run = deliver_due(db, SmtpTransport(settings), settings, now=NOW)
    assert (run.sent, run.deferred) == ([first, other], [second])
    assert "the author kosaki.motohiro@jp.fujitsu.com" in (row_of(db, second).last_error or "")
    assert len(recorder.received) == 2


def test_opt_out_removes_recipients_and_suppresses_replies_to_opted_out_authors(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port, opt_out=["riel@redhat.com", "@opted.example"])
    kept = store(db, compose(1042), settings)
    dropped = store(db, compose(1043, author="dev@opted.example"), settings)
    row = row_of(db, dropped)
    assert (row.state, row.reason) == (outbox.SUPPRESSED, "the author dev@opted.example opted out")

    assert deliver_due(db, SmtpTransport(settings), settings).sent == [kept]
    assert len(recorder.received) == 1
    assert "riel@redhat.com" not in recorder.received[0].rcpt_tos
    assert "linux-mm@kvack.org" in recorder.received[0].rcpt_tos

    # An author who opts out while a reply waits is not written to either.
    late = store(db, compose(1044, author="late@example.org"), settings)
    run = deliver_due(db, SmtpTransport(settings), settings, extra_opt_out=("late@example.org",))
    assert run.suppressed == [late] and run.sent == []
    assert len(recorder.received) == 1


def test_reply_to_a_list_that_is_not_allow_listed_is_suppressed_with_the_reason(
    db: Database, smtp_server: tuple[Recorder, int]
) -> None:
    recorder, port = smtp_server
    settings = smtp_settings(port, allowed_lists=["linux-mm@kvack.org"])
    reply_id = store(db, compose(), settings)
    row = row_of(db, reply_id)
    assert row.state == outbox.SUPPRESSED
    assert row.reason == "not allow-listed: linux-kernel@vger.kernel.org"
    assert deliver_due(db, SmtpTransport(settings), settings).sent == []
    assert recorder.received == []
    # In smtp mode an empty allow-list allows nothing.
    nothing = smtp_settings(port, allowed_lists=[])
    assert row_of(db, store(db, compose(1043), nothing)).state == outbox.SUPPRESSED


def test_maildir_outbox_holds_each_reply_once_and_mutt_style_readers_find_it(
    db: Database, tmp_path: Path
) -> None:
    settings = ReportSettings(mode="outbox", outbox_dir=str(tmp_path / "outbox"))
    reply = compose()
    reply_id = store(db, reply, settings)
    transport = make_transport(settings, tmp_path)
    assert isinstance(transport, MaildirTransport)
    assert deliver_due(db, transport, settings).sent == [reply_id]
    assert deliver_due(db, transport, settings).sent == []

    box = mailbox.Maildir(tmp_path / "outbox", create=False)
    messages = list(box)
    assert len(messages) == 1
    assert messages[0]["Message-ID"] == f"<{reply.message_id}>"
    assert messages[0]["In-Reply-To"] == "<20081204102342.2DF1.KOSAKI.MOTOHIRO@jp.fujitsu.com>"
    assert row_of(db, reply_id).transport == "maildir"


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("written", [True, False], ids=["renamed", "not-renamed"])
def test_maildir_crash_after_the_commit_point_is_resolved_without_a_duplicate(
    db: Database, tmp_path: Path, written: bool
) -> None:
    settings = ReportSettings(mode="outbox", outbox_dir=str(tmp_path / "outbox"))
    reply = compose()
    reply_id = store(db, reply, settings)
    transport = MaildirTransport(tmp_path / "outbox")
    transport.ensure()
    if written:  # the crash came after the rename into new/, before 'sent' was recorded
        name = transport.filename(reply.message_id)
        (tmp_path / "outbox" / "new" / name).write_bytes(reply.as_bytes())
    with db.session() as session:
        row = session.get(OutboxReply, reply_id)
        assert row is not None
        row.state, row.transport = outbox.COMMITTING, "maildir"
        row.claimed_by = f"{socket.gethostname()}:{dead_pid()}"
    run = deliver_due(db, transport, settings)
    assert run.recovered == {reply_id: outbox.SENT if written else outbox.QUEUED}
    assert run.sent == ([] if written else [reply_id])
    assert len(list(mailbox.Maildir(tmp_path / "outbox", create=False))) == 1
    assert row_of(db, reply_id).state == outbox.SENT


def make_certificate(directory: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


PASSWORD = "s3cret-Do-Not-Log"


def authenticator(server, session, envelope, mechanism, auth_data):  # noqa: ANN001, ANN201
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        b"lorelab",
        PASSWORD.encode(),
    )
    return AuthResult(success=ok, handled=False)  # handled=False: the server answers 535


@pytest.mark.parametrize("security", ["starttls", "ssl"])
def test_tls_and_authentication_with_the_password_from_env_or_file(
    db: Database,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    security: str,
) -> None:
    cert, key = make_certificate(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    recorder = Recorder()
    if security == "ssl":
        # aiosmtpd does not count implicit TLS as TLS for auth_require_tls; it is TLS all along.
        tls = {"ssl_context": server_tls, "auth_require_tls": False}
    else:
        tls = {"tls_context": server_tls, "require_starttls": True, "auth_require_tls": True}
    controller = Controller(
        recorder,
        hostname="127.0.0.1",
        port=free_port(),
        authenticator=authenticator,
        server_hostname="localhost",
        **tls,
    )
    controller.start()
    try:
        settings = smtp_settings(
            controller.port, smtp_security=security, smtp_user="lorelab", smtp_ca_file=str(cert)
        )
        if security == "starttls":
            monkeypatch.setenv("LORELAB_SMTP_PASSWORD", PASSWORD)
        else:
            (tmp_path / "password").write_text(PASSWORD + "\n")
            settings.smtp_password_file = str(tmp_path / "password")
        reply_id = store(db, compose(1042), settings)
        assert deliver_due(db, SmtpTransport(settings), settings).sent == [reply_id]
        assert len(recorder.received) == 1

        # A wrong password fails for good, and the password is nowhere in the record or logs.
        monkeypatch.setenv("LORELAB_SMTP_PASSWORD", "wrong-" + PASSWORD)
        caplog.set_level(logging.DEBUG)
        refused = store(db, compose(1043), settings)
        run = deliver_due(db, SmtpTransport(settings), settings)
        assert run.failed == [refused], (run, row_of(db, refused).last_error)
        row = row_of(db, refused)
        assert row.state == outbox.FAILED
        assert "authentication as lorelab failed: 535" in (row.last_error or "")
        assert PASSWORD not in (row.last_error or "") and PASSWORD not in caplog.text
    finally:
        controller.stop()


def test_connection_refused_is_retried_later_then_marked_failed(db: Database) -> None:
    settings = smtp_settings(free_port(), max_attempts=2)  # nothing listens there
    reply_id = store(db, compose(), settings)
    run = deliver_due(db, SmtpTransport(settings), settings, now=NOW)
    assert run.requeued == [reply_id]
    row = row_of(db, reply_id)
    assert row.state == outbox.QUEUED and "cannot connect" in (row.last_error or "")
    assert deliver_due(db, SmtpTransport(settings), settings, now=NOW).requeued == []  # backoff
    later = NOW + dt.timedelta(minutes=5)
    assert deliver_due(db, SmtpTransport(settings), settings, now=later).failed == [reply_id]
    assert row_of(db, reply_id).attempts == 2


def test_a_new_version_supersedes_the_replies_still_waiting_for_the_old_one(
    db: Database, tmp_path: Path
) -> None:
    settings = ReportSettings(mode="outbox", outbox_dir=str(tmp_path / "outbox"), moderation=True)
    old = store(db, compose(1042), settings)
    new = store(db, compose(1043), settings)
    with db.session() as session:
        assert outbox.supersede(session, [1042], "superseded by v2") == 1
    assert (row_of(db, old).state, row_of(db, old).reason) == (
        outbox.SUPPRESSED,
        "superseded by v2",
    )
    assert row_of(db, new).state == outbox.PENDING_APPROVAL


def test_does_not_apply_replies_go_out_only_where_the_deployment_enables_them(
    db: Database, tmp_path: Path
) -> None:
    from bot.report.compose.failure_reply import ApplyFailureContext, compose_apply_failure

    ctx, date = load_results(json.loads(RESULTS.read_text()))
    identity = BotIdentity(Person("lorelab", "lorelab@lorelab.example.org"), "lorelab.example.org")
    assert date is not None
    reply = compose_apply_failure(
        ApplyFailureContext(
            parent=ctx.parent,
            series=ctx.series,
            tree=ctx.tree,
            failing_patch=1,
            failing_subject=ctx.series.title,
            conflicts=("mm/vmscan.c",),
        ),
        ReplyOptions(identity=identity, date=date),
    )
    default = ReportSettings(mode="outbox", outbox_dir=str(tmp_path / "outbox"))
    row = row_of(db, store(db, reply, default))
    assert (row.state, row.reason) == (
        outbox.SUPPRESSED,
        "does-not-apply replies are disabled in this deployment ([report] does_not_apply_replies)",
    )
