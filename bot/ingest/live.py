"""Storing what a live source read, and moving its cursor in the same transaction.

The lore feed turns what it read into `Step`s in order: a mail to store, a feed entry to
quarantine, and the cursor position that holds once the step is stored; `store_steps` writes
them batch by batch. A public-inbox archive is walked as `EpochSlice`s, which the parse workers
read themselves; `store_slices` writes each with the removals and unreadable objects (skips,
with their commit and reason) its worker met. Either way a batch's messages, quarantine rows,
removals, skips and cursor update commit together, so a crash between fetch and commit loses
nothing and reading again stores nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.config import IngestSettings, ListSettings
from bot.db.models import IngestSkip, MessageRemoval
from bot.db.session import Database
from bot.ingest.cursor import CursorKey, advance
from bot.ingest.epoch_slice import EpochSlice
from bot.ingest.prepare import PreparedBatch, prepare_all, prepared_batches, quarantine_row
from bot.ingest.serial import ingest_transaction
from bot.ingest.sources import RawMail
from bot.ingest.storable import storable_msgid
from bot.ingest.store import IngestSummary, ListResolver, store_batch, store_prepared

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    mail: RawMail | None = None
    bad: tuple[RawMail, str] | None = None  # input to quarantine without parsing, and why
    position: dict[str, Any] | None = None  # merged into the cursor once this step is stored


@dataclass
class LiveSummary:
    ingest: IngestSummary = field(default_factory=IngestSummary)
    removals: int = 0
    skipped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**self.ingest.to_dict(), "removals": self.removals, "skipped": self.skipped}


def _record_once(session: Session, model: type[MessageRemoval | IngestSkip], key: CursorKey,
                 commit: str, **values: Any) -> bool:
    """A removal or skip row for this commit of the archive, unless it is there already (a walk
    meets a commit again after a purge rewrote the history)."""
    exists = session.scalar(
        sa.select(model.id).where(model.source == key.location, model.commit == commit)
    )
    if exists is not None:
        return False
    session.add(model(source=key.location, commit=commit, **values))
    return True


def _record_archive_events(session: Session, key: CursorKey, batch: PreparedBatch,
                           summary: LiveSummary) -> None:
    """The removals and unreadable objects an epoch slice met, each recorded once."""
    for removal in batch.removals:
        summary.removals += _record_once(
            session, MessageRemoval, key, removal.commit, msgid=storable_msgid(removal.msgid),
            list_name=key.list_name, reason=removal.reason,
        )
    for skip in batch.skips:
        if _record_once(session, IngestSkip, key, skip.commit, epoch=skip.epoch,
                        object=skip.object, reason=skip.reason):
            summary.skipped += 1
            log.warning("%s: epoch %s commit %s: %s; skipped", key.location, skip.epoch,
                        skip.commit, skip.reason)


def store_slices(
    db: Database,
    slices: Iterable[EpochSlice],
    *,
    key: CursorKey,
    settings: IngestSettings,
    known_lists: list[ListSettings] | None = None,
    on_stored: Callable[[int], None] | None = None,
) -> LiveSummary:
    """Store the slices of an archive's epochs in order, each with its removals, skips and
    cursor in one transaction. `on_stored(changes)` is told how many changes each covered."""
    summary = LiveSummary()
    lists = ListResolver(known_lists or [], key.list_name)

    def record(session: Session, batch: PreparedBatch, got: IngestSummary) -> None:
        _record_archive_events(session, key, batch, summary)
        advance(session, key, batch.position, got.stored)

    def committed(batch: PreparedBatch, got: IngestSummary, _: None) -> None:
        summary.ingest.add(got)
        if on_stored is not None:
            on_stored(batch.read + len(batch.removals) + len(batch.skips))

    store_prepared(db, prepare_all(slices, settings), lists, committed, record)
    return summary


def store_steps(
    db: Database,
    steps: Iterable[Step],
    *,
    key: CursorKey,
    settings: IngestSettings,
    known_lists: list[ListSettings] | None = None,
    on_stored: Callable[[int], None] | None = None,
) -> LiveSummary:
    """Store every step in order; the cursor covers exactly what has been committed.

    `on_stored(steps)` is told how many steps each commit covered (for a progress bar)."""
    summary = LiveSummary()
    lists = ListResolver(known_lists or [], key.list_name)
    # Non-mail steps wait here, tagged with how many mails came before them, until the batch
    # holding those mails commits (batches keep input order; the generator reads ahead).
    waiting: list[tuple[int, Step]] = []
    mails_read = 0

    def mails() -> Iterator[RawMail]:
        nonlocal mails_read
        for step in steps:
            if step.mail is not None:
                mails_read += 1
            if step.bad or step.position is not None:
                waiting.append((mails_read, step))
            if step.mail is not None:
                yield step.mail

    def apply(session: Session, upto: int | None, stored: int) -> int:
        """Record the waiting steps up to mail number `upto`; how many were not mail."""
        update: dict[str, Any] = {}
        others = 0
        while waiting and (upto is None or waiting[0][0] <= upto):
            _, step = waiting.pop(0)
            others += step.mail is None
            if step.bad is not None:
                mail, reason = step.bad
                got = store_batch(
                    session, PreparedBatch(read=1, quarantine=[quarantine_row(mail, reason)]),
                    lists=lists,
                )
                summary.ingest.add(got)
            if step.position is not None:
                update.update(step.position)
        advance(session, key, update, stored)
        return others

    done = 0

    def record(session: Session, batch: PreparedBatch, got: IngestSummary) -> int:
        nonlocal done
        done += batch.read
        return apply(session, done, got.stored)

    def committed(batch: PreparedBatch, got: IngestSummary, others: int | None) -> None:
        summary.ingest.add(got)
        if on_stored is not None:
            on_stored(batch.read + (others or 0))

    store_prepared(db, prepared_batches(mails(), settings), lists, committed, record)
    if waiting or done == 0:
        with ingest_transaction(db) as session:
            others = apply(session, None, 0)
        if on_stored is not None and others:
            on_stored(others)
    return summary
