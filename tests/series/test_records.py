"""Series records written back, on SQLite and PostgreSQL: each new record gets the id of its own
row, whichever way the database hands the ids out."""

from __future__ import annotations

import sqlalchemy as sa

from bot.db.models import Series, utcnow
from bot.db.session import Database
from bot.series.records import SeriesRecord, _insert_numbered, title_key

SERIES = Series.__table__


def new_series(title: str) -> SeriesRecord:
    return SeriesRecord(title=title, title_key=title_key(title), author_name="Ada",
                        author_email="ada@example.org", change_id=None, last_mail_at=None,
                        versions=1)  # fmt: skip


def insert(conn: sa.Connection, records: list[SeriesRecord]) -> None:
    now = utcnow()
    _insert_numbered(conn, SERIES, records, [
        {"title": s.title, "title_key": s.title_key, "author_name": s.author_name,
         "author_email": s.author_email, "change_id": None, "last_mail_at": None,
         "created_at": now, "updated_at": now}
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
