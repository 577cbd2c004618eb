"""What was already answered: the counts and look-ups behind the limits on command answers.

A command is answered when its `CommandRequest` row has an `outbox_id`. These queries count
such rows on a thread and on a series in a time window (bot.commands.policy.answer_allowed
decides with them), find an answered unverified command on a thread, and find an answered
request identical to a new one, which the new one then joins without an answer of its own.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import CommandRequest, SeriesVersion


def _on_thread(thread_id: int | None, message_id: str) -> sa.ColumnElement[bool]:
    """The requests of a thread; a mail outside any thread is a thread of its own."""
    if thread_id is None:
        return CommandRequest.message_id == message_id
    return CommandRequest.thread_id == thread_id


def answered(session: Session, since: dt.datetime, *, thread_id: int | None, message_id: str,
             series_id: int | None) -> tuple[int, int]:
    """(answers on the thread, answers on the series) to requests made after `since`."""
    recent = (CommandRequest.outbox_id.is_not(None), CommandRequest.created_at > since)
    on_thread = session.scalar(sa.select(sa.func.count(CommandRequest.id))
                               .where(*recent, _on_thread(thread_id, message_id)))
    on_series = 0
    if series_id is not None:
        on_series = session.scalar(
            sa.select(sa.func.count(CommandRequest.id))
            .join(SeriesVersion, SeriesVersion.id == CommandRequest.series_version_id)
            .where(*recent, SeriesVersion.series_id == series_id)) or 0
    return on_thread or 0, on_series


def unverified_answered(session: Session, since: dt.datetime, *, thread_id: int | None,
                        message_id: str) -> bool:
    """Whether a command in unverified mail on the thread was answered after `since`."""
    return session.scalar(sa.select(CommandRequest.id).where(
        CommandRequest.state == "unverified", CommandRequest.outbox_id.is_not(None),
        CommandRequest.created_at > since, _on_thread(thread_id, message_id)).limit(1)) is not None


def run_answered(session: Session, run_id: int) -> bool:
    """Whether a request that made or joined run `run_id` was answered."""
    found = session.scalar(sa.select(CommandRequest.id).where(
        CommandRequest.run_id == run_id, CommandRequest.outbox_id.is_not(None)).limit(1))
    return found is not None


def same_answered(session: Session, since: dt.datetime, *, command: str, arguments: list[str],
                  series_version_id: int | None) -> bool:
    """Whether the same command (name and arguments) about the same version was answered
    after `since` (for `help` and for a `stop` with nothing left to stop)."""
    rows = session.scalars(sa.select(CommandRequest.arguments).where(
        CommandRequest.command == command, CommandRequest.outbox_id.is_not(None),
        CommandRequest.created_at > since, CommandRequest.state != "unverified",
        CommandRequest.series_version_id == series_version_id))
    return any(list(row or ()) == list(arguments) for row in rows)
