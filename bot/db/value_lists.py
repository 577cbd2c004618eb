"""`column IN (values)` with the values sent as one parameter, for lists a batch looks up.

SQLAlchemy's `column.in_(values)` binds one parameter per value: each execution renders the
statement anew for the list's length (a tenth of the storing process's CPU went there at 1,000
messages a batch), the database parses and plans a text it has not seen, and long lists had to
be cut into chunks. `in_values` sends the list as one parameter, so the statement is the same
text whatever the length: an array on PostgreSQL (`column = ANY(:values)`), a JSON array on
SQLite (`column IN (SELECT value FROM json_each(:values))`). Both use the column's index.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal


def in_values(column: sa.ColumnElement[Any], values: Iterable[Any]) -> sa.ColumnElement[bool]:
    """`column IN values`, with `values` (ints or strings) bound as one parameter."""
    return _InValues(column, list(values))


class _ValueList(sa.TypeDecorator[list[Any]]):
    """A list of the column's values: an array of its type on PostgreSQL, JSON text elsewhere."""

    impl = sa.Text
    cache_ok = True

    def __init__(self, item: sa.types.TypeEngine[Any]) -> None:
        super().__init__()
        self.item = item

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(postgresql.ARRAY(self.item))
        return dialect.type_descriptor(sa.Text())

    def process_bind_param(self, value: list[Any] | None, dialect: sa.Dialect) -> Any:
        if dialect.name == "postgresql":
            return value
        try:
            return orjson.dumps(value).decode()  # a fifth of the cost of json.dumps
        except TypeError:  # a lone surrogate, which only the stdlib writes (escaped)
            return json.dumps(value)


class _InValues(sa.ColumnElement[bool]):
    inherit_cache = True
    type = sa.Boolean()
    _is_implicitly_boolean = True  # a condition: SQLite would otherwise get `... = 1`
    _traverse_internals = [
        ("column", InternalTraversal.dp_clauseelement),
        ("values", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, column: sa.ColumnElement[Any], values: list[Any]) -> None:
        self.column = column
        self.values = sa.bindparam(None, values, type_=_ValueList(column.type))


@compiles(_InValues)
def _json_each(element: _InValues, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    return f"{column} IN (SELECT value FROM json_each({compiler.process(element.values, **kw)}))"


@compiles(_InValues, "postgresql")
def _any_array(element: _InValues, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    return f"{column} = ANY({compiler.process(element.values, **kw)})"
