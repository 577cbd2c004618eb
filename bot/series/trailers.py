"""Which trailers others gave a patch, as `b4 am` would apply them.

Besides its own (in its message), a patch has the trailers in replies to it (or in replies to
replies), those in replies to its cover letter (they apply to every patch), and those given to an
earlier version of the same patch when the patch did not change (same patch fingerprint, as b4
does by patch-id). The `trailers` table holds these, rebuilt from the messages for the versions a
batch touched: derived data, kept because the CLI and the web page read it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Message, Patch, SeriesVersion, Trailer
from bot.db.value_lists import in_values
from bot.mail.trailers import REVIEW_TRAILERS

Found = tuple[str, str, str]  # name, value, the message-id it came from


def attribute_trailers(session: Session, version_ids: Iterable[int]) -> None:
    """Rebuild the trailers of the given versions and of later versions of their series."""
    session.flush()
    versions = _versions_to_rebuild(session, set(version_ids))
    if not versions:
        return
    patches = session.execute(
        sa.select(
            Patch.id, Patch.series_version_id, Message.msgid, Message.trailers,
            Message.patch_fingerprint,
        )
        .join(Message, Message.id == Patch.message_id)
        .where(in_values(Patch.series_version_id, [v.id for v in versions]))
        .order_by(Patch.index)
    ).all()  # fmt: skip
    by_version: dict[int, list[Any]] = defaultdict(list)
    for row in patches:
        by_version[row.series_version_id].append(row)
    replies = _replies_by_parent(session, {v.thread_id for v in versions if v.thread_id})
    earlier = _earlier_trailers(session, versions)
    session.execute(
        sa.delete(Trailer).where(in_values(Trailer.patch_id, [p.id for p in patches])))
    new_rows: list[dict[str, Any]] = []
    for version in versions:  # in version order: a rebuilt v1 feeds v2's carried trailers
        cover = _collect(version.cover_msgid, replies) if version.cover_msgid else []
        for patch in by_version[version.id]:
            found = [(n, v, "reply", src) for n, v, src in _collect(patch.msgid, replies)]
            found += [(n, v, "cover", src) for n, v, src in cover]
            key = (version.series_id, patch.patch_fingerprint)
            if patch.patch_fingerprint:
                found += [
                    (n, v, "carried", src)
                    for ver, n, v, src in earlier.get(key, [])
                    if ver < version.version
                ]
            rows = _new_trailers(patch.id, found, already=patch.trailers or [])
            new_rows += rows
            if patch.patch_fingerprint and rows:
                earlier.setdefault(key, []).extend(
                    (version.version, r["name"], r["value"], r["source_msgid"]) for r in rows
                )
    if new_rows:  # the table, not the class: the ORM's bulk insert costs more than the rows
        session.execute(sa.insert(Trailer.__table__), new_rows)


def _new_trailers(
    patch_id: int, found: list[tuple[str, str, str, str]], already: list[list[str]]
) -> list[dict[str, Any]]:
    """Trailer rows for what others gave, each once, leaving out what the patch already has."""
    have = {(name.lower(), value.lower()) for name, value in already}
    rows = []
    for name, value, origin, source in found:
        key = (name.lower(), value.lower())
        if key not in have:
            have.add(key)
            rows.append(
                {"patch_id": patch_id, "name": name, "value": value, "origin": origin,
                 "source_msgid": source}
            )  # fmt: skip
    return rows


def _versions_to_rebuild(session: Session, ids: set[int]) -> list[Any]:
    if not ids:
        return []
    columns = (
        SeriesVersion.id, SeriesVersion.series_id, SeriesVersion.version, SeriesVersion.thread_id,
        Message.msgid.label("cover_msgid"),
    )  # fmt: skip
    base = sa.select(*columns).outerjoin(Message, Message.id == SeriesVersion.cover_message_id)
    chosen = session.execute(base.where(in_values(SeriesVersion.id, ids))).all()
    floor: dict[int, int] = {}
    for v in chosen:
        floor[v.series_id] = min(floor.get(v.series_id, v.version), v.version)
    later = session.execute(
        base.where(in_values(SeriesVersion.series_id, floor), SeriesVersion.id.not_in(ids))
    ).all()
    versions = list(chosen) + [v for v in later if v.version > floor[v.series_id]]
    return sorted(versions, key=lambda v: (v.version, v.id))


def _earlier_trailers(
    session: Session, versions: list[Any]
) -> dict[tuple[int, str], list[tuple[int, str, str, str]]]:
    """Reviewers' trailers on versions not being rebuilt, by (series, patch fingerprint)."""
    rebuilt = {v.id for v in versions}
    rows = session.execute(
        sa.select(
            SeriesVersion.series_id, SeriesVersion.version, Message.patch_fingerprint,
            Trailer.name, Trailer.value, Trailer.source_msgid,
        )
        .join(Patch, Patch.id == Trailer.patch_id)
        .join(SeriesVersion, SeriesVersion.id == Patch.series_version_id)
        .join(Message, Message.id == Patch.message_id)
        .where(
            in_values(SeriesVersion.series_id, {v.series_id for v in versions}),
            SeriesVersion.id.not_in(rebuilt),
            Message.patch_fingerprint.is_not(None),
        )
        .order_by(SeriesVersion.version, Trailer.id)
    )  # fmt: skip
    out: dict[tuple[int, str], list[tuple[int, str, str, str]]] = defaultdict(list)
    for r in rows:
        out[(r.series_id, r.patch_fingerprint)].append((r.version, r.name, r.value, r.source_msgid))
    return out


def _replies_by_parent(session: Session, thread_ids: set[int]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = defaultdict(list)
    if not thread_ids:
        return out
    rows = session.execute(
        sa.select(Message.msgid, Message.in_reply_to, Message.trailers).where(
            in_values(Message.thread_id, thread_ids), Message.reply.is_(True)
        )
    )
    for row in rows:
        if row.in_reply_to:
            out[row.in_reply_to].append(row)
    return out


def _collect(msgid: str, replies: dict[str, list[Any]]) -> list[Found]:
    """Reviewers' trailers in the reply tree below `msgid`."""
    out: list[Found] = []
    seen = {msgid}
    stack = [msgid]
    while stack:
        for reply in replies.get(stack.pop(), []):
            if reply.msgid in seen:
                continue
            seen.add(reply.msgid)
            out += [(n, v, reply.msgid) for n, v in reply.trailers or [] if n in REVIEW_TRAILERS]
            stack.append(reply.msgid)
    return out
