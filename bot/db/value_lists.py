"""`column IN (values)` with the values sent as one parameter, for lists a batch looks up.

SQLAlchemy's `column.in_(values)` binds one parameter per value: each execution renders the
statement anew for the list's length (a tenth of the storing process's CPU went there at 1,000
messages a batch), the database parses and plans a text it has not seen, and long lists had to
be cut into chunks. `in_values` sends the list as one parameter, so the statement is the same
text whatever the length: an array on PostgreSQL (`column = ANY(:values)`), a JSON array on
SQLite (`column IN (SELECT value FROM json_each(:values))`). Both use the column's index.

`in_param` is the same condition with the list named and given at execution: a statement built
once with it is not built, nor its cache key made, again for every batch (a tenth of a
millisecond each, for the few dozen statements a batch sends).

`insert_tuples` is the other way values go in bulk: a batch's rows of integers and text, as
tuples straight to the driver's executemany; `insert_processed` the same for rows whose columns
need their type's conversion (dates, JSON, booleans); on SQLite, `sqlite_inserted_ids` gives
their ids.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal


def in_values(column: sa.ColumnElement[Any], values: Iterable[Any]) -> sa.ColumnElement[bool]:
    """`column IN values`, with `values` (ints or strings) bound as one parameter."""
    return _InValues(column, sa.bindparam(None, list(values), type_=_ValueList(column.type)))


def in_param(column: sa.ColumnElement[Any], name: str) -> sa.ColumnElement[bool]:
    """`column IN :name`, the list given as the execution's parameter `name`."""
    return _InValues(column, list_param(column, name))


def list_param(column: sa.ColumnElement[Any], name: str) -> sa.BindParameter[list[Any]]:
    """A parameter `name` holding a list of `column`'s values, for a statement written out (as
    `in_param` binds it: an array on PostgreSQL, JSON text for `json_each` on SQLite)."""
    return sa.bindparam(name, type_=_ValueList(column.type))


def insert_tuples(
    conn: sa.Connection, table: sa.Table, keys: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert `rows`, each the values of the columns `keys` in that order. Only for columns
    whose values the driver takes as they are (integers, text: no bind processor, no default
    to fill in): SQLAlchemy's executemany handled every row's parameters one by one, which cost
    more than the insert itself (20,000 list links a 20,000-message ingest)."""
    if rows:
        conn.exec_driver_sql(_insert_sql(table, keys, conn.dialect), rows)


def insert_processed(
    conn: sa.Connection, table: sa.Table, keys: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """`insert_tuples` for rows whose values go through their columns' bind processors first,
    as SQLAlchemy's executemany would send them, None included (JSON's None is `null`): the
    processors are looked up once, not for every row's dictionary."""
    processors = _bind_processors(table, keys, conn.dialect)
    if processors:
        processed = []
        for row in rows:
            values = list(row)
            for index, process in processors:
                values[index] = process(values[index])
            processed.append(tuple(values))
        rows = processed
    insert_tuples(conn, table, keys, rows)


@functools.cache
def _bind_processors(
    table: sa.Table, keys: tuple[str, ...], dialect: sa.Dialect
) -> tuple[tuple[int, Any], ...]:
    """The bind processor of each of `keys`' columns that has one, with its place in a row."""
    return tuple((index, process) for index, key in enumerate(keys)
                 if (process := table.c[key].type._cached_bind_processor(dialect)) is not None)


def sqlite_inserted_ids(conn: sa.Connection, count: int) -> range:
    """The ids of the last `count` rows this SQLite connection inserted into a table, in the
    order they went in: SQLite numbers new rows one after another (the largest rowid plus one),
    and no other connection writes while this one's transaction does. Reading them back (by a
    unique column, or with RETURNING) cost more than the insert itself."""
    last = conn.exec_driver_sql("SELECT last_insert_rowid()").scalar_one()
    return range(last - count + 1, last + 1)


@functools.cache
def _insert_sql(table: sa.Table, keys: tuple[str, ...], dialect: sa.Dialect) -> str:
    quote = dialect.identifier_preparer
    mark = "?" if dialect.paramstyle == "qmark" else "%s"
    return (
        f"INSERT INTO {quote.format_table(table)} ({', '.join(quote.quote(k) for k in keys)})"
        f" VALUES ({', '.join(mark for _ in keys)})"
    )


class _ValueList(sa.TypeDecorator[list[Any]]):
    """A list of the column's values: an array of its type on PostgreSQL, JSON text elsewhere."""

    impl = sa.Text
    cache_ok = True

    def __init__(self, item: sa.types.TypeEngine[Any]) -> None:
        super().__init__()
        self.item = item

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "postgresql":
            # Imported here, where the engine has loaded it already: a SQLite command need
            # not (30 ms of its start).
            from sqlalchemy.dialects.postgresql import ARRAY

            return dialect.type_descriptor(ARRAY(self.item))
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

    def __init__(self, column: sa.ColumnElement[Any], values: sa.BindParameter[Any]) -> None:
        self.column = column
        self.values = values


@compiles(_InValues)
def _json_each(element: _InValues, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    return f"{column} IN (SELECT value FROM json_each({compiler.process(element.values, **kw)}))"


@compiles(_InValues, "postgresql")
def _any_array(element: _InValues, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    return f"{column} = ANY({compiler.process(element.values, **kw)})"
