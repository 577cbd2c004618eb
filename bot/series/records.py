"""Series and series versions as plain records that assembly changes, written back with Core.

Assembly (`bot.series.assemble`) reads the rows a batch may change into these records, changes
them in memory and hands them to `write` once per batch, which sends a few statements per table
whatever the number of rows: executemany, and RETURNING for the ids of new series and versions.
ORM objects did the same work at about half of the storing process's CPU: instrumented
attributes, the unit of work's bookkeeping, lazy loads of each series' versions, a flush for
every patch that moved.

A series is deleted when its last version goes; its title, author, change-id and last mail come
from its versions (`bot.series.membership`).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from bot.db.models import Patch, Series, SeriesVersion, utcnow
from bot.db.value_lists import (
    in_values,
    insert_processed,
    insert_tuples,
    sqlite_inserted_ids,
)

_SERIES = Series.__table__
_VERSIONS = SeriesVersion.__table__
_PATCHES = Patch.__table__

_NOT_WORD = re.compile(r"[^a-z0-9]+")
# The statements every batch sends, built once: the lists they look up are their parameters.
_UPDATE_VERSION = sa.update(_VERSIONS).where(_VERSIONS.c.id == sa.bindparam("version_id"))
_UPDATE_SERIES = sa.update(_SERIES).where(_SERIES.c.id == sa.bindparam("series_id"))


@functools.lru_cache(maxsize=1 << 14)  # a batch keys its authors' titles, and again the next
def title_key(title: str) -> str:
    """A title normalised for matching versions: case, punctuation and spacing ignored."""
    return _NOT_WORD.sub(" ", title.lower()).strip()[:500]


@dataclass(eq=False)
class SeriesRecord:
    """A `series` row. `versions` counts its versions as this batch leaves them."""

    title: str
    title_key: str
    author_name: str
    author_email: str
    change_id: str | None
    last_mail_at: dt.datetime | None
    versions: int
    id: int | None = None  # None until written
    changed: bool = False  # a posting of it was stored, or it gained or lost a version


SERIES_COLUMNS = (
    Series.id, Series.title, Series.title_key, Series.author_name, Series.author_email,
    Series.change_id, Series.last_mail_at,
)  # fmt: skip


@dataclass(eq=False)
class VersionRecord:
    """A `series_versions` row with its patches (index -> message id)."""

    series: SeriesRecord | None
    anchor_msgid: str
    thread_id: int | None
    version: int
    title: str
    author_email: str
    expected: int
    date: dt.datetime | None
    received: int = 0
    complete: bool = False
    cover_message_id: int | None = None
    rfc: bool = False
    resend: bool = False
    prefixes: list[str] = field(default_factory=list)
    base_commit: str | None = None
    change_id: str | None = None
    notes: list[str] = field(default_factory=list)
    updated_at: dt.datetime | None = None
    ambiguous: bool = False
    fix_ups: list[list[Any]] = field(default_factory=list)  # [msgid, number fixed] pairs
    patches: dict[int, int] = field(default_factory=dict)
    id: int | None = None  # None until written
    stored_patches: dict[int, int] = field(default_factory=dict)  # as the database holds them
    stored_anchor: str | None = None  # as the database holds it
    changed: bool = False
    removed: bool = False


# The columns a version record mirrors, by name: all but the ids, the title's key, which is
# written from the title, the partial reroll's link, which `bot.series.rerolls` writes once the
# versions are, and the run measuring the same patches, which the planner writes.
_VERSION_FIELDS = tuple(c.key for c in _VERSIONS.c if c.key not in (
    "id", "series_id", "title_key", "reroll_of_id", "measured_by_run_id"))
VERSION_COLUMNS = (SeriesVersion.id, SeriesVersion.series_id) + tuple(
    SeriesVersion.__table__.c[k] for k in _VERSION_FIELDS
)


def series_record(row: Mapping[str, Any], versions: int) -> SeriesRecord:
    """A record of a row read with `SERIES_COLUMNS`, the series having `versions` versions."""
    return SeriesRecord(**{c.key: row[c.key] for c in SERIES_COLUMNS}, versions=versions)


def version_record(
    row: Mapping[str, Any], series: SeriesRecord | None, patches: dict[int, int]
) -> VersionRecord:
    """A record of a row read with `VERSION_COLUMNS`, with its stored patches."""
    values = {k: row[k] for k in _VERSION_FIELDS}
    return VersionRecord(**values, series=series, id=row["id"], patches=dict(patches),
                         stored_patches=patches, stored_anchor=row["anchor_msgid"])


def write(
    conn: sa.Connection, series: Sequence[SeriesRecord], versions: Sequence[VersionRecord]
) -> None:
    """Write what changed of these records, in an order no constraint objects to: a message's
    patch row and a version's anchor are freed before anyone takes them."""
    now = utcnow()
    # Those stored before: a series inserted now is written whole, not updated after.
    updated = [s for s in series if s.changed and s.id is not None]
    created = [s for s in series if s.id is None and s.versions]
    _insert_numbered(conn, _SERIES, _SERIES_KEYS, created, [
        (s.title, s.title_key, s.author_name, s.author_email, s.change_id, s.last_mail_at,
         now, now)
        for s in created
    ])  # fmt: skip
    gone = [m for v in versions for i, m in v.stored_patches.items()
            if v.removed or v.patches.get(i) != m]  # fmt: skip
    if gone:
        conn.execute(sa.delete(_PATCHES).where(in_values(_PATCHES.c.message_id, gone)))
    removed = [v.id for v in versions if v.removed and v.id is not None]
    if removed:
        conn.execute(sa.delete(_VERSIONS).where(in_values(_VERSIONS.c.id, removed)))
    kept = [v for v in versions if v.changed and not v.removed]
    stored = [v for v in kept if v.id is not None]
    # A version may take the anchor another one gives up (`assemble._anchor_for`): after it.
    freed = {v.stored_anchor for v in stored if v.anchor_msgid != v.stored_anchor}
    for turn in (
        [v for v in stored if v.anchor_msgid not in freed],
        [v for v in stored if v.anchor_msgid in freed],
    ):
        if turn:
            conn.execute(
                _UPDATE_VERSION, [{**_version_values(v), "version_id": v.id} for v in turn]
            )
    new = [v for v in kept if v.id is None]
    _insert_numbered(conn, _VERSIONS, _VERSION_KEYS, new, [_version_row(v) for v in new])
    placed = [(v.id, i, m) for v in kept for i, m in v.patches.items()
              if v.stored_patches.get(i) != m]  # fmt: skip
    insert_tuples(conn, _PATCHES, ("series_version_id", "index", "message_id"), placed)
    _write_series(conn, updated, now)


def _version_values(version: VersionRecord) -> dict[str, Any]:
    return dict(zip(_VERSION_KEYS, _version_row(version), strict=True))


def _version_row(version: VersionRecord) -> tuple[Any, ...]:
    """A version's values, in the order of `_VERSION_KEYS`."""
    assert version.series is not None and version.series.id is not None
    return (*[getattr(version, k) for k in _VERSION_FIELDS], version.series.id,
            title_key(version.title))


_SERIES_KEYS = ("title", "title_key", "author_name", "author_email", "change_id",
                "last_mail_at", "created_at", "updated_at")  # fmt: skip
_VERSION_KEYS = (*_VERSION_FIELDS, "series_id", "title_key")


def _insert_numbered(
    conn: sa.Connection, table: sa.Table, keys: tuple[str, ...], records: Sequence[Any],
    rows: list[tuple[Any, ...]],
) -> None:  # fmt: skip
    """Insert `rows` (the values of `keys`) and give each record its new id.

    On SQLite the rows go as one executemany of tuples (`insert_processed`) and the ids are
    those SQLite numbers them with (`sqlite_inserted_ids`): RETURNING came with SQLAlchemy's
    statements of a few rows each, a text of another length at every batch that SQLite
    compiled anew. On PostgreSQL RETURNING sends the ids back, in an order it does not
    promise; they follow the rows, as its sequence hands out rising numbers in the order of
    VALUES and a later statement gets later ones. (SQLAlchemy's own `sort_by_parameter_order`
    falls back to one statement per row on SQLite.)"""
    if not rows:
        return
    ids: Iterable[int]
    if conn.dialect.name == "sqlite":
        insert_processed(conn, table, keys, rows)
        ids = sqlite_inserted_ids(conn, len(rows))
    else:
        ids = sorted(conn.execute(sa.insert(table).returning(table.c.id),
                                  [dict(zip(keys, row, strict=True)) for row in rows]).scalars())
    for record, new_id in zip(records, ids, strict=True):
        record.id = new_id


def _write_series(conn: sa.Connection, series: list[SeriesRecord], now: dt.datetime) -> None:
    """A series with no version left is deleted; the others' columns are updated."""
    empty = [s.id for s in series if not s.versions]
    if empty:
        conn.execute(sa.delete(_SERIES).where(in_values(_SERIES.c.id, empty)))
    kept = [s for s in series if s.versions]
    if kept:
        conn.execute(_UPDATE_SERIES, [
            {"series_id": s.id, "title": s.title, "title_key": s.title_key,
             "author_name": s.author_name, "author_email": s.author_email,
             "change_id": s.change_id, "last_mail_at": s.last_mail_at, "updated_at": now}
            for s in kept
        ])  # fmt: skip
