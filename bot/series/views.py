"""Stable JSON shapes of series, versions, patches and messages (documented in README.md).

Other stages and tools read these; add keys freely, never rename or remove one.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import MailingList, Message, MessageList, Patch, Series, SeriesVersion
from bot.mail import parse_message

LORE = "https://lore.kernel.org/r/"


def _iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).isoformat()


def series_lists(session: Session, series: Series) -> list[str]:
    message_ids = [p.message_id for v in series.versions for p in v.patches] + [
        v.cover_message_id for v in series.versions if v.cover_message_id
    ]
    if not message_ids:
        return []
    return sorted(
        session.scalars(
            sa.select(MailingList.name)
            .join(MessageList, MessageList.list_id == MailingList.id)
            .where(MessageList.message_id.in_(message_ids))
            .distinct()
        )
    )


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
    return {
        "id": series.id,
        "title": series.title,
        "author": {"name": series.author_name, "email": series.author_email},
        "change_id": series.change_id,
        "lists": series_lists(session, series),
        "latest_version": max((v.version for v in series.versions), default=None),
        "updated": _iso(series.updated_at),
        "versions": [version_dict(v, with_patches) for v in series.versions],
    }


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


def all_series(session: Session) -> list[dict[str, Any]]:
    """Every series, newest first, without patch details (the shape of `series list --json`)."""
    query = sa.select(Series).order_by(Series.updated_at.desc(), Series.id.desc())
    return [series_dict(session, s, with_patches=False) for s in session.scalars(query)]
