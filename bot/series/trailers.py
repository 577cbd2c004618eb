"""Which trailers others gave a patch, as `b4 am` would apply them.

Besides its own (in its message), a patch has the trailers in replies to it (or in replies to
replies), those in replies to its cover letter (they apply to every patch), and those given to an
earlier version of the same patch when the patch did not change (same patch fingerprint, as b4
does by patch-id). A reply is any review or inline diff, with or without "Re:" in its subject;
a person's trailer in it counts only when it names the reply's sender, as b4 has it
(`bot.mail.trailer_sender`). The `trailers` table holds these, rebuilt from the messages for
the versions a batch touched: derived data, kept because the CLI and the web page read it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Message, Patch, SeriesVersion, Trailer
from bot.db.value_lists import in_param, insert_tuples
from bot.mail.record import REPLY_KINDS
from bot.mail.trailer_sender import given_by_sender
from bot.mail.trailers import REVIEW_TRAILERS

Found = tuple[str, str, str]  # name, value, the message-id it came from

_TRAILERS = Trailer.__table__
_TRAILER_KEYS = ("patch_id", "name", "value", "origin", "source_msgid")
# A message's trailers as the JSON text stored, read only where needed: most replies have none
# that count, and a patch's own are needed only when others gave it some.
_TRAILERS_TEXT = sa.cast(Message.trailers, sa.Text).label("trailers")
_NONE = (None, "[]")
# The statements a batch sends, built once: the lists they look up are their parameters.
# A patch and a cover letter by the id they were sent under, which their replies name (a copy's
# stand-in is lorelab's own: `bot.ingest.copies`)
_SENT_ID = sa.func.coalesce(Message.claimed_msgid, Message.msgid)
_PATCHES = (
    sa.select(
        Patch.id, Patch.series_version_id, _SENT_ID.label("msgid"), Message.thread_id,
        _TRAILERS_TEXT, Message.patch_fingerprint,
    )
    .join(Message, Message.id == Patch.message_id)
    .where(in_param(Patch.series_version_id, "versions"))
    .order_by(Patch.index)
)  # fmt: skip
_DELETE = sa.delete(_TRAILERS).where(in_param(_TRAILERS.c.patch_id, "patches"))
_VERSIONS = sa.select(
    SeriesVersion.id, SeriesVersion.series_id, SeriesVersion.version,
    _SENT_ID.label("cover_msgid"), Message.thread_id.label("cover_thread_id"),
).outerjoin(Message, Message.id == SeriesVersion.cover_message_id)  # fmt: skip
_CHOSEN_VERSIONS = _VERSIONS.where(in_param(SeriesVersion.id, "ids"))
# The versions being rebuilt are left out of these two as they are read, not by a NOT IN of
# thousands of parameters that SQLAlchemy renders anew for every batch.
_SERIES_VERSIONS = _VERSIONS.where(in_param(SeriesVersion.series_id, "series"))
_EARLIER_TRAILERS = (
    sa.select(
        SeriesVersion.id, SeriesVersion.series_id, SeriesVersion.version,
        Message.patch_fingerprint, Trailer.name, Trailer.value, Trailer.source_msgid,
    )
    .join(Patch, Patch.id == Trailer.patch_id)
    .join(SeriesVersion, SeriesVersion.id == Patch.series_version_id)
    .join(Message, Message.id == Patch.message_id)
    .where(
        in_param(SeriesVersion.series_id, "series"), Message.patch_fingerprint.is_not(None),
    )
)  # fmt: skip
_REPLIES = sa.select(
    Message.thread_id, Message.msgid, Message.in_reply_to, _TRAILERS_TEXT, Message.from_name,
    Message.from_email,
).where(in_param(Message.thread_id, "threads"), Message.kind.in_(sorted(REPLY_KINDS)))


def attribute_trailers(session: Session, version_ids: Iterable[int]) -> None:
    """Rebuild the trailers of the given versions and of later versions of their series."""
    session.flush()
    conn = session.connection()
    versions = _versions_to_rebuild(conn, set(version_ids))
    if not versions:
        return
    patches = conn.execute(_PATCHES, {"versions": [v.id for v in versions]}).all()
    by_version: dict[int, list[Any]] = defaultdict(list)
    for row in patches:
        by_version[row.series_version_id].append(row)
    # by thread: the replies naming a part are in the part's thread, and an id some sender
    # used again names other mails in other threads (`bot.series.reused_ids`)
    replies = _replies_by_parent(conn, {t for t in [
        *(v.cover_thread_id for v in versions), *(p.thread_id for p in patches)] if t is not None})
    earlier = _earlier_trailers(conn, versions)
    conn.execute(_DELETE, {"patches": [p.id for p in patches]})
    new_rows: list[tuple[int, str, str, str, str]] = []
    for version in versions:  # in version order: a rebuilt v1 feeds v2's carried trailers
        cover = [(n, v, "cover", src) for n, v, src in _collect(
            version.cover_msgid, replies.get(version.cover_thread_id, {}))
                 ] if version.cover_msgid else []  # fmt: skip
        for patch in by_version[version.id]:
            found = [(n, v, "reply", src)
                     for n, v, src in _collect(patch.msgid, replies.get(patch.thread_id, {}))]
            found += cover
            key = (version.series_id, patch.patch_fingerprint)
            if patch.patch_fingerprint:
                found += [
                    (n, v, "carried", src)
                    # the lowest version's first, then by message-id: a trailer given twice is
                    # kept from the same reply whatever was stored first
                    for ver, n, v, src in sorted(earlier.get(key, ()))
                    if ver < version.version
                ]
            if not found:
                continue
            own = None if patch.trailers in _NONE else orjson.loads(patch.trailers)
            rows = _new_trailers(patch.id, found, already=own or [])
            new_rows += rows
            if patch.patch_fingerprint and rows:
                earlier.setdefault(key, []).extend(
                    (version.version, name, value, source) for _, name, value, _, source in rows
                )
    insert_tuples(conn, _TRAILERS, _TRAILER_KEYS, new_rows)


def _new_trailers(
    patch_id: int, found: list[tuple[str, str, str, str]], already: list[list[str]]
) -> list[tuple[int, str, str, str, str]]:
    """Trailer rows (`_TRAILER_KEYS`) for what others gave, each once, leaving out what the
    patch already has."""
    have = {(name.lower(), value.lower()) for name, value in already}
    rows = []
    for name, value, origin, source in found:
        key = (name.lower(), value.lower())
        if key not in have:
            have.add(key)
            rows.append((patch_id, name, value, origin, source))
    return rows


def _versions_to_rebuild(conn: sa.Connection, ids: set[int]) -> list[Any]:
    if not ids:
        return []
    chosen = conn.execute(_CHOSEN_VERSIONS, {"ids": list(ids)}).all()
    floor: dict[int, int] = {}
    for v in chosen:
        floor[v.series_id] = min(floor.get(v.series_id, v.version), v.version)
    later = conn.execute(_SERIES_VERSIONS, {"series": list(floor)}).all()
    versions = list(chosen) + [v for v in later
                               if v.id not in ids and v.version > floor[v.series_id]]
    return sorted(versions, key=lambda v: (v.version, v.id))


def _earlier_trailers(
    conn: sa.Connection, versions: list[Any]
) -> dict[tuple[int, str], list[tuple[int, str, str, str]]]:
    """Reviewers' trailers on versions not being rebuilt, by (series, patch fingerprint)."""
    rebuilt = {v.id for v in versions}
    rows = conn.execute(_EARLIER_TRAILERS, {"series": list({v.series_id for v in versions})})
    out: dict[tuple[int, str], list[tuple[int, str, str, str]]] = defaultdict(list)
    for r in rows:
        if r.id not in rebuilt:
            out[(r.series_id, r.patch_fingerprint)].append(
                (r.version, r.name, r.value, r.source_msgid))
    return out


Replies = dict[str, list[tuple[str, list[tuple[str, str]]]]]  # parent id -> (reply id, trailers)


def _replies_by_parent(conn: sa.Connection, thread_ids: set[int]) -> dict[int, Replies]:
    """The replies in each thread by the message they reply to: (message-id, the reviewers'
    trailers in it), in order of message-id. A reply's trailer naming someone other than its
    sender is not counted (`given_by_sender`)."""
    out: dict[int, Replies] = defaultdict(lambda: defaultdict(list))
    if not thread_ids:
        return out
    rows = conn.execute(_REPLIES, {"threads": list(thread_ids)})
    for thread_id, msgid, in_reply_to, trailers, sender_name, sender_email in rows:
        if in_reply_to:
            given = [] if trailers in _NONE else [
                (n, v) for n, v in orjson.loads(trailers) or ()
                if n in REVIEW_TRAILERS and given_by_sender(n, v, sender_name, sender_email)
            ]  # fmt: skip
            out[thread_id][in_reply_to].append((msgid, given))
    # By message-id, not as stored: a trailer given in two replies is kept from the same one
    # whatever arrived first.
    for thread in out.values():
        for siblings in thread.values():
            siblings.sort()
    return out


def _collect(msgid: str, replies: Replies) -> list[Found]:
    """Reviewers' trailers in the reply tree below `msgid`."""
    out: list[Found] = []
    seen = {msgid}
    stack = [msgid]
    while stack:
        for reply, given in replies.get(stack.pop(), ()):
            if reply in seen:
                continue
            seen.add(reply)
            if given:
                out += [(n, v, reply) for n, v in given]
            stack.append(reply)
    return out
