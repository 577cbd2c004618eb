"""The statement recorder the statement-count tests use (`tests.support.statements`): it counts
what the code under test sends, not what another thread of the test process sends meanwhile (the
PostgreSQL template's background threads copy and drop test databases while tests run)."""

from __future__ import annotations

import threading
from pathlib import Path

import sqlalchemy as sa

from tests.support.statements import statements


def test_only_the_calling_threads_statements_are_counted(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'counted.db'}")

    def elsewhere() -> None:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 'another thread'"))

    try:
        with statements() as seen:
            other = threading.Thread(target=elsewhere)
            other.start()
            other.join()
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT 'this thread'"))
    finally:
        engine.dispose()
    sent = [sql for sql, _ in seen]
    assert "SELECT 'this thread'" in sent
    assert "SELECT 'another thread'" not in sent
