"""A thread to send `#lorelab` commands on: a tree with the fixture MAINTAINERS, a series Cc'd to
Johannes and Rita ingested into the test database, and settings; replies are made with git's
help (bot.demo.threads), DKIM-signed by their sender's domain with the tests' own keys
(tests.support.dkim_signing), ingested and handled.

The tree's MAINTAINERS is tests/fixtures/maintainers/MAINTAINERS, a trimmed copy of the
kernel's (MEMORY MANAGEMENT, RECLAIM, MGLRU, MEMCG, NETWORKING with its X: lines, ...).
"""

from __future__ import annotations

import datetime as dt
import email
import email.policy
from pathlib import Path

import sqlalchemy as sa

from bot.commands.handler import CommandOutcome, handle_command_mails
from bot.config import IngestSettings, Settings
from bot.config.report import ReportSettings
from bot.config.sections import CommandSettings, TreeSettings
from bot.db.models import CommandRequest, OutboxReply, Run
from bot.db.session import Database
from bot.demo.threads import (
    DEFAULT_START,
    SeriesSpec,
    make_reply,
    make_series,
    make_tree,
    series_message_ids,
)
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from bot.mail import parse_message
from tests.support.dkim_signing import key_table, sign
from tests.support.paths import FIXTURES

MAINTAINERS = FIXTURES / "maintainers" / "MAINTAINERS"

ADA = ("Ada Reclaim", "ada@example.org")  # the series author (bot.demo's default)
HANNES = ("Johannes Weiner", "hannes@cmpxchg.org")  # RECLAIM maintainer, Cc'd on the series
YUANCHU = ("Yuanchu Xie", "yuanchu@google.com")  # MGLRU maintainer, not on the thread
MALLORY = ("Mallory Nobody", "mallory@example.net")
RITA = ("Rita Reviewer", "rita@example.org")  # Cc'd on the series, not in MAINTAINERS
# The domains whose keys the key table holds (every sender above, and B4 Relay's).
DOMAINS = ("example.org", "cmpxchg.org", "google.com", "example.net", "kernel.org")


class Thread:
    """The series, the settings, and a clock a minute further at each reply."""

    def __init__(self, db: Database, root: Path, commands: CommandSettings | None = None,
                 versions: int = 1) -> None:
        self.db = db
        self.tree = make_tree(root / "linux")
        (self.tree / "MAINTAINERS").write_text(MAINTAINERS.read_text())
        spec = SeriesSpec(title="mm/vmscan: reclaim in larger batches", patches=2,
                          cc=(f"{HANNES[0]} <{HANNES[1]}>", f"{RITA[0]} <{RITA[1]}>"))
        self.v1 = make_series(self.tree, spec)
        self.store(*self.v1)
        if versions == 2:
            spec2 = SeriesSpec(title=spec.title, patches=2, version=2, cc=spec.cc,
                               same_changes_as=spec, revised=(1,),
                               in_reply_to=series_message_ids(spec)[0])
            self.v2 = make_series(self.tree, spec2)
            self.store(*self.v2)
        self.settings = Settings(
            trees=[TreeSettings(name="mm", path=str(self.tree))],
            report=ReportSettings(from_address="lorelab <lorelab@lorelab.example.org>"),
            commands=commands or CommandSettings(),
        )
        # The public keys of the senders' domains come from this table, not from DNS.
        self.key_table = key_table(root, DOMAINS)
        self.settings.commands.dkim_keys = str(self.key_table)
        self.clock = DEFAULT_START + dt.timedelta(hours=1)

    def store(self, *messages: bytes) -> None:
        ingest(self.db, [RawMail(m, f"test:{i}") for i, m in enumerate(messages)],
               settings=IngestSettings(parse_workers=0), list_name="linux-mm")

    def reply(self, parent: bytes, author: tuple[str, str], body: str, *,
              signed_by: str | None = "", **kwargs) -> bytes:
        """A reply from `author`, DKIM-signed by `signed_by` (default: the author's domain;
        None: not signed)."""
        self.clock += dt.timedelta(minutes=1)
        raw = make_reply(parent, author=author, body=body, date=self.clock, **kwargs)
        if signed_by == "":
            signed_by = author[1].rpartition("@")[2]
        return raw if signed_by is None else sign(raw, signed_by)

    def send(self, parent: bytes, author: tuple[str, str], body: str,
             **kwargs) -> tuple[bytes, list[CommandOutcome]]:
        """Reply to `parent`, ingest the reply, handle it; the reply and the outcomes."""
        raw = self.reply(parent, author, body, **kwargs)
        self.store(raw)
        return raw, self.handle(raw)

    def handle(self, *raws: bytes) -> list[CommandOutcome]:
        msgids = [parse_message(raw).msgid for raw in raws]
        return handle_command_mails(self.db, self.settings, msgids,
                                    now=self.clock + dt.timedelta(seconds=30))

    def counts(self) -> tuple[int, int, int]:
        """(runs, outbox replies, command requests)."""
        with self.db.session() as session:
            return tuple(session.scalar(sa.select(sa.func.count()).select_from(table))
                         for table in (Run, OutboxReply, CommandRequest))  # type: ignore[return-value]

    def answer(self, outbox_id: int | None) -> email.message.EmailMessage:
        assert outbox_id is not None
        with self.db.session() as session:
            row = session.get(OutboxReply, outbox_id)
            assert row is not None and row.kind == "command"
            assert row.state == "queued", row.reason  # on its way to the list, not suppressed
            return email.message_from_bytes(row.raw, policy=email.policy.default)  # type: ignore

    def run(self, run_id: int) -> Run:
        with self.db.session() as session:
            run = session.get(Run, run_id)
            assert run is not None
            return run


def unwrapped(message: email.message.EmailMessage) -> str:
    """A reply's text on one line."""
    return " ".join(message.get_content().split())
