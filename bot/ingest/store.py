"""Storing prepared mail: deduplicate, thread, quarantine, and update series, batch by batch.

Each batch is one transaction: its messages, their threads and the series built from them are
committed together or not at all, so a crash loses at most the batch in flight and re-reading
it stores nothing twice (messages are unique by Message-ID, quarantined input by its sha256).

No mail can fail a batch: every row has passed `bot.ingest.storable.make_storable` (what both
databases can hold) when it was prepared, and should a database still refuse one (a case the
gate does not know), the batch is rolled back to a savepoint and stored mail by mail, the
refused one quarantined with the database's words. A source therefore moves past any mail
(issue 16, item 6).
"""

from __future__ import annotations

import functools
import hashlib
import operator
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import sqlalchemy as sa
import zstandard
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from bot.config import IngestSettings, ListSettings
from bot.db.models import (
    MailingList,
    Message,
    MessageList,
    QuarantinedMail,
    pack_mail,
    utcnow,
)
from bot.db.session import Database, json_text
from bot.db.value_lists import in_param, in_values, insert_tuples
from bot.ingest.collector import frozen_heap, no_collection
from bot.ingest.copies import sort_out, threads_of_claimed
from bot.ingest.prepare import PreparedBatch, has_review_trailers, prepared_batches
from bot.ingest.sources import MboxFile, RawMail
from bot.ingest.storable import clean_text
from bot.ingest.upkeep import StatisticsUpkeep
from bot.series.assemble import update_series
from bot.series.parts import thread_message
from bot.series.threads import ThreadIndex
from bot.series.unthreaded import is_unthreaded_part


@dataclass
class IngestSummary:
    read: int = 0
    stored: int = 0
    duplicates: int = 0
    quarantined: int = 0
    series_created: int = 0
    series_updated: int = 0
    quarantine_reasons: list[str] = field(default_factory=list)  # the first few, for the user

    def add(self, other: IngestSummary) -> None:
        for name in ("read", "stored", "duplicates", "quarantined"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.series_created += other.series_created
        self.series_updated += other.series_updated
        self.quarantine_reasons += other.quarantine_reasons[: 20 - len(self.quarantine_reasons)]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> list[str]:
        """The summary as `lorelab ingest` prints it, line by line."""
        lines = [
            f"read {self.read}: stored {self.stored}, duplicates {self.duplicates}, "
            f"quarantined {self.quarantined}; series versions new {self.series_created}, "
            f"updated {self.series_updated}"
        ]
        lines += [f"  quarantined {reason}" for reason in self.quarantine_reasons]
        if self.quarantined:
            lines.append("  see them with `lorelab quarantine list`")
        return lines


def ingest(
    db: Database,
    mails: Iterable[RawMail] | MboxFile,
    *,
    settings: IngestSettings,
    list_name: str | None = None,
    known_lists: list[ListSettings] | None = None,
    on_batch: Callable[[PreparedBatch], None] | None = None,
) -> IngestSummary:
    """Store every mail of `mails`; bad ones are quarantined and the rest go on."""
    summary = IngestSummary()
    lists = ListResolver(known_lists or [], list_name)
    upkeep = StatisticsUpkeep(db)
    with frozen_heap():
        for batch in prepared_batches(mails, settings):
            with no_collection(), db.session() as session:
                got = store_batch(session, batch, lists=lists)
            summary.add(got)
            upkeep.stored(got.stored)
            if on_batch is not None:
                on_batch(batch)
    return summary


class ListResolver:
    """Which list a message was seen on: the one named for the source, else its List-Id."""

    def __init__(self, known: list[ListSettings], forced: str | None) -> None:
        self.forced = forced
        self.by_list_id = {k.address.replace("@", "."): k.name for k in known if k.address}
        self.ids: dict[str, int] = {}

    def name_for(self, list_id_header: str | None) -> str | None:
        if self.forced:
            return self.forced
        if not list_id_header:
            return None
        # an unknown list is named by the first label of its List-Id, cut to what `lists` holds
        return self.by_list_id.get(list_id_header, list_id_header.split(".", 1)[0][:200])

    def id_for(self, session: Session, name: str) -> int:
        if name not in self.ids:
            list_id = session.scalar(sa.select(MailingList.id).where(MailingList.name == name))
            if list_id is None:
                list_id = session.execute(
                    sa.insert(MailingList).values(name=name, address="").returning(MailingList.id)
                ).scalar_one()
            self.ids[name] = list_id
        return self.ids[name]


def _store_quarantine(session: Session, rows: list[dict], summary: IngestSummary) -> None:
    unique = {row["sha256"]: row for row in rows}
    summary.duplicates += len(rows) - len(unique)
    seen = set(session.scalars(
        sa.select(QuarantinedMail.sha256).where(in_values(QuarantinedMail.sha256, unique))
    ))  # fmt: skip
    summary.duplicates += len(seen)
    fresh = [row for sha, row in unique.items() if sha not in seen]
    if fresh:
        session.execute(sa.insert(QuarantinedMail.__table__), fresh)
    summary.quarantined = len(fresh)
    summary.quarantine_reasons = [f"{r['source']}: {r['reason']}" for r in fresh]


def _insert_messages(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert new message rows; their ids are read back by msgid afterwards.

    Not through SQLAlchemy's executemany: RETURNING makes it send the rows one statement at a
    time, the ORM's bulk insert costs three times more again, and its generic per-parameter
    handling cost more than the insert itself. The rows go to the driver as tuples, converted
    by the columns' own bind processors: an executemany on SQLite, a COPY on PostgreSQL.
    """
    conn = session.connection()
    insert = _message_insert(conn.dialect)
    # Rows with other keys (a column added later) take the generic path, defaults and all.
    if insert is not None and all(row.keys() == insert.keys for row in rows):
        insert.execute(conn, rows)
        return
    conn.execute(sa.insert(Message.__table__), rows)


@dataclass(frozen=True)
class _MessageInsert:
    """An INSERT (SQLite) or COPY (PostgreSQL) of every message column but id, each value
    through its column's bind processor (`_bind_processor`)."""

    sql: str
    copy: bool
    values: Callable[[dict[str, Any], Any], tuple[Any, ...]]  # (row, ingested_at) -> values
    keys: frozenset[str]  # what a row must hold: the columns but `ingested_at`
    stamp: Any  # the bind processor of `ingested_at`, the last column, filled in here

    def execute(self, conn: sa.Connection, rows: list[dict[str, Any]]) -> None:
        ingested_at = self.stamp(utcnow())  # the column's default, once per batch (one commit)
        to_values = self.values
        values = [to_values(r, ingested_at) for r in rows]
        if not self.copy:
            conn.exec_driver_sql(self.sql, values)
            return
        # The session's own connection: the COPY is part of the batch's transaction.
        with conn.connection.driver_connection.cursor() as cursor, cursor.copy(self.sql) as copy:
            for row in values:
                copy.write_row(row)


@functools.cache
def _message_insert(dialect: Dialect) -> _MessageInsert | None:
    if dialect.driver not in ("pysqlite", "psycopg"):
        return None  # the COPY below is psycopg 3's
    table = Message.__table__
    keys = [c.key for c in table.c if c.key not in ("id", "ingested_at")]
    names = ", ".join(dialect.identifier_preparer.quote(k) for k in [*keys, "ingested_at"])
    marks = ", ".join("?" for _ in range(len(keys) + 1))
    copy = dialect.name == "postgresql"
    return _MessageInsert(
        sql=(f"COPY {table.name} ({names}) FROM STDIN" if copy
             else f"INSERT INTO {table.name} ({names}) VALUES ({marks})"),
        copy=copy,
        values=_values_function(keys, [_bind_processor(table.c[k], dialect) for k in keys]),
        keys=frozenset(keys),
        stamp=table.c.ingested_at.type._cached_bind_processor(dialect),
    )


def _values_function(
    keys: list[str], processors: list[Callable[[Any], Any] | None]
) -> Callable[[dict[str, Any], Any], tuple[Any, ...]]:
    """`(row, last) -> (row[key] for each of keys, through its processor if any; last)`: the
    keys read at once, and only the few columns with a processor converted."""
    read = operator.itemgetter(*keys)
    convert = [(i, proc) for i, proc in enumerate(processors) if proc is not None]

    def values(row: dict[str, Any], last: Any) -> tuple[Any, ...]:
        out = [*read(row), last]
        for i, proc in convert:
            out[i] = proc(out[i])
        return tuple(out)  # exec_driver_sql takes tuples (or dicts) only

    return values


def _bind_processor(column: sa.Column[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """How a column's value goes to the driver: JSON straight through the engines' serializer
    (SQLAlchemy's wrapper around it cost a tenth of the insert); a bool as it is (`message_row`
    makes them bools, which SQLite stores as the 1 or 0 the processor would make and psycopg
    as the boolean: the processor only checked that it is one); the rest as the type says."""
    if isinstance(column.type, sa.JSON):
        return json_text
    if isinstance(column.type, sa.Boolean):
        return None
    return column.type._cached_bind_processor(dialect)


def store_batch(session: Session, batch: PreparedBatch, *, lists: ListResolver) -> IngestSummary:
    """Store a batch in the caller's transaction; a mail the database refuses is quarantined."""
    try:
        with _savepoint(session):
            return _store_rows(session, batch, lists)
    except _refusals():
        pass
    lists.ids.clear()  # list rows made inside the savepoint are gone with it
    summary = IngestSummary(read=batch.read)
    for part in [PreparedBatch(quarantine=[row]) for row in batch.quarantine] + [
        PreparedBatch(messages=[row]) for row in batch.messages
    ]:
        try:
            with _savepoint(session):
                summary.add(_store_rows(session, part, lists))
        except _refusals() as exc:
            lists.ids.clear()
            with _savepoint(session):
                summary.add(_store_rows(session, _refused(part, exc), lists))
    return summary


def _refusals() -> tuple[type[BaseException], ...]:
    """What a database (or its driver, before sending) raises for a value it cannot store.
    Not OperationalError: a lost connection or a lock is the poll's to retry, not the mail's."""
    errors: tuple[type[BaseException], ...] = (
        sa.exc.DataError, sa.exc.IntegrityError, OverflowError, UnicodeError,
    )
    psycopg = sys.modules.get("psycopg")  # loaded only when PostgreSQL is in use; COPY's own
    if psycopg is not None:
        errors += (psycopg.DataError, psycopg.IntegrityError)
    return errors


def _savepoint(session: Session) -> sa.orm.SessionTransaction:
    """A savepoint inside the session's transaction. pysqlite opens a transaction only before
    a write, so a SAVEPOINT first would start one that its RELEASE commits: begin it here."""
    conn = session.connection()
    if conn.dialect.name == "sqlite" and not conn.connection.driver_connection.in_transaction:
        conn.exec_driver_sql("BEGIN")
    return session.begin_nested()


def _refused(part: PreparedBatch, exc: BaseException) -> PreparedBatch:
    """A quarantine row for the one mail of `part` that the database refused."""
    if part.quarantine:  # even the quarantine row was refused: keep its reason, not its text
        row = dict(part.quarantine[0], raw=pack_mail(b""), truncated=True)
        return PreparedBatch(quarantine=[row])
    row = part.messages[0]
    raw = zstandard.ZstdDecompressor().decompress(row["raw"])
    cause = getattr(exc, "orig", None) or exc  # the driver's words, not SQLAlchemy's wrapping
    said = (str(cause).strip().splitlines() or [""])[0]
    reason = (f"the database refused to store message <{row['msgid'][:200]}> "
              f"({type(cause).__name__}: {said[:300]}); a gap in lorelab's checks: "
              "please report it")
    return PreparedBatch(quarantine=[{
        "sha256": hashlib.sha256(raw).hexdigest(),
        "source": f"message <{row['msgid'][:200]}>",
        "reason": clean_text(reason, "reason", []),
        "raw": row["raw"],
        "raw_size": len(raw),
        "truncated": False,
    }])


# Built once: the lists they look up are their parameters.
_MESSAGE_IDS = sa.select(Message.msgid, Message.id).where(in_param(Message.msgid, "msgids"))
_LINKS = sa.select(MessageList.message_id, MessageList.list_id).where(
    in_param(MessageList.message_id, "messages")
)


def _store_rows(session: Session, batch: PreparedBatch, lists: ListResolver) -> IngestSummary:
    summary = IngestSummary(read=batch.read)
    if batch.quarantine:
        _store_quarantine(session, batch.quarantine, summary)

    # the same mail again is a duplicate; a different mail under a taken id is kept as a copy
    rows, existing, twice = sort_out(session, batch.messages)
    summary.duplicates += twice + len(existing)
    links: set[tuple[int, int]] = set()
    for msgid, message_id in existing.items():
        if name := lists.name_for(rows[msgid]["list_id_header"]):
            links.add((message_id, lists.id_for(session, name)))

    new = [row for msgid, row in rows.items() if msgid not in existing]
    if new:
        related = [r for row in new for r in [*row["references"], row["in_reply_to"]] if r]
        # Series sent without threading headers: their parts find each other's threads.
        candidates = (r for r in new if r["total"] > 1 and not r["in_reply_to"])
        parts = [p for p in map(thread_message, candidates) if is_unthreaded_part(p)]
        threads = ThreadIndex(session, [row["msgid"] for row in new], related, parts)
        for row in new:
            threads.assign(row["msgid"], row["in_reply_to"], row["references"])
        threads.store_new()
        for row in new:
            row["thread_id"] = threads.thread_of[row["msgid"]]
        _insert_messages(session, new)
        id_of = dict(session.connection().execute(
            _MESSAGE_IDS, {"msgids": [r["msgid"] for r in new]}
        ).all())  # fmt: skip
        ids = [id_of[row["msgid"]] for row in new]
        for row, message_id in zip(new, ids, strict=True):
            if name := lists.name_for(row["list_id_header"]):
                links.add((message_id, lists.id_for(session, name)))
        summary.stored = len(new)
        # Merged threads have a new id: take thread ids after all assignments.
        posting_threads = threads.merged | {
            threads.thread_of[r["msgid"]] for r in new if r["kind"] in ("cover", "patch")
        }
        trailer_threads = {threads.thread_of[r["msgid"]] for r in new if has_review_trailers(r)}
        if copies := [r for r in new if r["claimed_msgid"]]:
            posting_threads |= threads_of_claimed(session, copies)
        assembled = update_series(session, posting_threads, trailer_threads)
        summary.series_created = assembled.series_created
        summary.series_updated = assembled.series_updated

    if links:
        conn = session.connection()
        known = set(conn.execute(
            _LINKS, {"messages": list({m for m, _ in links})}
        ).all())  # fmt: skip
        insert_tuples(conn, MessageList.__table__, ("message_id", "list_id"), list(links - known))
    return summary
