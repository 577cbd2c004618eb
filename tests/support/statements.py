"""Recording the SQL statements lorelab sends, for tests of how many and which (query plans,
statement counts, columns read)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa


@contextmanager
def statements() -> Iterator[list[tuple[str, Any]]]:
    """Every statement any engine sends from this thread while the block runs, with its
    (first) parameters.

    The listener is on every engine of the process, and other threads send SQL while a test
    runs: the PostgreSQL template's background threads (`tests/support/databases.py`) make the
    next test's copy and drop the copies of tests before. CI once counted one statement more for
    `series list --limit 4` than for `--limit 1`; a drop sent in the block is counted without
    this filter (seen here). The code these tests measure sends its SQL from the calling
    thread."""
    seen: list[tuple[str, Any]] = []
    caller = threading.get_ident()

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
               executemany: bool) -> None:
        if threading.get_ident() != caller:
            return
        many = executemany and isinstance(parameters, (list, tuple)) and parameters
        seen.append((statement, parameters[0] if many else parameters))

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", record)
