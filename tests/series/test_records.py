"""Series records written back, on SQLite and PostgreSQL: each new record gets the id of its own
row, whichever way the database hands the ids out."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from bot.db.models import Series, utcnow
from bot.db.session import Database
from bot.series.records import (
    SERIES_COLUMNS,
    VERSION_COLUMNS,
    SeriesRecord,
    VersionRecord,
    _insert_numbered,
    title_key,
    version_record,
    write,
)

SERIES = Series.__table__


def new_series(title: str) -> SeriesRecord:
    return SeriesRecord(title=title, title_key=title_key(title), author_name="Ada",
                        author_email="ada@example.org", change_id=None, last_mail_at=None,
                        versions=1)  # fmt: skip


KEYS = ("title", "title_key", "author_name", "author_email", "change_id", "last_mail_at",
        "created_at", "updated_at")  # fmt: skip


def insert(conn: sa.Connection, records: list[SeriesRecord]) -> None:
    now = utcnow()
    _insert_numbered(conn, SERIES, KEYS, records, [
        (s.title, s.title_key, s.author_name, s.author_email, None, s.last_mail_at, now, now)
        for s in records
    ])  # fmt: skip


def test_new_records_get_the_ids_of_their_rows(db: Database) -> None:
    """Also after the row with the highest id went in the same transaction: SQLite gives its id
    to the next row then."""
    first = [new_series(f"mm: first {n}") for n in range(3)]
    later = [new_series(f"mm: later {n}") for n in range(5)]
    with db.session() as session:
        conn = session.connection()
        insert(conn, first)
        conn.execute(sa.delete(SERIES).where(SERIES.c.id == first[-1].id))
        insert(conn, later)
        stored = dict(conn.execute(sa.select(SERIES.c.id, SERIES.c.title)).all())
    assert stored == {s.id: s.title for s in [*first[:-1], *later]}


def test_written_records_read_back_as_they_were(db: Database) -> None:
    """Dates, JSON lists and flags go through their columns' conversions (`insert_processed`):
    what a new series and version read back is what was written."""
    when = dt.datetime(2026, 11, 30, 9, 15, 2, 123000, tzinfo=dt.UTC)
    series = new_series("mm: vmscan: batch the lru_lock")
    series.last_mail_at = when
    version = VersionRecord(
        series=series, anchor_msgid="cover@example.org", thread_id=None, version=3,
        title=series.title, author_email="ada@example.org", expected=2, date=when, received=2,
        complete=True, rfc=True, prefixes=["mm-unstable"], notes=["shared id <x@y>"],
        fix_ups=[["fix@example.org", 2]], base_commit="abc123", change_id="20261130-lru",
        updated_at=when, changed=True,
    )  # fmt: skip
    with db.session() as session:
        write(session.connection(), [series], [version])
    with db.session() as session:
        conn = session.connection()
        row = conn.execute(sa.select(*VERSION_COLUMNS)).one()._mapping
        stored = conn.execute(sa.select(*SERIES_COLUMNS)).one()._mapping
    assert stored["id"] == series.id and stored["last_mail_at"] == when
    back = version_record(row, series, {})
    assert row["id"] == version.id and row["series_id"] == series.id
    for name in ("version", "expected", "date", "received", "complete", "rfc", "resend",
                 "prefixes", "notes", "fix_ups", "base_commit", "change_id", "updated_at",
                 "ambiguous", "cover_message_id", "anchor_msgid"):
        assert getattr(back, name) == getattr(version, name), name
