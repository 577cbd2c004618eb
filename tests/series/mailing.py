"""Posting threads into a test database and reading back what `lorelab series show` shows,
or everything series assembly stored by the Message-IDs that name it (`state`), to compare two
ways of storing the same mail.

Also what `git send-email` does to `git format-patch` files that carry no threading headers
(`format-patch --no-thread`, or files from another run): a fresh Message-ID and Date per mail,
and every mail threaded under the first one sent (send-email's default, `--no-chain-reply-to`).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from typing import Any

import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import Base, Message, Patch, Series, SeriesVersion, Trailer
from bot.db.session import Database
from bot.ingest.sources import RawMail
from bot.ingest.store import IngestSummary, ingest
from bot.series.views import series_dict


def store(
    db: Database, messages: list[bytes], settings: IngestSettings, list_name: str = "linux-mm"
) -> IngestSummary:
    mails = [RawMail(m, f"test#{i}") for i, m in enumerate(messages)]
    return ingest(db, mails, settings=settings, list_name=list_name)


def all_series(db: Database) -> list[dict]:
    with db.session() as session:
        return [
            series_dict(session, s) for s in session.scalars(sa.select(Series).order_by(Series.id))
        ]


def only_series(db: Database) -> dict:
    found = all_series(db)
    assert len(found) == 1, [s["title"] for s in found]
    return found[0]


def msgs_id(raw: bytes) -> str:
    """The Message-ID of a raw mail, without angle brackets."""
    return header(raw, "Message-ID").strip("<>")


def header(raw: bytes, name: str) -> str:
    head = raw.split(b"\n\n", 1)[0].decode()
    match = re.search(rf"^{re.escape(name)}:[ \t]*(.*(?:\n[ \t].*)*)", head, re.M | re.I)
    if match is None:
        raise AssertionError(f"no {name}")
    return " ".join(match[1].split())


def with_header(raw: bytes, name: str, value: str | None) -> bytes:
    """`raw` with header `name` set to `value` (in its place, or after Subject if missing), or
    removed."""
    head, body = raw.split(b"\n\n", 1)
    field = re.compile(rf"^{re.escape(name)}:.*\n(?:[ \t].*\n)*", re.M | re.I)
    text = head.decode() + "\n"
    first = field.search(text)
    if value is None:
        text = field.sub("", text)
    elif first:
        text = text[: first.start()] + f"{name}: {value}\n" + field.sub("", text[first.end() :])
    else:
        subject = re.compile(r"^Subject:.*\n(?:[ \t].*\n)*", re.M)
        text = subject.sub(lambda found: f"{found.group(0)}{name}: {value}\n", text, count=1)
    return text.rstrip("\n").encode() + b"\n\n" + body


def with_body(raw: bytes, text: str) -> bytes:
    """`raw` with its body replaced by `text`."""
    return raw.split(b"\n\n", 1)[0] + b"\n\n" + text.encode()


def send_email(files: list[bytes], start: dt.datetime, domain: str = "example.org") -> list[bytes]:
    """`git send-email files...` as it sends unthreaded files: in the order given, a second
    apart, each with a new Message-ID, all in reply to the first."""
    sent: list[bytes] = []
    first = ""
    for i, raw in enumerate(files):
        when = start + dt.timedelta(seconds=i)
        msgid = f"<{when:%Y%m%d%H%M%S}.{i}-send-email@{domain}>"
        raw = with_header(raw, "Date", email.utils.format_datetime(when))
        raw = with_header(raw, "Message-ID", msgid)
        raw = with_header(raw, "In-Reply-To", first or None)
        raw = with_header(raw, "References", first or None)
        first = first or msgid
        sent.append(raw)
    return sent


def sent_as_addition(patch: bytes, number: str, review: bytes) -> bytes:
    """A single `[PATCH]` sent later as patch `number` ("4/3") of a posting, in reply to a
    review of it, its References the review's and the review."""
    patch = with_header(patch.replace(b"[PATCH] ", f"[PATCH {number}] ".encode(), 1),
                        "In-Reply-To", f"<{msgs_id(review)}>")
    return with_header(patch, "References",
                       f"{header(review, 'References')} <{msgs_id(review)}>")


def discussion_mail(msgid: str, when: dt.datetime, in_reply_to: str | None = None,
                    references: str | None = None) -> bytes:
    """A plain discussion mail with the threading headers given, as written."""
    head = ["From: Rita Reviewer <rita@example.org>", "To: linux-mm@kvack.org",
            f"Subject: Re: reclaim under memcg pressure ({msgid})",
            f"Date: {email.utils.format_datetime(when)}", f"Message-ID: <{msgid}>"]
    if in_reply_to:
        head.append(f"In-Reply-To: <{in_reply_to}>")
    if references:
        head.append("References: " + " ".join(f"<{r}>" for r in references.split()))
    return ("\n".join(head) + "\n\nSee above.\n").encode()


def thread_partition(db: Database) -> set[frozenset[str]]:
    """The stored messages grouped by thread, by Message-ID."""
    with db.session() as session:
        threads: dict[int, set[str]] = {}
        for msgid, thread_id in session.execute(sa.select(Message.msgid, Message.thread_id)):
            threads.setdefault(thread_id, set()).add(msgid)
    return {frozenset(ids) for ids in threads.values()}


def state(db: Database) -> dict[str, Any]:
    """Series, versions, patches and trailers by the message-ids that name them."""
    with db.session() as session:
        run = session.execute
        msgid: dict[int, str] = {}
        # A thread by its messages: its root is the first to come where none names it.
        threads: dict[int, list[str]] = {}
        for message_id, mid, thread_id in run(
            sa.select(Message.id, Message.msgid, Message.thread_id)
        ):
            msgid[message_id] = mid
            threads.setdefault(thread_id, []).append(mid)
        thread = {t: tuple(sorted(ids)) for t, ids in threads.items()}
        anchor: dict[int, str] = {}
        versions = set()
        members: dict[int, list[str]] = {}
        for v in run(sa.select(SeriesVersion)).scalars():
            anchor[v.id] = v.anchor_msgid
            members.setdefault(v.series_id, []).append(v.anchor_msgid)
            versions.add((v.anchor_msgid, v.version, thread[v.thread_id], v.title, v.author_email,
                          v.expected, v.received, v.complete, msgid.get(v.cover_message_id),
                          v.rfc, v.resend, tuple(v.prefixes), v.base_commit, v.change_id,
                          tuple(v.notes), v.date, v.ambiguous))
        series = {(tuple(sorted(members[s.id])), s.title, s.title_key, s.author_name,
                    s.author_email, s.change_id, s.last_mail_at)
                  for s in run(sa.select(Series)).scalars()}
        patch_of = {}
        patches = set()
        for p in run(sa.select(Patch)).scalars():
            patch_of[p.id] = msgid[p.message_id]
            patches.add((msgid[p.message_id], p.index, anchor[p.series_version_id]))
        trailers = {(patch_of[t.patch_id], t.name, t.value, t.origin, t.source_msgid)
                    for t in run(sa.select(Trailer)).scalars()}
    return {"series": series, "versions": versions, "patches": patches, "trailers": trailers}


def emptied(db: Database) -> Database:
    """`db` with no rows left, for the next arrangement."""
    with db.session() as session:
        for table in reversed(Base.metadata.sorted_tables):
            session.execute(table.delete())
        session.commit()
    return db


def untagged(posting: list[bytes], cover_subject: str) -> list[bytes]:
    """A posting as Christoph Hellwig sends one (linux-block, linux-mm): the cover letter's
    subject without tags, its version (if any) at the end; the patches `[PATCH i/N]` only."""
    cover = with_header(posting[0], "Subject", cover_subject)
    return [cover] + [re.sub(rb"^(Subject: \[PATCH) v\d+ ", rb"\1 ", m, flags=re.M)
                      for m in posting[1:]]
