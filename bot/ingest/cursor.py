"""Source cursors: where a live source (lore feed, public-inbox git epoch) was last read up to.

A cursor row is keyed by (kind, location). `advance` is called inside the transaction that
stores the messages it covers, so the cursor never runs ahead of what is durably stored;
`record_poll` notes the time and outcome of a poll in a transaction of its own. What a walk
skipped (an archive object missing or corrupt) is shown beside the cursor.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import IngestCursor, IngestSkip, utcnow
from bot.db.session import Database
from bot.ingest.serial import ingest_transaction


@dataclass(frozen=True)
class CursorKey:
    kind: str  # "lore" or "pi-git"
    location: str  # the archive's URL or path, as configured
    list_name: str | None = None


def load_cursor(session: Session, key: CursorKey) -> IngestCursor | None:
    return session.scalar(
        sa.select(IngestCursor).where(
            IngestCursor.kind == key.kind, IngestCursor.location == key.location
        )
    )


def load_position(db: Database, key: CursorKey) -> dict[str, Any]:
    """The stored position (empty for a source never read)."""
    with db.session() as session:
        cursor = load_cursor(session, key)
        return dict(cursor.position) if cursor is not None else {}


def _get_or_create(session: Session, key: CursorKey) -> IngestCursor:
    cursor = load_cursor(session, key)
    if cursor is None:
        cursor = IngestCursor(
            kind=key.kind, location=key.location, list_name=key.list_name, position={},
            messages_ingested=0,
        )
        session.add(cursor)
        session.flush()
    return cursor


def advance(session: Session, key: CursorKey, update: dict[str, Any], stored: int) -> None:
    """Merge `update` into the position and count `stored` messages, in the caller's transaction."""
    cursor = _get_or_create(session, key)
    cursor.position = {**cursor.position, **update}
    cursor.messages_ingested += stored
    cursor.updated_at = utcnow()


def record_poll(db: Database, key: CursorKey, error: str | None = None) -> None:
    """Note that a poll ended now, and how: `error` is None after a good poll."""
    with ingest_transaction(db) as session:  # another ingest may be writing this cursor
        cursor = _get_or_create(session, key)
        cursor.last_poll = utcnow()
        cursor.last_error = error
        cursor.updated_at = utcnow()


SKIPS_SHOWN = 20  # per source, the newest; the count says how many there are in all


def cursor_dict(cursor: IngestCursor, skips: Sequence[IngestSkip] = (), skipped: int = 0
                ) -> dict[str, Any]:
    """A cursor as `lorelab sources --json` shows it, with what its walk skipped."""

    def iso(value: dt.datetime | None) -> str | None:
        return value.isoformat() if value else None

    return {
        "kind": cursor.kind,
        "location": cursor.location,
        "list": cursor.list_name,
        "position": cursor.position,
        "messages_ingested": cursor.messages_ingested,
        "last_poll": iso(cursor.last_poll),
        "last_error": cursor.last_error,
        "skipped": skipped,
        "skips": [
            {"epoch": s.epoch, "commit": s.commit, "object": s.object, "reason": s.reason,
             "detected_at": iso(s.detected_at)}
            for s in skips
        ],
    }


def all_cursors(db: Database, kinds: tuple[str, ...] = ("lore", "pi-git")) -> list[dict[str, Any]]:
    with db.session() as session:
        rows = list(session.scalars(
            sa.select(IngestCursor).where(IngestCursor.kind.in_(kinds)).order_by(IngestCursor.id)
        ))
        counts = dict(session.execute(
            sa.select(IngestSkip.source, sa.func.count()).group_by(IngestSkip.source)
        ).all())
        out = []
        for row in rows:
            skips = list(session.scalars(
                sa.select(IngestSkip).where(IngestSkip.source == row.location)
                .order_by(IngestSkip.id.desc()).limit(SKIPS_SHOWN)
            )) if counts.get(row.location) else []
            out.append(cursor_dict(row, skips, counts.get(row.location, 0)))
        return out
