"""Recording the SQL statements lorelab sends, for tests of how many and which (query plans,
statement counts, columns read)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa


@contextmanager
def statements() -> Iterator[list[tuple[str, Any]]]:
    """Every statement any engine sends while the block runs, with its (first) parameters."""
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
               executemany: bool) -> None:
        many = executemany and isinstance(parameters, (list, tuple)) and parameters
        seen.append((statement, parameters[0] if many else parameters))

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", record)
