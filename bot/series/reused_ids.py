"""Which of several mails carrying one Message-ID a reply answers.

Some senders' tools reuse Message-IDs: Realtek's r8152 series (Hayes Wang, netdev and
linux-usb) came for years under ids such as `<1394712342-15778-341-Taiwan-albertk@realtek.com>`
whose counter started again, so a 2021 `[PATCH net-next 0/4]` carried the id of a 2020
`[PATCH net 3/9]`. Ingest keeps both mails (`bot.ingest.copies`); threading looked a named id
up by the first mail stored under it, so the 2021 patches, each in reply to their cover
letter's id, joined the 2020 thread, where the 2020 patches took their ids, and the 2021 series
was in no version at all.

A reply can only answer a mail that was sent before it: where the mails carrying an id send
different parts (another kind, number, size or title), the id a reply names is read as the
latest of them dated before the reply (`SKEW` allows for clocks that run behind). Where they
all send the same part (a series sent again under its ids, a forged or spoofed copy of a
patch), the id stays the first stored mail's, as before: which of those a series takes is
`bot.series.shared_ids`' to decide, in one thread. The choice is made as the reply is stored,
among the mails stored by then (its own batch's included): a reply that comes before the mail
it answers joins the first stored's thread, and stays there.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from bot.db.models import Message
from bot.db.value_lists import in_param, list_param

SKEW = dt.timedelta(minutes=15)  # how far a reply's clock may run behind the mail it answers

Part = tuple[str, int, int, str]  # (kind, counter, total, title): what a mail sends


def part_of(row: Any) -> Part:
    """What a message (a row with kind, counter, total and title) sends."""
    return row.kind, row.counter, row.total, row.title


@dataclass(frozen=True)
class Carrier:
    """One mail carrying a Message-ID: the id it is stored under (a copy's stand-in), its date,
    and what it sends."""

    msgid: str
    date: dt.datetime | None
    part: Part


_COLUMNS = (Message.msgid, Message.claimed_msgid, Message.thread_id, Message.date, Message.kind,
            Message.counter, Message.total, Message.title)
_FIRST = sa.select(*_COLUMNS).where(in_param(Message.msgid, "ids"))
_COPIES = sa.select(*_COLUMNS).where(in_param(Message.claimed_msgid, "ids"))


class ReusedIds:
    """The ids a batch names that several mails carry, and their carriers, first stored first."""

    def __init__(self) -> None:
        self.carriers: dict[str, list[Carrier]] = {}

    def load(self, conn: sa.Connection, named: Iterable[str], claimed_in_batch: set[str]
             ) -> dict[str, int]:
        """Read the stored carriers of the `named` ids that stored copies or the batch's own
        (`claimed_in_batch`) claim; the threads of the stored ones, by the id each is stored
        under."""
        named = sorted(set(named))
        if not named:
            return {}
        copies = list(conn.execute(_claiming(conn), {"ids": named}))
        reused = {row.claimed_msgid for row in copies} | (claimed_in_batch & set(named))
        if not reused:
            return {}
        firsts = list(conn.execute(_FIRST, {"ids": sorted(reused)}))
        threads: dict[str, int] = {}
        for row in [*firsts, *sorted(copies, key=lambda r: r.msgid)]:
            self.carriers.setdefault(row.claimed_msgid or row.msgid, []).append(
                Carrier(row.msgid, row.date, part_of(row)))
            if row.thread_id is not None:
                threads[row.msgid] = row.thread_id
        return threads

    def add(self, msgid: str, carrier: Carrier) -> None:
        """A mail of this batch carrying `msgid` (a copy, or the first of the batch's mails
        under the id), once it has a thread."""
        self.carriers.setdefault(msgid, []).append(carrier)

    def answered(self, named: str, date: dt.datetime | None) -> str:
        """The id of the mail a message dated `date` answers when it names `named`."""
        carriers = self.carriers.get(named)
        if not carriers or date is None or len({c.part for c in carriers}) == 1:
            return named
        sent = [(c.date, c.msgid) for c in carriers if c.date is not None and c.date <= date + SKEW]
        return max(sent, key=lambda s: s[0])[1] if sent else named


# SQLite: nearly every `claimed_msgid` is NULL, so its statistics say that a value is found in
# a thousand rows or in all of them, and it scanned the messages for every batch (0.1 s of CPU
# over the ingest benchmark's 20,000 messages, more per batch as the archive grows): it is told
# to take the index.
_CLAIMED_INDEX = next(
    i.name for i in Message.__table__.indexes if [c.key for c in i.columns] == ["claimed_msgid"]
)


def claiming_sqlite(columns: str) -> sa.TextClause:
    """These columns of the messages claiming the ids `:ids`, through the claims' index."""
    return sa.text(
        f"SELECT {columns} FROM messages INDEXED BY {_CLAIMED_INDEX} "
        "WHERE claimed_msgid IN (SELECT value FROM json_each(:ids))"
    ).bindparams(list_param(Message.claimed_msgid, "ids"))


_COPIES_SQLITE = claiming_sqlite(", ".join(c.key for c in _COLUMNS)).columns(*_COLUMNS)


def _claiming(conn: sa.Connection) -> sa.Executable:
    """`_COPIES`, on SQLite through the claims' index."""
    return _COPIES_SQLITE if conn.dialect.name == "sqlite" else _COPIES
