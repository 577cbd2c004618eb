"""Quarantined mail tried again, after an upgrade or a setting let lorelab take more of it.

Mail that could not be stored is quarantined whole with its reason (`bot.ingest.prepare`):
not mail at all, a parser failure ("a bug"), a row the database refused. Once a newer lorelab
parses it, `retry` stores it as the mail it is, in a batch transaction of its own as any batch
of new mail (threads, series, the ingest lock), and removes its quarantine row in the same
transaction, only once the message is in the database: nothing is lost between the two.

Mail still refused stays quarantined, with today's reason. Mail of which only the head was kept
(over `[ingest] max_message_bytes`) cannot be tried from here and is left as it is: its reason
says to raise the limit and ingest the original again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.config import IngestSettings, ListSettings
from bot.db.models import QuarantinedMail
from bot.db.session import Database
from bot.db.value_lists import in_values
from bot.ingest.copies import held
from bot.ingest.prepare import MessageRow, PreparedBatch, prepare_mail
from bot.ingest.serial import ingest_transaction
from bot.ingest.sources import RawMail
from bot.ingest.store import ListResolver, store_batch

BATCH_SIZE = 200  # quarantined mail is rare; a batch holds the ingest lock while it is parsed

_table = QuarantinedMail.__table__


@dataclass
class RetrySummary:
    """What trying the quarantined mail again did."""

    tried: int = 0
    stored: int = 0  # in the database now (or already), their quarantine rows removed
    refused: int = 0  # still quarantined, with today's reason
    truncated: int = 0  # only their head kept: not tried
    series_created: int = 0
    series_updated: int = 0
    refused_reasons: list[str] = field(default_factory=list)  # the first few

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> list[str]:
        """The summary as `lorelab quarantine retry` prints it, line by line."""
        lines = [f"tried {self.tried}: stored {self.stored}, still refused {self.refused}; "
                 f"series versions new {self.series_created}, updated {self.series_updated}"]
        lines += [f"  refused {reason}" for reason in self.refused_reasons]
        if self.truncated:
            lines.append(f"  {self.truncated} not tried: only their head was kept; raise "
                         "[ingest] max_message_bytes and ingest the originals again")
        return lines


def retry(
    db: Database, *, settings: IngestSettings, known_lists: list[ListSettings] | None = None
) -> RetrySummary:
    """Try every quarantined mail (but those kept truncated) again; store what now parses."""
    summary = RetrySummary()
    lists = ListResolver(known_lists or [], None)
    with db.session() as session:
        summary.truncated = session.scalar(
            sa.select(sa.func.count()).select_from(_table).where(_table.c.truncated)
        ) or 0
    after = 0
    while True:
        with ingest_transaction(db) as session:
            rows = session.execute(
                sa.select(_table.c.id, _table.c.source, _table.c.raw, _table.c.reason)
                .where(_table.c.id > after, ~_table.c.truncated)
                .order_by(_table.c.id).limit(BATCH_SIZE)
            ).all()  # fmt: skip
            if not rows:
                break
            after = rows[-1].id
            _retry_batch(session, rows, settings, lists, summary)
    return summary


def _retry_batch(
    session: Session, rows: list[Any], settings: IngestSettings, lists: ListResolver,
    summary: RetrySummary,
) -> None:
    batch = PreparedBatch()
    taken: dict[int, MessageRow] = {}  # quarantine id -> the message row made of its mail
    for row in rows:
        summary.tried += 1
        prepared = prepare_mail(RawMail(row.raw, row.source), settings)
        if isinstance(prepared, MessageRow):
            taken[row.id] = prepared
            batch.messages.append(prepared)
            continue
        summary.refused += 1
        if len(summary.refused_reasons) < 20:
            summary.refused_reasons.append(f"{row.source}: {prepared['reason']}")
        if prepared["reason"] != row.reason:
            session.execute(sa.update(_table).where(_table.c.id == row.id)
                            .values(reason=prepared["reason"]))
    if not taken:
        return
    batch.read = len(batch.messages)
    got = store_batch(session, batch, lists=lists)
    summary.series_created += got.series_created
    summary.series_updated += got.series_updated
    # A quarantine row goes only where its mail is in the database now, stored by this batch
    # or before it; one the database refused (`store_batch` stores the others) stays.
    gone = [qid for qid, there in zip(taken, held(session, list(taken.values())), strict=True)
            if there]  # fmt: skip
    summary.stored += len(gone)
    summary.refused += len(taken) - len(gone)
    if gone:
        session.execute(sa.delete(_table).where(in_values(_table.c.id, gone)))
