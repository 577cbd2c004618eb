"""Two different mails under one Message-ID: both kept, neither silently taken for the other.

A Message-ID is whatever the sender wrote, so anyone can send a mail that reuses a patch's id.
Before issue 16 (item 8) the first to arrive was stored and the other counted as a duplicate:
a forged copy sent first was what got applied and built. public-inbox keeps both and serves
both; so does lorelab. A mail whose id is taken is the same mail when what a reader sees of it
is the same (`KEY_COLUMNS`: sender, subject, date, the diff's fingerprint, the trailers), which
is what tells a re-read or a copy from another archive (other Received headers) from a
different mail. A different one is stored as a *copy*: under a stand-in id derived from its
content (`<sha256@copy.lorelab.invalid>`, the same on every re-read, so a rerun stores it once)
with `claimed_msgid` naming the id it carries. Which copy a series takes is decided by
`bot.series.shared_ids`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Message
from bot.db.session import json_text
from bot.db.value_lists import in_param
from bot.ingest.prepare import MessageRow

KEY_COLUMNS = ("from_email", "subject", "date", "patch_fingerprint", "trailers")
COPY_DOMAIN = "copy.lorelab.invalid"
# Built once: the lists they look up are their parameters. The trailers as the JSON text
# stored, as a message row holds them.
_STORED = sa.select(
    Message.msgid, Message.id, *[getattr(Message, c) for c in KEY_COLUMNS[:-1]],
    sa.cast(Message.trailers, sa.Text).label("trailers"),
).where(in_param(Message.msgid, "msgids"))
_IDS = sa.select(Message.msgid, Message.id).where(in_param(Message.msgid, "msgids"))


def content_key(values: Any) -> tuple[Any, ...]:
    """What a reader sees of a mail (a message row, or a stored one read with `_STORED`): equal
    for the same mail however it reached us."""
    date = values.date
    return (values.from_email, values.subject, date.isoformat() if date else None,
            values.patch_fingerprint, [list(t) for t in orjson.loads(values.trailers) or ()])


def as_copy(row: MessageRow) -> MessageRow:
    """The message row as a copy: stored under a stand-in id, claiming the one it carries."""
    claimed = row.msgid
    digest = hashlib.sha256(repr((claimed, content_key(row))).encode("utf-8", "replace"))
    msgid = f"{digest.hexdigest()[:40]}@{COPY_DOMAIN}"
    problems = [*orjson.loads(row.problems), copy_note(claimed, msgid)]
    return row._replace(msgid=msgid, claimed_msgid=claimed, problems=json_text(problems))


def copy_note(claimed: str, msgid: str) -> str:
    """The problem a copy's row records: which id it claims, and the id it is kept under."""
    return (f"Message-ID <{claimed[:200]}> is already taken by a different mail; this one is "
            f"kept as <{msgid}>")


def sort_out(session: Session, messages: Iterable[MessageRow]
             ) -> tuple[dict[str, MessageRow], dict[str, int], int]:
    """(the batch's rows by msgid, stored ones included, copies made where a different mail
    holds the id; the ids of those already stored; how many were the same mail twice in the
    batch)."""
    by_id: dict[str, list[MessageRow]] = {}
    for row in messages:
        by_id.setdefault(row.msgid, []).append(row)
    conn = session.connection()
    stored = {hit.msgid: hit for hit in conn.execute(_STORED, {"msgids": list(by_id)})}
    rows: dict[str, MessageRow] = {}
    existing: dict[str, int] = {}
    copies: list[str] = []
    twice = 0
    for msgid, group in by_id.items():
        hit = stored.get(msgid)
        if hit is None and len(group) == 1:  # nearly every mail: a new id, once in the batch
            rows[msgid] = group[0]
            continue
        holder = content_key(hit) if hit is not None else None  # who holds the id
        for row in group:
            key = content_key(row)
            if holder is None:
                holder = key
                rows[msgid] = row
            elif key == holder:
                if hit is not None and msgid not in existing:
                    existing[msgid] = hit.id  # stored before: the caller counts it
                    rows[msgid] = row
                else:
                    twice += 1
            else:
                copy = as_copy(row)
                if copy.msgid in rows:
                    twice += 1
                else:
                    rows[copy.msgid] = copy
                    copies.append(copy.msgid)
    if copies:  # a copy stored before is a duplicate like any other
        existing.update((msgid, id_) for msgid, id_ in conn.execute(_IDS, {"msgids": copies}))
    return rows, existing, twice


def held(session: Session, rows: list[MessageRow]) -> list[bool]:
    """For each message row, whether the database holds its mail: under its Message-ID as
    the same mail (`content_key`), or as its copy."""
    copy_ids = [as_copy(row).msgid for row in rows]
    msgids = [row.msgid for row in rows] + copy_ids
    stored = {hit.msgid: content_key(hit)
              for hit in session.connection().execute(_STORED, {"msgids": msgids})}  # fmt: skip
    return [stored.get(row.msgid) == content_key(row) or copy_id in stored
            for row, copy_id in zip(rows, copy_ids, strict=True)]  # fmt: skip


def threads_of_claimed(session: Session, copies: list[MessageRow]) -> set[int]:
    """The threads of the mails whose ids `copies` claim: their series are ambiguous now."""
    claimed = {row.claimed_msgid for row in copies}
    found = session.scalars(
        sa.select(Message.thread_id).where(
            Message.msgid.in_(claimed) | Message.claimed_msgid.in_(claimed)
        )
    )
    return {t for t in found if t is not None}
