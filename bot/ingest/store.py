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
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import orjson
import sqlalchemy as sa
import zstandard
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from bot.config import IngestSettings, ListSettings
from bot.db.models import (
    MailingList,
    Message,
    MessageList,
    PackedMail,
    QuarantinedMail,
    pack_mail,
    utcnow,
)
from bot.db.session import Database
from bot.db.value_lists import in_param, in_values, insert_tuples, sqlite_inserted_ids
from bot.ingest.collector import frozen_heap, no_collection
from bot.ingest.copies import sort_out, threads_of_claimed
from bot.ingest.prepare import (
    MessageRow,
    PreparedBatch,
    has_review_trailers,
    prepared_batches,
)
from bot.ingest.rules_edition import record_first_mail
from bot.ingest.serial import ingest_transaction
from bot.ingest.sources import MboxFile, RawMail
from bot.ingest.storable import clean_text
from bot.ingest.upkeep import StatisticsUpkeep
from bot.series import rewritten_ids
from bot.series.assemble import update_series
from bot.series.parts import ASSEMBLED_KINDS, ThreadMessage, thread_message
from bot.series.reused_ids import Carrier, part_of
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

    def committed(batch: PreparedBatch, got: IngestSummary, _: None) -> None:
        summary.add(got)
        if on_batch is not None:
            on_batch(batch)

    store_prepared(db, prepared_batches(mails, settings), lists, committed)
    return summary


T = TypeVar("T")


def store_prepared(
    db: Database,
    batches: Iterable[PreparedBatch],
    lists: ListResolver,
    committed: Callable[[PreparedBatch, IngestSummary, T | None], None],
    with_batch: Callable[[Session, PreparedBatch, IngestSummary], T] | None = None,
) -> None:
    """Store `batches` in order, a transaction each. `with_batch(session, batch, stored)` adds
    to the same transaction what must commit with the mail (a cursor, removals, skips);
    `committed(batch, stored, what with_batch returned)` is told of each batch once committed.
    Callbacks, not a generator: a caller's loop would hold the batch before while the next
    one is stored (10 MB more at the peak of a 20,000-message ingest).

    While the batches are stored, what existed before the first is out of every collection,
    and no collection runs inside a transaction (`bot.ingest.collector`); the database's
    statistics are refreshed as the archive grows (`StatisticsUpkeep`). Each batch holds the
    database's ingest lock while it is stored (`bot.ingest.serial`)."""
    upkeep = StatisticsUpkeep(db)
    with frozen_heap():
        for batch in batches:
            with no_collection(), ingest_transaction(db) as session:
                got = store_batch(session, batch, lists=lists)
                extra = with_batch(session, batch, got) if with_batch is not None else None
            upkeep.stored(got.stored)
            committed(batch, got, extra)


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


def _thread_message(row: MessageRow, references: list[str]) -> ThreadMessage:
    """A message row, its References decoded, as series grouping sees it."""
    # `files` as `message_row` wrote it: orjson writes no list shorter than "[]"
    return thread_message({**row._asdict(), "references": references,
                           "prefixes": orjson.loads(row.prefixes), "has_diff": row.files != "[]"})


def _run_parts(with_refs: list[tuple[MessageRow, list[str]]]) -> list[ThreadMessage]:
    """The batch's parts of `git send-email` runs whose ids a server may have rewritten
    (`rewritten_ids.window`), less those that reply to a mail of the batch: sorted out on the
    rows first, as most patches are."""
    msgids = {row.msgid for row, _ in with_refs}
    runs = (_thread_message(row, refs) for row, refs in with_refs
            if row.kind in ("cover", "patch") and row.total > 1 and (
                row.counter <= 1 or not row.in_reply_to
                or row.in_reply_to not in msgids and rewritten_ids.run_start(row.in_reply_to)
            ))  # fmt: skip
    return [p for p in runs if rewritten_ids.window(p) is not None]


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


def _insert_messages(
    session: Session, rows: list[MessageRow], thread_ids: list[int]
) -> Sequence[int]:
    """Insert new message rows in the threads given; their ids, in order.

    Not through SQLAlchemy's insert: RETURNING makes its executemany send the rows one
    statement at a time, and its handling of every parameter cost more than the insert itself.
    A message row holds its values as the driver takes them but for the date, converted here:
    the rows go as tuples to an executemany, or to a COPY on PostgreSQL (psycopg). The ids are
    read back by msgid, but on SQLite (`sqlite_inserted_ids`).
    """
    conn = session.connection()
    insert = _message_insert(conn.dialect)
    date = insert.date
    ingested_at = insert.stamp(utcnow())  # the column's default, once per batch (one commit)
    values = [(*row[:-1], date(row.date), thread_id, ingested_at)
              for row, thread_id in zip(rows, thread_ids, strict=True)]  # fmt: skip
    if insert.copy is None:
        insert_tuples(conn, Message.__table__, _MESSAGE_KEYS, values)
    else:
        # The session's own connection: the COPY is part of the batch's transaction.
        with conn.connection.driver_connection.cursor() as cursor, cursor.copy(insert.copy) as out:
            for row in values:
                out.write_row(row)
    if conn.dialect.name == "sqlite":
        return sqlite_inserted_ids(conn, len(rows))
    id_of = dict(conn.execute(_MESSAGE_IDS, {"msgids": [r.msgid for r in rows]}).all())
    return [id_of[r.msgid] for r in rows]


# The columns of a message row (`date` last) and those the store fills in, in the order
# `_insert_messages` gives their values.
_MESSAGE_KEYS = (*MessageRow._fields, "thread_id", "ingested_at")


@dataclass(frozen=True)
class _MessageInsert:
    """How message rows go to one database: the bind processors of the date and of the time of
    storing, and psycopg's COPY statement (None: an executemany)."""

    date: Callable[[Any], Any]
    stamp: Callable[[Any], Any]
    copy: str | None


@functools.cache
def _message_insert(dialect: Dialect) -> _MessageInsert:
    table = Message.__table__
    copy = None
    if dialect.driver == "psycopg":
        names = ", ".join(dialect.identifier_preparer.quote(k) for k in _MESSAGE_KEYS)
        copy = f"COPY {table.name} ({names}) FROM STDIN"
    return _MessageInsert(date=table.c.date.type._cached_bind_processor(dialect),
                          stamp=table.c.ingested_at.type._cached_bind_processor(dialect),
                          copy=copy)  # fmt: skip


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
    raw = zstandard.ZstdDecompressor().decompress(row.raw)
    cause = getattr(exc, "orig", None) or exc  # the driver's words, not SQLAlchemy's wrapping
    said = (str(cause).strip().splitlines() or [""])[0]
    reason = (f"the database refused to store message <{row.msgid[:200]}> "
              f"({type(cause).__name__}: {said[:300]}); a gap in lorelab's checks: "
              "please report it")
    return PreparedBatch(quarantine=[{
        "sha256": hashlib.sha256(raw).hexdigest(),
        "source": f"message <{row.msgid[:200]}>",
        "reason": clean_text(reason, "reason", []),
        "raw": PackedMail(row.raw),  # compressed already
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
        if name := lists.name_for(rows[msgid].list_id_header):
            links.add((message_id, lists.id_for(session, name)))

    new = [row for msgid, row in rows.items() if msgid not in existing]
    if new:
        with_refs = [(row, orjson.loads(row.references)) for row in new]  # References decoded
        related = [r for row, refs in with_refs for r in [*refs, row.in_reply_to] if r]
        # Series sent without threading headers: their parts find each other's threads.
        candidates = (_thread_message(row, refs) for row, refs in with_refs
                      if row.total > 1 and not row.in_reply_to and not refs)  # fmt: skip
        parts = [p for p in candidates if is_unthreaded_part(p)]
        copies = [row for row in new if row.claimed_msgid]
        claimed = {row.claimed_msgid for row in copies}
        threads = ThreadIndex(session, [row.msgid for row in new], related, parts, claimed,
                              _run_parts(with_refs))
        for row, refs in with_refs:
            threads.assign(row.msgid, row.in_reply_to, refs, row.date)
            if row.claimed_msgid or row.msgid in claimed:  # a carrier of an id several carry
                threads.reused.add(row.claimed_msgid or row.msgid,
                                   Carrier(row.msgid, row.date, part_of(row)))
        threads.store_new()
        record_first_mail(session.connection())
        ids = _insert_messages(session, new, [threads.thread_of[row.msgid] for row in new])
        for row, message_id in zip(new, ids, strict=True):
            if name := lists.name_for(row.list_id_header):
                links.add((message_id, lists.id_for(session, name)))
        summary.stored = len(new)
        # Merged threads have a new id: take thread ids after all assignments.
        posting_threads = threads.merged | {
            threads.thread_of[r.msgid] for r in new if r.kind in ASSEMBLED_KINDS
        }
        trailer_threads = {threads.thread_of[r.msgid] for r in new if has_review_trailers(r)}
        if copies:
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
