"""Stable JSON shapes of series, versions, patches and messages (documented in README.md).

Other stages and tools read these; add keys freely, never rename or remove one. Series are
loaded a page at a time in a fixed number of statements (`series_views`), without the raw mail
of their messages: a page of 50 series once cost 531 statements and 639 decompressed mails.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, joinedload, lazyload, load_only, selectinload

from bot.db.models import MailingList, Message, MessageList, Patch, Series, SeriesVersion
from bot.mail import parse_message

LORE = "https://lore.kernel.org/r/"


def _iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).isoformat()


def lists_by_series(session: Session, series_ids: list[int]) -> dict[int, list[str]]:
    """The lists each series' cover letters and patches were seen on, by series id."""
    via_patch = (
        sa.select(SeriesVersion.series_id, MessageList.list_id)
        .join(Patch, Patch.series_version_id == SeriesVersion.id)
        .join(MessageList, MessageList.message_id == Patch.message_id)
        .where(SeriesVersion.series_id.in_(series_ids))
    )
    via_cover = (
        sa.select(SeriesVersion.series_id, MessageList.list_id)
        .join(MessageList, MessageList.message_id == SeriesVersion.cover_message_id)
        .where(SeriesVersion.series_id.in_(series_ids))
    )
    seen = sa.union(via_patch, via_cover).subquery()
    pairs = session.execute(
        sa.select(seen.c.series_id, MailingList.name)
        .join(MailingList, MailingList.id == seen.c.list_id)
        .distinct()
    )
    lists: dict[int, list[str]] = {}
    for series_id, name in pairs:
        lists.setdefault(series_id, []).append(name)
    return {k: sorted(v) for k, v in lists.items()}


def patch_dict(patch: Patch, with_trailers: bool = True) -> dict[str, Any]:
    msg = patch.message
    out: dict[str, Any] = {
        "index": patch.index,
        "subject": msg.subject,
        "message_id": msg.msgid,
        "author": {"name": msg.from_name, "email": msg.from_email},
        "date": _iso(msg.date),
        "files": [f["path"] for f in msg.files],
        "file_changes": msg.files,
        "insertions": msg.insertions,
        "deletions": msg.deletions,
    }
    if with_trailers:
        own = [
            {"name": n, "value": v, "origin": "own", "message_id": msg.msgid}
            for n, v in msg.trailers
        ]
        out["trailers"] = own + [
            {"name": t.name, "value": t.value, "origin": t.origin, "message_id": t.source_msgid}
            for t in patch.trailers
        ]
    return out


def version_dict(version: SeriesVersion, with_patches: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": version.id,
        "version": version.version,
        "title": version.title,
        "expected": version.expected,
        "received": version.received,
        "complete": version.complete,
        "missing": [
            i for i in range(1, version.expected + 1) if i not in {p.index for p in version.patches}
        ],
        "cover_message_id": version.cover.msgid if version.cover else None,
        "anchor_message_id": version.anchor_msgid,
        "base_commit": version.base_commit,
        "change_id": version.change_id,
        "rfc": version.rfc,
        "resend": version.resend,
        "prefixes": version.prefixes,
        "date": _iso(version.date),
        "notes": version.notes,
        "url": LORE + (version.cover.msgid if version.cover else version.anchor_msgid),
    }
    if with_patches:
        out["patches"] = [patch_dict(p) for p in version.patches]
    return out


def series_dict(session: Session, series: Series, with_patches: bool = True) -> dict[str, Any]:
    """One series in the shape of `lorelab series show --json`."""
    return series_views(session, [series.id], with_patches=with_patches)[0]


def _loading(with_patches: bool) -> list[Any]:
    """Eager loads for a page of series: versions, their patches and cover letters, in a few
    statements, and never a message's raw mail (nor its lists) unless a patch is shown."""
    cover = joinedload(SeriesVersion.cover).options(
        load_only(Message.id, Message.msgid), lazyload(Message.lists)
    )
    patches = selectinload(SeriesVersion.patches)
    if with_patches:
        patch_loads = patches.options(
            joinedload(Patch.message).options(
                load_only(Message.id, Message.msgid, Message.subject, Message.from_name,
                          Message.from_email, Message.date, Message.files, Message.insertions,
                          Message.deletions, Message.trailers),
                lazyload(Message.lists),
            ),
            selectinload(Patch.trailers),
        )
    else:
        patch_loads = patches.options(lazyload(Patch.message))
    return [selectinload(Series.versions).options(cover, patch_loads)]


def series_views(
    session: Session, series_ids: list[int], *, with_patches: bool = True
) -> list[dict[str, Any]]:
    """The series with these ids, in this order, each in the shape of `series show --json`."""
    if not series_ids:
        return []
    found = {
        s.id: s for s in session.scalars(
            sa.select(Series).where(Series.id.in_(series_ids)).options(*_loading(with_patches))
        )
    }
    lists = lists_by_series(session, series_ids)
    out = []
    for series_id in series_ids:
        series = found[series_id]
        out.append({
            "id": series.id,
            "title": series.title,
            "author": {"name": series.author_name, "email": series.author_email},
            "change_id": series.change_id,
            "lists": lists.get(series.id, []),
            "latest_version": max((v.version for v in series.versions), default=None),
            "updated": _iso(series.last_mail_at or series.updated_at),
            "versions": [version_dict(v, with_patches) for v in series.versions],
        })
    return out


def message_dict(session: Session, msg: Message) -> dict[str, Any]:
    patch = session.scalar(sa.select(Patch).where(Patch.message_id == msg.id))
    return {
        "message_id": msg.msgid,
        "subject": msg.subject,
        "from": {"name": msg.from_name, "email": msg.from_email},
        "date": _iso(msg.date),
        "kind": msg.kind,
        "in_reply_to": msg.in_reply_to,
        "references": msg.references,
        "thread_id": msg.thread_id,
        "lists": sorted(lst.name for lst in msg.lists),
        "version": msg.version,
        "counter": msg.counter,
        "total": msg.total,
        "prefixes": msg.prefixes,
        "files": msg.files,
        "insertions": msg.insertions,
        "deletions": msg.deletions,
        "trailers": [{"name": n, "value": v} for n, v in msg.trailers],
        "base_commit": msg.base_commit,
        "change_id": msg.change_id,
        "problems": msg.problems,
        "size": msg.raw_size,
        "body": parse_message(msg.raw).body,
        "series": (
            {
                "series_id": patch.version.series_id,
                "version": patch.version.version,
                "index": patch.index,
            }
            if patch
            else None
        ),
        "url": LORE + msg.msgid,
    }
