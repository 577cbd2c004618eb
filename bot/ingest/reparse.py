"""Stored mail read again by this lorelab's parser, and its series assembled again, after an
upgrade changed how lorelab reads mail or groups it into series.

A message's row keeps what the parser read when the mail came (its kind, subject fields,
trailers, files) and series are built from those rows. When a newer lorelab reads some mail
otherwise, the rows stored before keep the old reading, and the series built from it, until the
mail is read again. Example: a review whose client dropped "Re:" under the patch's own numbered
subject was read as a patch that had lost its diff; its trailers were lost and the reply made
a series of the reviewer's own. Read again, it is a review: its row is updated, the version the
reply made is taken apart, and the trailers go to the patch.

`reparse` walks the stored messages in id order, a batch per transaction (holding the ingest
lock, as a batch of new mail does: `bot.ingest.serial`), parses each one again from its raw
mail, updates the rows whose reading changed, and assembles again the series of every thread
that holds a cover letter or patch among them, changed or not: a newer lorelab may group the
same rows otherwise (a `[PATCH 4/3]` sent later joins its posting), and assembly stores only
what differs. Running it twice changes nothing the second time; stopped, it can be run again
from the start. Once it has read every message, the store records this lorelab's rules edition
(`bot.ingest.rules_edition`), and lorelab no longer advises running it.

The Message-ID and the threading headers stay as stored: the Message-ID is the row's identity
(a copy's is the one lorelab gave it, `bot.ingest.copies`) and a message's thread was chosen
when it came; a message whose In-Reply-To or References read otherwise now is counted, not
moved. A message that the parser now refuses keeps its row as stored, and is counted too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy import LargeBinary
from sqlalchemy.orm import Session

from bot.db.models import Message, unpack_mail
from bot.db.session import Database, json_text
from bot.ingest.collector import no_collection
from bot.ingest.copies import copy_note
from bot.ingest.prepare import MessageRow, message_row, parser_failure
from bot.ingest.rules_edition import record_reread
from bot.ingest.serial import ingest_transaction
from bot.mail import UnparseableMessage, parse_message
from bot.series.assemble import update_series

PART_KINDS = ("cover", "patch")  # the kinds series are assembled from
THREADING = ("in_reply_to", "references")  # compared, never updated: they place the message
# What the parser reads that a row keeps; not the Message-ID, the raw mail, the copy's claim.
READ = tuple(
    name for name in MessageRow._fields
    if name not in {"msgid", "raw", "raw_size", "claimed_msgid", *THREADING}
)  # fmt: skip
JSON_READ = frozenset(c.key for c in Message.__table__.c if isinstance(c.type, sa.JSON))
BATCH_SIZE = 1000

_table = Message.__table__
_STORED = sa.select(
    _table.c.id, _table.c.thread_id, sa.type_coerce(_table.c.raw, LargeBinary).label("packed"),
    _table.c.msgid, _table.c.claimed_msgid, *(_table.c[name] for name in (*THREADING, *READ)),
).order_by(_table.c.id)  # fmt: skip
_UPDATE = (
    sa.update(_table)
    .where(_table.c.id == sa.bindparam("row_id"))
    .values({name: sa.bindparam(f"new_{name}", type_=_table.c[name].type) for name in READ})
)


@dataclass
class ReparseSummary:
    """What reading the stored mail again changed."""

    read: int = 0
    changed: int = 0  # rows updated
    columns: Counter[str] = field(default_factory=Counter)  # how many rows each column changed in
    threading_differs: int = 0  # In-Reply-To or References read otherwise: kept as stored
    unparseable: int = 0  # refused by the parser now: kept as stored
    unparseable_reasons: list[str] = field(default_factory=list)  # the first few
    series_created: int = 0
    series_updated: int = 0
    versions_removed: int = 0  # versions made of mail that is read now as no patch

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["columns"] = dict(self.columns.most_common())
        return out

    def describe(self) -> list[str]:
        """The summary as `lorelab ingest reparse` prints it, line by line."""
        columns = ", ".join(f"{name} {n}" for name, n in self.columns.most_common())
        lines = [
            f"read again {self.read}: changed {self.changed}" + (f" ({columns})" if columns else "")
            + f"; series versions new {self.series_created}, updated {self.series_updated}, "
            f"removed {self.versions_removed}"
        ]
        if self.threading_differs:
            lines.append(f"  {self.threading_differs} read with other In-Reply-To or References:"
                         " kept in the threads they were stored in")
        if self.unparseable:
            lines.append(f"  {self.unparseable} could not be parsed again: kept as stored")
            lines += [f"    {reason}" for reason in self.unparseable_reasons]
        return lines


def reparse(
    db: Database, *, batch_size: int = BATCH_SIZE,
    on_batch: Callable[[ReparseSummary], None] | None = None,
) -> ReparseSummary:
    """Read every stored message again; update what reads otherwise and its threads' series."""
    summary = ReparseSummary()
    after = 0
    while True:
        with no_collection(), ingest_transaction(db) as session:
            conn = session.connection()
            rows = conn.execute(_STORED.where(_table.c.id > after).limit(batch_size)).all()
            if not rows:  # all read again, those stored meanwhile by this lorelab too
                record_reread(conn)
                break
            after = rows[-1].id
            _reparse_batch(session, rows, summary)
        if on_batch is not None:
            on_batch(summary)
    return summary


def _reparse_batch(session: Session, rows: list[Any], summary: ReparseSummary) -> None:
    updates: list[dict[str, Any]] = []
    posting_threads: set[int] = set()
    trailer_threads: set[int] = set()
    no_longer_parts: list[int] = []
    for row in rows:
        summary.read += 1
        if row.thread_id is not None and row.kind in PART_KINDS:
            posting_threads.add(row.thread_id)  # grouping may have changed, if not the row
        read = _read_again(row, summary)
        if read is None:
            continue
        if any(_stored_form(name, getattr(read, name)) != getattr(row, name) for name in THREADING):
            summary.threading_differs += 1
        changed = [name for name in READ if _stored_form(name, getattr(read, name))
                   != getattr(row, name)]  # fmt: skip
        if not changed:
            continue
        summary.changed += 1
        summary.columns.update(changed)
        updates.append({"row_id": row.id, **{
            f"new_{name}": _stored_form(name, getattr(read, name)) for name in READ
        }})  # fmt: skip
        if row.thread_id is None:
            continue
        trailer_threads.add(row.thread_id)
        if read.kind in PART_KINDS:  # stored as a part, its thread is in already
            posting_threads.add(row.thread_id)
        if row.kind == "patch" and read.kind != "patch":
            no_longer_parts.append(row.id)
    if updates:
        session.connection().execute(_UPDATE, updates)
    if not (posting_threads or trailer_threads):
        return
    assembled = update_series(session, posting_threads, trailer_threads, no_longer_parts)
    summary.series_created += assembled.series_created
    summary.series_updated += assembled.series_updated
    summary.versions_removed += assembled.versions_removed


def _read_again(row: Any, summary: ReparseSummary) -> MessageRow | None:
    """The row this lorelab makes of the stored mail, or None (counted) if it refuses it."""
    raw = unpack_mail(row.packed)
    try:
        read = message_row(parse_message(raw, recipients=False), raw, compressed=row.packed)
        if row.claimed_msgid is None:
            return read
        # A copy (`bot.ingest.copies`) keeps the note of the id it claims and the one it has.
        problems = [*orjson.loads(read.problems), copy_note(row.claimed_msgid, row.msgid)]
        return read._replace(problems=json_text(problems))
    except UnparseableMessage as exc:
        reason = str(exc)
    except Exception as exc:  # noqa: BLE001 - one mail must not stop the walk
        reason = parser_failure(exc)
    summary.unparseable += 1
    if len(summary.unparseable_reasons) < 20:
        summary.unparseable_reasons.append(f"message {row.id}: {reason}")
    return None


def _stored_form(name: str, value: Any) -> Any:
    """A message row's value as a read of the stored row gives it (JSON decoded)."""
    return orjson.loads(value) if name in JSON_READ else value

