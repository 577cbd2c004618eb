"""A stored message as series grouping sees it, and who counts as one author."""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from bot.db.models import Message
from bot.mail.subject import point_of

# The kinds of message series are assembled from: cover letters and patches, and `other` mail,
# which may be a cover letter written without any tag (`grouping`, rule 7).
ASSEMBLED_KINDS = ("cover", "patch", "other")
# Whether a stored message carries a diff (one names a file at least): selected with the other
# columns `thread_message` reads.
HAS_DIFF = (sa.func.json_array_length(Message.files) > 0).label("has_diff")
# What series assembly reads of a thread's parts: `thread_message`'s columns and what a version
# stores of them.
POSTING_COLUMNS = (
    Message.id, Message.msgid, Message.in_reply_to, Message.references, Message.thread_id,
    Message.from_email, Message.from_name, Message.date, Message.kind, Message.version,
    Message.version_explicit, Message.counter, Message.total, Message.resend, Message.rfc,
    Message.title, Message.prefixes, Message.base_commit, Message.change_id,
    Message.claimed_msgid, Message.patch_fingerprint, HAS_DIFF,
)  # fmt: skip


@dataclass(frozen=True)
class ThreadMessage:
    """What grouping needs to know of one stored message."""

    msgid: str
    in_reply_to: str | None
    references: tuple[str, ...]
    author: str  # lower-cased address
    date: dt.datetime | None
    kind: str  # a MessageKind value
    version: int
    version_explicit: bool
    counter: int
    total: int
    resend: bool
    title: str
    author_name: str = ""  # the display name, as written
    rfc: bool = False
    prefixes: tuple[str, ...] = ()  # subject tags besides PATCH, vN, N/M, RFC, RESEND
    has_diff: bool = True  # a `[PATCH 2/5]` without one takes no place in its posting
    fingerprint: str | None = None  # of its diff (`Message.patch_fingerprint`)
    # a cover letter's titles by author (`bot.mail.shortlog`), read only where grouping asks
    # (`bot.series.cover_shortlogs`)
    shortlog: tuple[tuple[str, ...], ...] = ()
    # the files its diff touches, read only where grouping asks (`sent_again_in_reply`); None
    # where not read
    paths: frozenset[str] | None = None

    @property
    def is_posting_part(self) -> bool:
        return self.kind in ("cover", "patch")

    def parents(self) -> list[str]:
        """Ancestors, nearest first: In-Reply-To, then References from the end."""
        out = [self.in_reply_to] if self.in_reply_to else []
        out += [r for r in reversed(self.references) if r not in out and r != self.msgid]
        return out

    @functools.cached_property
    def hook(self) -> str | None:
        """The message this one was sent in reply to."""
        parents = self.parents()
        return parents[0] if parents else None

    @functools.cached_property
    def release(self) -> tuple[int, int]:
        """The version and its point release: (4, 1) for `v4.1`, (4, 0) for `v4`."""
        return (self.version, point_of(self.version, self.prefixes))

    @property
    def key(self) -> tuple[int, int, int, bool]:
        """What the parts of one posting share besides their author: release, size, RESEND."""
        return (*self.release, self.total, self.resend)


def same_author(a: ThreadMessage, b: ThreadMessage) -> bool:
    """One person: the same address, or the same display name (a work and a home address),
    less what a sender adds after it for one of them: Russell King sent his cover letters as
    "Russell King - ARM Linux admin" <linux@...> and their patches as "Russell King"
    <rmk+kernel@...>; others add "(Oracle)" or "(Intel)"."""
    if a.author == b.author:
        return True
    name = _plain_name(a.author_name)
    return bool(name) and name == _plain_name(b.author_name)


_ADDED_TO_NAME = re.compile(r"\s+(?:-\s.*|\(.*\))$")  # "Name - role", "Name (Company)"


@functools.lru_cache(maxsize=4096)
def _plain_name(name: str) -> str:
    name = " ".join(name.strip("\"' ").lower().split())
    if "@" in name:
        return ""
    return _ADDED_TO_NAME.sub("", name)


def thread_message(row: Mapping[str, Any]) -> ThreadMessage:
    """A `messages` row (a stored row's mapping with `HAS_DIFF`, or a row about to be stored)
    for grouping."""
    date = row["date"]
    if date is not None and date.tzinfo is None:
        date = date.replace(tzinfo=dt.UTC)
    return ThreadMessage(
        msgid=row["msgid"],
        in_reply_to=row["in_reply_to"],
        references=tuple(row["references"] or ()),
        author=row["from_email"],
        author_name=row["from_name"],
        date=date,
        kind=row["kind"],
        version=row["version"],
        version_explicit=row["version_explicit"],
        counter=row["counter"],
        total=row["total"],
        resend=row["resend"],
        title=row["title"],
        rfc=row["rfc"],
        prefixes=tuple(row["prefixes"] or ()),
        has_diff=bool(row["has_diff"]),
        fingerprint=row["patch_fingerprint"],
    )
