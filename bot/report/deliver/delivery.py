"""Sending what the outbox holds: claim, commit point, outcome; and recovery after a crash.

Each reply goes through short transactions, each committed before the next step talks to the
outside world (the design and its one unavoidable window are in bot.report.deliver.outbox):

1. claim: queued -> sending (a conditional UPDATE: two senders never claim the same row), with
   the sender's host:pid and a lease; committed before connecting;
2. commit point: sending -> committing, committed just before the end-of-data line (SMTP) or the
   rename into new/ (maildir);
3. outcome: sent, queued again (not accepted; later, with backoff), failed, or in-doubt.

Every run first resolves the claims of senders that died (bot.report.deliver.recovery).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from bot.config.report import ReportSettings
from bot.db.models import OutboxReply, utcnow
from bot.db.session import Database
from bot.report.deliver.maildir import MaildirTransport
from bot.report.deliver.outbox import (
    COMMITTING,
    FAILED,
    IN_DOUBT,
    QUEUED,
    SENDING,
    SENT,
    SUPPRESSED,
)
from bot.report.deliver.policy import OptOutList, RecentSend, rate_limit
from bot.report.deliver.recovery import recover_interrupted
from bot.report.deliver.smtp import SmtpTransport
from bot.report.deliver.transport import (
    DeliveryInDoubt,
    Envelope,
    PermanentFailure,
    TransientFailure,
    Transport,
)

BACKOFF_START = dt.timedelta(minutes=1)
BACKOFF_MAX = dt.timedelta(hours=1)


def make_transport(settings: ReportSettings, data_dir: Path) -> Transport:
    if settings.mode == "smtp":
        return SmtpTransport(settings)
    return MaildirTransport(settings.outbox_path(data_dir))


@dataclass
class DeliveryRun:
    """What one run did, by reply id."""

    sent: list[int] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)  # transient failure, will retry
    deferred: list[int] = field(default_factory=list)  # over a rate limit
    failed: list[int] = field(default_factory=list)
    in_doubt: list[int] = field(default_factory=list)
    suppressed: list[int] = field(default_factory=list)
    recovered: dict[int, str] = field(default_factory=dict)  # id -> state after recovery


class ClaimLost(Exception):
    """Another sender took the reply over (this one outlived its lease): stop before the end of
    the message, so that only one of them can deliver it."""


def claim_token() -> str:
    """host:pid:nonce; recovery reads the host and pid, the nonce tells two claims apart."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def deliver_due(
    db: Database,
    transport: Transport,
    settings: ReportSettings,
    *,
    now: dt.datetime | None = None,
    extra_opt_out: tuple[str, ...] = (),
) -> DeliveryRun:
    """Recover interrupted sends, then send every queued reply that is due."""
    now = now or utcnow()
    run = DeliveryRun(recovered=recover_interrupted(db, transport, now=now))
    with db.session() as session:
        due = session.scalars(
            sa.select(OutboxReply.id)
            .where(OutboxReply.state == QUEUED)
            .where(
                sa.or_(OutboxReply.next_attempt_at.is_(None), OutboxReply.next_attempt_at <= now)
            )
            .order_by(OutboxReply.id)
        ).all()
    opt_out = OptOutList([*settings.opt_out, *extra_opt_out])
    for reply_id in due:
        try:
            _deliver_one(db, transport, settings, reply_id, opt_out, now, run)
        except Exception as exc:  # noqa: BLE001 - one bad row must not stop the others
            if isinstance(exc, sa.exc.OperationalError):
                raise  # the database is down: nothing can be recorded, the next run retries
            _record_broken(db, reply_id, exc, now)
            run.failed.append(reply_id)
    return run


def _record_broken(db: Database, reply_id: int, exc: Exception, now: dt.datetime) -> None:
    """A reply lorelab failed on before it was claimed (a row it cannot read): failed, with
    why; nothing was sent."""
    with db.session() as session:
        _transition(session, reply_id, (QUEUED,), now, state=FAILED,
                    last_error=f"lorelab could not send this reply ({type(exc).__name__}: "
                               f"{exc}); a bug: `lorelab outbox retry {reply_id}` after the fix")


def _deliver_one(
    db: Database,
    transport: Transport,
    settings: ReportSettings,
    reply_id: int,
    opt_out: OptOutList,
    now: dt.datetime,
    run: DeliveryRun,
) -> None:
    with db.session() as session:
        row = session.get(OutboxReply, reply_id)
        if row is None or row.state != QUEUED:
            return
        if row.author in opt_out:
            row.state, row.reason, row.updated_at = SUPPRESSED, "the author opted out", now
            run.suppressed.append(reply_id)
            return
        decision = rate_limit(
            author=row.author,
            lists=row.lists,
            recent=_recent_sends(session, now),
            now=now,
            per_list=settings.list_daily_limit,
            per_author=settings.author_daily_limit,
        )
        if decision.reason:
            row.last_error, row.next_attempt_at = decision.reason, decision.retry_at
            row.updated_at = now
            run.deferred.append(reply_id)
            return
        envelope = Envelope(
            sender=settings.identity().sender.email,
            recipients=tuple(r for r in row.recipients if r not in opt_out),
            message_id=row.message_id,
            raw=row.raw,
        )
        token = claim_token()
        claimed = _transition(
            session,
            reply_id,
            (QUEUED,),
            now,
            state=SENDING,
            attempts=OutboxReply.attempts + 1,
            claimed_by=token,
            lease_until=now + dt.timedelta(seconds=settings.send_lease_seconds),
            send_started_at=now,
            transport=transport.name,
        )
    if not claimed:
        return

    committed: list[bool] = []

    def commit_point() -> None:
        with db.session() as session:
            if not _transition(
                session, reply_id, (SENDING,), utcnow(), holder=token, state=COMMITTING
            ):
                raise ClaimLost(f"reply {reply_id} is no longer claimed by {token}")
        committed.append(True)

    try:
        note = transport.send(envelope, commit_point)
    except ClaimLost:
        return  # the sender that holds the claim now finishes the job
    except TransientFailure as exc:
        _after_transient(db, reply_id, token, str(exc), settings, now, run)
    except PermanentFailure as exc:
        _finish(db, reply_id, token, FAILED, now, last_error=str(exc))
        run.failed.append(reply_id)
    except DeliveryInDoubt as exc:
        error = f"{exc}; check the list archive, then `lorelab outbox retry {reply_id}`"
        _finish(db, reply_id, token, IN_DOUBT, now, last_error=error)
        run.in_doubt.append(reply_id)
    except Exception as exc:  # noqa: BLE001 - a transport's bug: recorded, the others go on
        if isinstance(exc, sa.exc.OperationalError):
            raise  # the database is down: recovery resolves the claim on the next run
        error = f"lorelab failed sending this reply ({type(exc).__name__}: {exc}); a bug"
        if committed:  # past the end of the message: it may have been accepted
            _finish(db, reply_id, token, IN_DOUBT, now, last_error=f"{error}; check the list "
                    f"archive, then `lorelab outbox retry {reply_id}`")
            run.in_doubt.append(reply_id)
        else:
            _finish(db, reply_id, token, FAILED, now,
                    last_error=f"{error}: `lorelab outbox retry {reply_id}` after the fix")
            run.failed.append(reply_id)
    else:
        _finish(db, reply_id, token, SENT, now, sent_at=utcnow(), last_error=None, reason=note)
        run.sent.append(reply_id)


def _after_transient(
    db: Database,
    reply_id: int,
    token: str,
    error: str,
    settings: ReportSettings,
    now: dt.datetime,
    run: DeliveryRun,
) -> None:
    with db.session() as session:
        attempts = session.scalar(sa.select(OutboxReply.attempts).where(OutboxReply.id == reply_id))
    if (attempts or 0) >= settings.max_attempts:
        _finish(db, reply_id, token, FAILED, now, last_error=f"{error} (after {attempts} attempts)")
        run.failed.append(reply_id)
        return
    delay = min(BACKOFF_START * 2 ** max((attempts or 1) - 1, 0), BACKOFF_MAX)
    _finish(db, reply_id, token, QUEUED, now, last_error=error, next_attempt_at=now + delay)
    run.requeued.append(reply_id)


def _finish(
    db: Database, reply_id: int, token: str, state: str, now: dt.datetime, **values: object
) -> None:
    with db.session() as session:
        _transition(
            session,
            reply_id,
            (SENDING, COMMITTING),
            now,
            holder=token,
            state=state,
            claimed_by=None,
            lease_until=None,
            **values,
        )


def _transition(
    session: sa.orm.Session,
    reply_id: int,
    states: tuple[str, ...],
    now: dt.datetime,
    holder: str | None = None,
    **values: object,
) -> bool:
    """Compare-and-set: move the reply only from `states` (and only while `holder` claims it)."""
    query = sa.update(OutboxReply).where(OutboxReply.id == reply_id, OutboxReply.state.in_(states))
    if holder is not None:
        query = query.where(OutboxReply.claimed_by == holder)
    result = session.execute(query.values(updated_at=now, **values))
    return result.rowcount == 1  # type: ignore[attr-defined]


def _recent_sends(session: sa.orm.Session, now: dt.datetime) -> list[RecentSend]:
    rows = session.execute(
        sa.select(OutboxReply.send_started_at, OutboxReply.author, OutboxReply.lists).where(
            OutboxReply.state.in_((SENDING, COMMITTING, SENT, IN_DOUBT)),
            OutboxReply.send_started_at > now - dt.timedelta(days=1),
        )
    ).all()
    return [
        RecentSend(started, author.lower(), tuple(a.lower() for a in lists))
        for started, author, lists in rows
    ]
