"""Missing context: fetch the whole thread when a posting's cover letter or parent is missing.

After a poll of a lore source, a series version the poll touched whose anchor (the cover letter,
or the message its patches hang from) is not stored, or that is still incomplete, gets its
thread downloaded from the same archive (`<URL>/<msgid>/t.mbox.gz`) and stored like any mail.
Each thread is fetched at most once an hour: the times are kept in the source's cursor, so the
limit holds across restarts too.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.config import IngestSettings, ListSettings
from bot.db.models import Message, SeriesVersion
from bot.db.session import Database
from bot.ingest.cursor import load_position
from bot.ingest.live import LiveSummary, Step, store_steps
from bot.ingest.sources import RawMail

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
) -> LiveSummary:
    """Download and store the threads the last poll left without their cover letters."""
    now = dt.datetime.now(dt.UTC)
    with db.session() as session:
        wanted = threads_missing_context(session, since)
    fetched: dict[str, str] = dict(load_position(db, source.key).get("context_fetched", {}))
    todo = due(wanted, fetched, now)
    steps: list[Step] = []
    for msgid in todo:
        log.info("%s: fetching the thread of <%s> for missing context", source.url, msgid)
        for index, raw in enumerate(source.thread(msgid), start=1):
            steps.append(Step(mail=RawMail(raw, f"lore-thread:{source.url}/{msgid}#{index}")))
        fetched[msgid] = now.isoformat()
    if not todo:
        return LiveSummary()
    keep: dict[str, Any] = {
        m: w for m, w in fetched.items() if now - dt.datetime.fromisoformat(w) < REFETCH_AFTER
    }
    steps.append(Step(position={"context_fetched": keep}))
    return store_steps(db, steps, key=source.key, settings=settings, known_lists=known_lists)
