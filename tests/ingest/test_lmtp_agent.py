"""`lorelab deliver --socket PATH`, the LMTP delivery agent, as Postfix or Exim talk to it:
Python's `smtplib.LMTP` client against the real agent process, on SQLite and PostgreSQL.

What a mail server relies on: a 250 after DATA means the mail is in the database; a 451 means
it is not, and the same mail sent again later is stored once; every recipient gets its answer.
"""

from __future__ import annotations

import json
import signal
import smtplib
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.db.models import MailingList, Message, MessageList
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_series, make_tree
from tests.cli import SHOW_MODULES, Lorelab
from tests.series.mailing import msgs_id
from tests.support import private_servers

AGENT = "from bot.cli import main; main()"


@pytest.fixture(scope="module")
def mails(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    tree = make_tree(tmp_path_factory.mktemp("tree") / "linux")
    return make_series(tree, SeriesSpec(title="mm: delivered by LMTP", patches=3))


class Agent:
    """`lorelab deliver --socket PATH` in a process of its own."""

    def __init__(self, lorelab: Lorelab, socket_path: Path, *args: str) -> None:
        self.socket = socket_path
        self.proc = subprocess.Popen(
            [sys.executable, "-c", AGENT, "deliver", "--socket", str(socket_path), *args],
            env=lorelab.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert self.proc.stderr is not None
        said = self.proc.stderr.readline()  # it says so once it listens
        if not said.startswith(b"lorelab: delivering by LMTP on"):
            raise AssertionError(f"the agent did not start: {said!r} {self.stop()}")

    def client(self) -> smtplib.LMTP:
        lmtp = smtplib.LMTP(str(self.socket), timeout=120)
        lmtp.ehlo_or_helo_if_needed()
        return lmtp

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, err.decode(errors="replace")


@pytest.fixture
def lorelab(tmp_path: Path, db_url: str) -> Lorelab:
    lorelab = Lorelab(tmp_path, db_url)
    lorelab.run("db", "upgrade")
    return lorelab


@pytest.fixture
def agent(lorelab: Lorelab, tmp_path: Path) -> Iterator[Agent]:
    running = Agent(lorelab, tmp_path / "run" / "lmtp.sock")
    yield running
    running.stop()


def stored(db_url: str) -> dict[str, list[str]]:
    """Message-ID -> the lists it is recorded on."""
    db = Database(db_url)
    try:
        with db.session() as session:
            found: dict[str, list[str]] = {
                m: [] for m in session.scalars(sa.select(Message.msgid))
            }
            for msgid, name in session.execute(
                sa.select(Message.msgid, MailingList.name)
                .join(MessageList, MessageList.message_id == Message.id)
                .join(MailingList, MailingList.id == MessageList.list_id)
            ):
                found[msgid].append(name)
            return found
    finally:
        db.dispose()


def test_each_mail_is_stored_before_its_250(agent: Agent, lorelab: Lorelab, db_url: str,
                                           mails: list[bytes]) -> None:
    lmtp = agent.client()
    for i, mail in enumerate(mails):
        refused = lmtp.sendmail("ada@example.org", ["linux-mm@lists.example.org"], mail)
        assert refused == {}
        # The 250 has been read: the mail is in the database now, not later.
        assert msgs_id(mail) in stored(db_url)
        assert len(stored(db_url)) == i + 1
    lmtp.quit()
    (listed,) = lorelab.json("series", "list")
    assert listed["title"] == "mm: delivered by LMTP" and listed["complete"]


def test_every_recipient_gets_an_answer_and_the_mail_is_stored_once(
    agent: Agent, db_url: str, mails: list[bytes]
) -> None:
    lmtp = agent.client()
    lmtp.mail("ada@example.org")
    for rcpt in ("bot@lists.example.org", "archive@lists.example.org"):
        assert lmtp.rcpt(rcpt)[0] == 250
    code, said = lmtp.data(mails[0])
    assert code == 250 and b"stored" in said
    second = lmtp.getreply()  # LMTP: one answer per recipient
    assert second[0] == 250
    # A line starting with a dot survives the transparency procedure.
    dotted = mails[1].replace(b"\n\n", b"\n\n.starts with a dot\n..two\n", 1)
    assert lmtp.sendmail("ada@example.org", ["bot@lists.example.org"], dotted) == {}
    assert lmtp.noop()[0] == 250
    lmtp.quit()
    assert sorted(stored(db_url)) == sorted([msgs_id(mails[0]), msgs_id(mails[1])])
    raw = Database(db_url)
    try:
        with raw.session() as session:
            message = session.scalar(sa.select(Message).where(Message.msgid == msgs_id(dotted)))
            assert b"\n.starts with a dot\n..two\n" in message.raw
    finally:
        raw.dispose()


def test_the_list_comes_from_the_option_or_the_recipient(lorelab: Lorelab, tmp_path: Path,
                                                        db_url: str, mails: list[bytes]) -> None:
    config = tmp_path / "lists.toml"
    config.write_text('[[lists]]\nname = "linux-mm"\naddress = "linux-mm@kvack.org"\n')
    lorelab.env["LORELAB_CONFIG"] = str(config)
    agent = Agent(lorelab, tmp_path / "lmtp.sock")
    try:
        lmtp = agent.client()
        lmtp.sendmail("ada@example.org", ["linux-mm@lists.example.org"], mails[0])
        lmtp.sendmail("ada@example.org", ["mm-commits"], mails[1])  # no domain: named
        lmtp.quit()
    finally:
        agent.stop()
    found = stored(db_url)
    assert found[msgs_id(mails[0])] == ["linux-mm"]
    assert found[msgs_id(mails[1])] == ["mm-commits"]


def test_stopping_and_a_second_agent(lorelab: Lorelab, agent: Agent, tmp_path: Path) -> None:
    second = subprocess.run(
        [sys.executable, "-c", AGENT, "deliver", "--socket", str(agent.socket)],
        env=lorelab.env, capture_output=True, timeout=120,
    )
    assert second.returncode == 1
    assert b"already listens" in second.stderr
    code, err = agent.stop()
    assert code == 0, err
    assert not agent.socket.exists()




def test_ingest_stdin_hands_the_mail_to_the_agent(lorelab: Lorelab, tmp_path: Path,
                                                 db_url: str, mails: list[bytes]) -> None:
    """With LORELAB_DELIVER_SOCKET a delivery imports nothing of storing; with no agent
    there it stores the mail itself."""
    socket_path = tmp_path / "lmtp.sock"
    env = {**lorelab.env, "LORELAB_DELIVER_SOCKET": str(socket_path)}

    def deliver(mail: bytes, *options: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-c", SHOW_MODULES, "ingest", "stdin", *options],
                              input=mail, env=env, capture_output=True, timeout=120)
        code, modules = json.loads(proc.stderr.decode().strip().splitlines()[-1])
        assert code == 0, proc.stderr
        return modules

    agent = Agent(lorelab, socket_path)
    try:
        modules = deliver(mails[0], "--list", "linux-next")
        deliver(mails[2])  # no --list: the List-Id says linux-mm
    finally:
        agent.stop()
    assert not [m for m in modules if m.startswith(("sqlalchemy", "bot.db", "bot.ingest.store"))]
    assert stored(db_url)[msgs_id(mails[0])] == ["linux-next"]
    assert stored(db_url)[msgs_id(mails[2])] == ["linux-mm"]
    modules = deliver(mails[1], "--list", "linux-next")  # no agent: stored here
    assert "bot.ingest.store" in modules
    assert stored(db_url)[msgs_id(mails[1])] == ["linux-next"]


# ----------------------------------------------------------------------------------------------
# Outages: the database cannot take the mail; the answer is 451 and the retry stores it.


def outage_cases() -> list:
    reason = private_servers.missing_reason()
    return ["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(
        reason is not None, reason=reason or ""))]


@pytest.mark.parametrize("backend", outage_cases())
def test_a_database_outage_is_a_451_and_the_retry_stores_the_mail(
    backend: str, tmp_path: Path, mails: list[bytes]
) -> None:
    if backend == "sqlite":
        path = tmp_path / "lorelab.db"
        url = f"sqlite:///{path}"
        holder: sqlite3.Connection | None = None

        def go_down() -> None:
            nonlocal holder
            holder = sqlite3.connect(path, isolation_level=None)
            holder.execute("BEGIN EXCLUSIVE")  # a long migration or backup holds the file

        def come_back() -> None:
            assert holder is not None
            holder.execute("ROLLBACK")
            holder.close()
    else:
        server = private_servers.PrivatePostgres(tmp_path / "pg")
        server.start()
        url = server.create_database("lorelab")
        go_down, come_back = server.crash, server.start
    lorelab = Lorelab(tmp_path, url)
    lorelab.run("db", "upgrade")
    agent = Agent(lorelab, tmp_path / "lmtp.sock", "--db-wait", "0.5")
    try:
        lmtp = agent.client()
        assert lmtp.sendmail("a@example.org", ["linux-mm@lists.example.org"], mails[0]) == {}
        go_down()
        with pytest.raises(smtplib.SMTPDataError) as refused:
            lmtp.sendmail("a@example.org", ["linux-mm@lists.example.org"], mails[1])
        assert refused.value.smtp_code == 451
        assert b"try again later" in refused.value.smtp_error
        come_back()
        # The mail server tries again: on the same connection, as Postfix may.
        assert lmtp.sendmail("a@example.org", ["linux-mm@lists.example.org"], mails[1]) == {}
        lmtp.quit()
    finally:
        code, err = agent.stop()
        if backend == "postgresql":
            server.stop()  # type: ignore[possibly-undefined]
    assert code == 0, err
    if backend == "postgresql":
        server.start()
    try:
        assert sorted(stored(url)) == sorted([msgs_id(mails[0]), msgs_id(mails[1])])
    finally:
        if backend == "postgresql":
            server.stop()

