"""Missing context: fetch the whole thread when a posting's cover letter or parent is missing.

After a poll of a lore source, a series version the poll touched whose anchor (the cover letter,
or the message its patches hang from) is not stored, or that is still incomplete, gets its
thread downloaded from the same archive (`<URL>/<msgid>/t.mbox.gz`) and stored like any mail.
So does the thread of a reply in the feed to a patch never seen (`Re: [PATCH ...]`, or a reply
under the patch's own subject, in a thread holding no cover letter or patch): the first poll of
a new list stores only the feed's newest 25 or so messages, mostly such replies, and the open
series are known from the start. Replies older than `[plan] max_age_days` are left alone (their
series would not be planned), and a poll fetches at most `MAX_THREADS_PER_POLL` threads.
Each thread is fetched at most once an hour: the times are kept in the source's cursor, so the
limit holds across restarts too.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.config import IngestSettings, ListSettings, PlanSettings
from bot.db.models import Message, SeriesVersion, Thread
from bot.db.session import Database
from bot.ingest.cursor import load_position
from bot.ingest.live import LiveSummary, Step, store_steps
from bot.ingest.sources import RawMail
from bot.mail.record import REPLY_KINDS
from bot.mail.subject import parse_subject

if TYPE_CHECKING:
    from bot.ingest.lore import LoreSource

log = logging.getLogger(__name__)

REFETCH_AFTER = dt.timedelta(hours=1)
MAX_THREADS_PER_POLL = 20  # a poll after a long outage should not turn into a crawl


def threads_missing_context(session: Session, since: dt.datetime) -> list[str]:
    """Message-ids whose threads to fetch: anchors of versions touched since `since` that are
    not stored, or whose versions are still incomplete."""
    rows = session.execute(
        sa.select(SeriesVersion.anchor_msgid, SeriesVersion.complete, Message.id)
        .outerjoin(Message, Message.msgid == SeriesVersion.anchor_msgid)
        .where(SeriesVersion.updated_at >= since)
        .order_by(SeriesVersion.id)
    )
    return [anchor for anchor, complete, stored in rows if stored is None or not complete]


def threads_of_unseen_patches(
    session: Session, msgids: list[str], horizon: dt.datetime
) -> list[tuple[str, str]]:
    """(thread root, reply) for the threads to fetch for replies among `msgids` (the feed's
    newest first) to patches never seen: replies dated after `horizon` whose thread holds no
    cover letter or patch. One reply per thread, in the order of `msgids`."""
    rows = session.execute(
        sa.select(Message.msgid, Message.subject, Message.thread_id, Message.date,
                  Thread.root_msgid)
        .join(Thread, Thread.id == Message.thread_id)
        .where(Message.msgid.in_(msgids), Message.kind.in_(sorted(REPLY_KINDS)))
    ).all()
    replies = {
        r.msgid: r for r in rows
        if r.date is not None and r.date >= horizon and parse_subject(r.subject).patch
    }  # fmt: skip
    with_patches = set(
        session.scalars(
            sa.select(Message.thread_id).where(
                Message.thread_id.in_({r.thread_id for r in replies.values()}),
                Message.kind.in_(("cover", "patch")),
            )
        )
    )
    wanted: dict[str, str] = {}
    for msgid in msgids:
        reply = replies.get(msgid)
        if reply is not None and reply.thread_id not in with_patches:
            wanted.setdefault(reply.root_msgid, msgid)
    return list(wanted.items())


def due(wanted: list[str], fetched: dict[str, str], now: dt.datetime) -> list[str]:
    """Of `wanted`, those not fetched within the last hour."""
    recent = {
        msgid for msgid, when in fetched.items()
        if now - dt.datetime.fromisoformat(when) < REFETCH_AFTER
    }  # fmt: skip
    return [m for m in wanted if m not in recent][:MAX_THREADS_PER_POLL]


def fetch_missing_context(
    db: Database,
    source: LoreSource,
    since: dt.datetime,
    settings: IngestSettings,
    known_lists: list[ListSettings] | None = None,
    max_age_days: int = PlanSettings.max_age_days,
) -> LiveSummary:
    """Download and store the threads the last poll left without their cover letters, and
    those of the feed's replies to patches never seen."""
    now = dt.datetime.now(dt.UTC)
    position = load_position(db, source.key)
    with db.session() as session:
        # A thread by the message that names it, and the message to ask the archive for.
        wanted = {a: a for a in threads_missing_context(session, since)}
        horizon = now - dt.timedelta(days=max_age_days)
        for root, reply in threads_of_unseen_patches(session, position.get("seen", []), horizon):
            wanted.setdefault(root, reply)
    fetched: dict[str, str] = dict(position.get("context_fetched", {}))
    todo = due(list(wanted), fetched, now)
    steps: list[Step] = []
    for key in todo:
        msgid = wanted[key]
        log.info("%s: fetching the thread of <%s> for missing context", source.url, msgid)
        for index, raw in enumerate(source.thread(msgid), start=1):
            steps.append(Step(mail=RawMail(raw, f"lore-thread:{source.url}/{msgid}#{index}")))
        fetched[key] = now.isoformat()
    if not todo:
        return LiveSummary()
    keep: dict[str, Any] = {
        m: w for m, w in fetched.items() if now - dt.datetime.fromisoformat(w) < REFETCH_AFTER
    }
    steps.append(Step(position={"context_fetched": keep}))
    return store_steps(db, steps, key=source.key, settings=settings, known_lists=known_lists)
