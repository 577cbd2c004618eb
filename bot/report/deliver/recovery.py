"""Resolving the sends a crashed sender left behind, without ever sending a reply twice.

A claim ('sending' or 'committing') is dead when its lease has run out, or when its holder ran on
this host and its process is gone. A dead 'sending' claim never reached the end of the message:
the reply is queued again. A dead 'committing' claim may have been delivered: the transport is
asked (the maildir knows; SMTP cannot tell), then the list archive (a reply the bot ingested back
from the list was delivered); if neither knows, the reply waits in 'in-doubt' for a maintainer's
`lorelab outbox retry`. An 'in-doubt' reply that shows up in the archive later becomes 'sent'.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import OutboxReply, utcnow
from bot.db.session import Database
from bot.processes import process_gone
from bot.report.deliver.outbox import COMMITTING, IN_DOUBT, QUEUED, SENDING, SENT, seen_on_list
from bot.report.deliver.transport import Transport


def recover_interrupted(
    db: Database, transport: Transport, *, now: dt.datetime | None = None
) -> dict[int, str]:
    """Resolve the claims of senders that died; {reply id: its new state}."""
    now = now or utcnow()
    resolved: dict[int, str] = {}
    with db.session() as session:
        rows = session.scalars(
            sa.select(OutboxReply).where(OutboxReply.state.in_((SENDING, COMMITTING, IN_DOUBT)))
        ).all()
        for row in rows:
            if row.state == IN_DOUBT:
                if seen_on_list(session, row.message_id):
                    row.state, row.sent_at, row.updated_at = SENT, row.sent_at or now, now
                    resolved[row.id] = SENT
                continue
            if not _claim_is_dead(row, now):
                continue
            state, note = _resolve(session, row, transport)
            row.state, row.claimed_by, row.lease_until, row.updated_at = state, None, None, now
            row.last_error = note
            if state == SENT:
                row.sent_at = now
            resolved[row.id] = state
    return resolved


def _resolve(session: Session, row: OutboxReply, transport: Transport) -> tuple[str, str]:
    if row.state == SENDING:
        return QUEUED, "the sender stopped before the end of the message: nothing was accepted"
    if row.transport == transport.name:
        delivered = transport.delivered(row.message_id)
        if delivered is not None:
            return (
                (SENT, "found delivered after a crash")
                if delivered
                else (QUEUED, "the sender stopped before delivering: nothing was written")
            )
    if seen_on_list(session, row.message_id):
        return SENT, "the sender stopped after the end of the message; the list archive has it"
    return IN_DOUBT, (
        "the sender stopped after the end of the message, before the server's answer: it may "
        f"have been accepted; check the list archive, then `lorelab outbox retry {row.id}`"
    )


def _claim_is_dead(row: OutboxReply, now: dt.datetime) -> bool:
    if row.lease_until is not None and row.lease_until < now:
        return True
    host, pid, *_ = [*(row.claimed_by or "").split(":"), "", ""]
    return process_gone(host, pid)
