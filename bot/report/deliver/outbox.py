"""The outbox: every reply stored, with its Message-ID and bytes, before anything is sent.

States of a reply (OutboxReply.state):

    pending-approval --approve--> queued --claim--> sending --commit point--> committing --> sent
            |                       |                  |                          |
         reject                  (rate limit:       crash: back to            crash: in-doubt
            v                     stays queued)      queued (nothing           (may have been
        rejected                                     was accepted)             accepted)
    suppressed: by policy at enqueue (list not allow-listed, opt-out, disabled kind) or superseded;
                `retry` or `approve` decide it again under the settings of now
    failed: refused by the server, or transient failures max_attempts times

Exactly once. The Message-ID is derived from (kind, series version, anchor, run), so composing the
same reply twice gives the same id and `enqueue` returns the stored row instead of a second one.
A second run of the same version (a retest) composes a reply of its own, which waits for approval
when one of its kind for that version went out already (`ONE_PER_VERSION`). A
'sent' reply is never sent again by anything. A sender claims a reply with a compare-and-set
UPDATE and a token (host:pid:nonce) and commits before it connects; every later step is
conditional on that token, so a sender that outlived its lease cannot deliver a reply another
sender has taken over: its commit point fails and it closes the connection before the end of
data.

The trade-off. SMTP offers no way to ask a server whether it took a message, so one window cannot
be closed: between the end-of-data line and the server's answer (state 'committing'). A crash
there leaves the reply 'in-doubt', and it is not sent again automatically, because a duplicate on
a public list is worse than a late reply. It becomes 'sent' by itself when the bot ingests it back
from the list (its Message-ID appears among the stored messages); otherwise it waits for
`lorelab outbox retry ID`, which a maintainer gives after checking the archive. The window is one
round trip long. A crash in 'sending' (before the end of data) is safe to repeat, and is repeated
automatically: a server discards a transaction that ends without it (RFC 5321, 4.1.1.4). The
maildir transport can always tell whether it delivered, so it never leaves a reply in doubt.

Rate limits defer a reply (it stays queued until the 24-hour window has room) rather than drop
it; a newer version of the series suppresses it through `supersede`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.config.report import ReportSettings
from bot.db.models import Message, OutboxReply, utcnow
from bot.report.compose.message import ComposedReply
from bot.report.deliver.policy import Admission, OptOutList, admit

# Reply kinds a run writes about one series version (benchmark, build failure, does not apply):
# one of each goes to the list per version, unless a maintainer approves another.
ONE_PER_VERSION = ("benchmark", "build-failure", "does-not-apply")
PENDING_APPROVAL = "pending-approval"
QUEUED = "queued"
SENDING = "sending"
COMMITTING = "committing"
SENT = "sent"
IN_DOUBT = "in-doubt"
FAILED = "failed"
REJECTED = "rejected"
SUPPRESSED = "suppressed"
STATES = (
    PENDING_APPROVAL,
    QUEUED,
    SENDING,
    COMMITTING,
    SENT,
    IN_DOUBT,
    FAILED,
    REJECTED,
    SUPPRESSED,
)


class OutboxError(ValueError):
    """An action that does not apply to a reply in its current state; the text says why."""


def enqueue(
    session: Session,
    reply: ComposedReply,
    settings: ReportSettings,
    *,
    extra_opt_out: tuple[str, ...] = (),
    now: dt.datetime | None = None,
) -> tuple[OutboxReply, bool]:
    """Store a composed reply; (the row, True) when new, (the stored row, False) when a reply
    with the same Message-ID exists already, whatever its state."""
    existing = find_by_message_id(session, reply.message_id)
    if existing is not None:
        return existing, False
    admission = _admission(session, settings, kind=reply.kind, author=reply.author,
                           lists=reply.lists, cc=reply.recipients[1:],
                           series_version_id=reply.series_version_id,
                           extra_opt_out=extra_opt_out)
    now = now or utcnow()
    row = OutboxReply(
        message_id=reply.message_id,
        kind=reply.kind,
        series_version_id=reply.series_version_id,
        in_reply_to=str(reply.message["In-Reply-To"]).strip("<>"),
        subject=str(reply.message["Subject"]),
        author=reply.author,
        list_address=reply.lists[0] if reply.lists else None,
        lists=list(reply.lists),
        recipients=list(reply.recipients),
        raw=reply.as_bytes(),
        state=admission.state,
        reason=admission.reason,
        attempts=0,
        created_at=now,
        updated_at=now,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:  # stored by a concurrent enqueue in between
        stored = find_by_message_id(session, reply.message_id)
        if stored is None:
            raise
        return stored, False
    return row, True


def _admission(session: Session, settings: ReportSettings, *, kind: str, author: str,
               lists: Sequence[str], cc: Sequence[str], series_version_id: int | None,
               extra_opt_out: tuple[str, ...] = (), other_than: int | None = None) -> Admission:
    """The policy's decision on a reply (bot.report.deliver.policy), and one reply per version
    on the list: `other_than` is the reply's own row when it is decided again."""
    admission = admit(
        kind=kind,
        author=author,
        lists=lists,
        allowed_lists=settings.allowed_lists,
        allow_any_list=settings.mode == "outbox" and not settings.allowed_lists,
        opt_out=OptOutList([*settings.opt_out, *extra_opt_out]),
        moderation=settings.moderation,
        disabled_kinds=() if settings.does_not_apply_replies else ("does-not-apply",),
        cc=cc,
    )
    earlier = _earlier_reply(session, kind, series_version_id, other_than)
    if earlier is not None and admission.state in (QUEUED, PENDING_APPROVAL):
        # A retest of a version already answered: its reply is kept and shown, but one version
        # gets one reply on the list unless a maintainer asks for the second.
        admission = Admission(PENDING_APPROVAL, (
            f"an earlier {kind} reply for this version, <{earlier.message_id}>, is "
            f"{earlier.state}: approve this one to send it too"))
    return admission


def _earlier_reply(session: Session, kind: str, series_version_id: int | None,
                   other_than: int | None) -> OutboxReply | None:
    """A reply of the same kind to the same series version that went out or will, if any."""
    if kind not in ONE_PER_VERSION or series_version_id is None:
        return None
    query = (sa.select(OutboxReply)
             .where(OutboxReply.series_version_id == series_version_id,
                    OutboxReply.kind == kind,
                    OutboxReply.state.notin_((SUPPRESSED, REJECTED, FAILED))))
    if other_than is not None:
        query = query.where(OutboxReply.id != other_than)
    return session.scalar(query.order_by(OutboxReply.id).limit(1))


def earlier_replies(session: Session, row: OutboxReply) -> list[OutboxReply]:
    """Replies of `row`'s kind to its series version stored before it (a re-review's
    predecessors), oldest first."""
    return list(session.scalars(
        sa.select(OutboxReply)
        .where(OutboxReply.series_version_id == row.series_version_id,
               OutboxReply.kind == row.kind, OutboxReply.id < row.id)
        .order_by(OutboxReply.id)))


def find_by_message_id(session: Session, message_id: str) -> OutboxReply | None:
    return session.scalar(sa.select(OutboxReply).where(OutboxReply.message_id == message_id))


def find(session: Session, ref: str) -> OutboxReply:
    """A reply by its numeric id or its Message-ID."""
    ref = ref.strip()
    row = session.get(OutboxReply, int(ref)) if ref.isdigit() else None
    row = row or find_by_message_id(session, ref.strip("<>"))
    if row is None:
        raise OutboxError(f"no reply {ref} in the outbox; `lorelab outbox list` shows them")
    return row


def seen_on_list(session: Session, message_id: str) -> bool:
    """Whether the reply came back from a list: then it was certainly delivered."""
    return session.scalar(sa.select(Message.id).where(Message.msgid == message_id)) is not None


def approve(session: Session, row: OutboxReply, by: str, now: dt.datetime | None = None, *,
            settings: ReportSettings | None = None, list_addresses: Sequence[str] = ()) -> None:
    """Let a reply waiting for moderation go out; a suppressed one too, with `settings`, when
    the policy lets it go now."""
    if row.state == SUPPRESSED and settings is not None:
        _decide_again(session, row, settings, list_addresses, now)
    else:
        _require(row, (PENDING_APPROVAL,), "approve")
    _set(row, now, state=QUEUED, decided_by=by, reason=None)


def reject(
    session: Session, row: OutboxReply, by: str, reason: str, now: dt.datetime | None = None
) -> None:
    _require(row, (PENDING_APPROVAL, QUEUED, IN_DOUBT, FAILED), "reject")
    _set(row, now, state=REJECTED, decided_by=by, reason=reason or "rejected by a maintainer")


def retry(session: Session, row: OutboxReply, by: str, now: dt.datetime | None = None, *,
          settings: ReportSettings | None = None, list_addresses: Sequence[str] = ()) -> str:
    """Queue an in-doubt or failed reply again, or, with `settings`, decide a suppressed one
    again under them; what was done, in one sentence."""
    if row.state == SUPPRESSED and settings is not None:
        _decide_again(session, row, settings, list_addresses, now, by=by)
        return "decided again under the settings of now: they let it go"
    _require(row, (IN_DOUBT, FAILED), "retry")
    if seen_on_list(session, row.message_id):
        _set(row, now, state=SENT, last_error=None, sent_at=row.sent_at or now or utcnow())
        return f"reply {row.id} was delivered: it is in the list archive; marked sent"
    _set(row, now, state=QUEUED, decided_by=by, next_attempt_at=None, attempts=0)
    return f"reply {row.id} queued again"


def supersede(
    session: Session, series_version_ids: list[int], reason: str, now: dt.datetime | None = None
) -> int:
    """Suppress the replies still waiting for these (older) series versions; how many."""
    rows = session.scalars(
        sa.select(OutboxReply).where(
            OutboxReply.series_version_id.in_(series_version_ids),
            OutboxReply.state.in_((PENDING_APPROVAL, QUEUED, FAILED, IN_DOUBT)),
        )
    ).all()
    for row in rows:
        _set(row, now, state=SUPPRESSED, reason=reason)
    return len(rows)


def _decide_again(session: Session, row: OutboxReply, settings: ReportSettings,
                  list_addresses: Sequence[str], now: dt.datetime | None,
                  by: str | None = None) -> None:
    """A suppressed reply decided again under today's settings: its lists are its recipients
    that are lists now (`list_addresses`: the configured [[lists]] addresses); OutboxError with
    the reason when it is still suppressed."""
    known = {address.lower() for address in [*row.lists, *list_addresses] if address}
    lists = [address for address in row.recipients[1:] if address.lower() in known]
    admission = _admission(session, settings, kind=row.kind, author=row.author, lists=lists,
                           cc=row.recipients[1:], series_version_id=row.series_version_id,
                           other_than=row.id)
    if admission.state == SUPPRESSED:
        raise OutboxError(f"reply {row.id} is still suppressed: {admission.reason}")
    _set(row, now, state=admission.state, reason=admission.reason, lists=lists,
         list_address=lists[0] if lists else None, decided_by=by or row.decided_by)


def _require(row: OutboxReply, states: tuple[str, ...], action: str) -> None:
    if row.state not in states:
        hint = " (a sent reply is never sent again)" if row.state == SENT else ""
        raise OutboxError(
            f"cannot {action} reply {row.id}: it is {row.state}{hint}; "
            f"{action} applies to {', '.join(states)}"
        )


def _set(row: OutboxReply, now: dt.datetime | None, **values: Any) -> None:
    for key, value in values.items():
        setattr(row, key, value)
    row.updated_at = now or utcnow()


def row_dict(row: OutboxReply, *, raw: bool = False) -> dict[str, Any]:
    """The JSON shape of `lorelab outbox list/show --json`."""
    data: dict[str, Any] = {
        "id": row.id,
        "message_id": row.message_id,
        "kind": row.kind,
        "series_version_id": row.series_version_id,
        "state": row.state,
        "reason": row.reason,
        "subject": row.subject,
        "in_reply_to": row.in_reply_to,
        "author": row.author,
        "lists": list(row.lists),
        "recipients": list(row.recipients),
        "attempts": row.attempts,
        "last_error": row.last_error,
        "transport": row.transport,
        "decided_by": row.decided_by,
    }
    for key in ("created_at", "updated_at", "send_started_at", "sent_at", "next_attempt_at"):
        value = getattr(row, key)  # ISO 8601 with the offset, as every JSON time
        data[key] = value.isoformat() if value is not None else None
    if raw:
        data["message"] = row.raw.decode("utf-8", "replace")
    return data
