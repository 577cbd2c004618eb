"""Ingest batches stored one at a time per database, whichever process stores them.

Two ingest processes can write one database at once: the delivery agent beside a backfill, a
poll beside a maintainer's `lorelab ingest mbox`. A batch reads what is stored (which thread a
reply joins, which version a patch continues) and writes what follows from it, so two batches
interleaved each acted on a state the other was changing. On PostgreSQL they deadlocked on the
unique keys of threads (the loser's command ended in a traceback), or all ended well having put
mail into other series than one process would have. On SQLite a batch whose reads began before
another's commit could not write at all ("database is locked", which no busy timeout waits out).

So each batch's transaction begins by taking the database's ingest lock, held until it commits
or rolls back, and a second writer waits for it: SQLite's write lock (`BEGIN IMMEDIATE`),
PostgreSQL's transaction-level advisory lock `INGEST_LOCK_KEY`; on both for at most
`LOCK_WAIT_SECONDS` (30), after which the batch fails as a database that cannot be reached now
does (a stopped `ingest mbox` holding it must not hang every delivery). A batch holds it for the
tenths of a second that storing takes (parsing is done before, in the workers), so concurrent
ingests go on side by side and store what one process storing all of their mail would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session

from bot.db.session import LOCK_WAIT_SECONDS, Database

# The advisory lock's key: a constant of lorelab's own, the bytes of "lorelab:" read as a number.
INGEST_LOCK_KEY = int.from_bytes(b"lorelab:", "big")


def take_ingest_lock(session: Session) -> None:
    """Wait for the database's ingest lock and hold it to the end of the session's transaction.
    Call it first in the transaction: a SQLite transaction that has read already can only ask
    for the write lock once it writes."""
    conn = session.connection()
    if conn.dialect.name == "sqlite":
        if not conn.connection.driver_connection.in_transaction:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        return
    # One round trip; the timeout, in ms, holds for this transaction only
    conn.exec_driver_sql(f"SET LOCAL lock_timeout = {round(LOCK_WAIT_SECONDS * 1000)}; "
                         f"SELECT pg_advisory_xact_lock({INGEST_LOCK_KEY})")


@contextmanager
def ingest_transaction(db: Database) -> Iterator[Session]:
    """A session for one batch, holding the ingest lock; it commits on success."""
    with db.session() as session:
        take_ingest_lock(session)
        yield session
