"""Which messages of a thread form which posting (one version of a series): a pure function.

Real lists thread series in every way: replies to a cover letter (shallow), chains of replies
(deep), no threading at all, a v2 threaded under v1, patches that arrive before their cover
letter. The rule here: a patch belongs with the nearest ancestor that is a cover letter or patch
of the same author and compatible version; the posting is named by the message-id at the top of
that chain (its *anchor*), even when that message has not arrived yet. So the grouping converges
to the same answer whatever order the messages come in.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field


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

    @property
    def is_posting_part(self) -> bool:
        return self.kind in ("cover", "patch")

    def parents(self) -> list[str]:
        """Ancestors, nearest first: In-Reply-To, then References from the end."""
        out = [self.in_reply_to] if self.in_reply_to else []
        out += [r for r in reversed(self.references) if r not in out and r != self.msgid]
        return out


@dataclass
class Posting:
    """One version of a series as found in a thread."""

    anchor: str
    author: str
    version: int
    expected: int
    cover: str | None = None
    patches: dict[int, str] = field(default_factory=dict)  # counter -> msgid
    resend: bool = False
    title: str = ""
    date: dt.datetime | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return all(i in self.patches for i in range(1, self.expected + 1))

    @property
    def members(self) -> list[str]:
        return ([self.cover] if self.cover else []) + [
            self.patches[i] for i in sorted(self.patches)
        ]

    @property
    def loose(self) -> bool:
        """No cover and no threading: `git format-patch --no-thread` sends such patches."""
        return self.cover is None and self.expected > 1 and len(self.patches) < self.expected


def _joins(child: ThreadMessage, parent: ThreadMessage) -> bool:
    """Whether `child` (a patch) continues the posting that `parent` belongs to."""
    if not parent.is_posting_part or parent.author != child.author:
        return False
    if parent.resend != child.resend:
        return False
    if parent.kind == "cover":
        # A new version is often threaded under the old version's cover letter: that is not
        # its cover. A cover whose version is higher than its patches' is (a forgotten -v).
        return not (
            child.version_explicit and parent.version_explicit and parent.version < child.version
        )
    # Patch under patch: the same posting only for numbered patches of one version.
    return (
        parent.total == child.total > 1
        and parent.counter != child.counter
        and parent.version == child.version
    )


def group_postings(messages: Iterable[ThreadMessage]) -> list[Posting]:
    """Postings found among `messages` (usually one thread), in order of their dates."""
    by_id = {m.msgid: m for m in messages}
    anchors: dict[str, str] = {}

    def anchor_of(msg: ThreadMessage, seen: frozenset[str] = frozenset()) -> str:
        if msg.msgid in anchors:
            return anchors[msg.msgid]
        result = msg.msgid
        if msg.kind == "patch" and msg.msgid not in seen:
            for pid in msg.parents():
                parent = by_id.get(pid)
                if parent is None:
                    # Not here yet (or never archived): hang from it, so that the cover letter
                    # arriving later finds its patches.
                    result = pid
                    break
                if _joins(msg, parent):
                    result = anchor_of(parent, seen | {msg.msgid})
                break
        anchors[msg.msgid] = result
        return result

    postings: dict[str, Posting] = {}
    ordered = sorted(
        (m for m in by_id.values() if m.is_posting_part),
        key=lambda m: (m.date or dt.datetime.min.replace(tzinfo=dt.UTC), m.counter, m.msgid),
    )
    for msg in ordered:
        anchor = anchor_of(msg)
        posting = postings.get(anchor)
        if posting is None:
            posting = postings[anchor] = Posting(
                anchor=anchor,
                author=msg.author,
                version=msg.version,
                expected=msg.total,
                resend=msg.resend,
                date=msg.date,
            )
        if msg.kind == "cover" and msg.msgid == anchor:
            posting.cover = msg.msgid
        elif msg.kind == "patch":
            if msg.counter in posting.patches:
                # A patch sent twice in one posting: the later one wins (it was a correction).
                posting.notes.append(
                    f"patch {msg.counter}/{msg.total} was sent twice; using {msg.msgid}"
                )
            posting.patches[msg.counter] = msg.msgid
        else:
            continue
    for posting in postings.values():
        _settle(posting, by_id)
    return sorted(postings.values(), key=lambda p: (p.date is None, p.date, p.anchor))


def _settle(posting: Posting, by_id: dict[str, ThreadMessage]) -> None:
    """Version, size and title of a posting from its cover letter and patches."""
    cover = by_id.get(posting.cover) if posting.cover else None
    patches = [by_id[m] for m in posting.patches.values()]
    explicit = {p.version for p in patches if p.version_explicit}
    if cover is not None and cover.version_explicit:
        posting.version = cover.version
        if explicit - {cover.version}:
            posting.notes.append(
                f"the cover letter says v{cover.version} but patches say "
                + ", ".join(f"v{v}" for v in sorted(explicit))
            )
    elif explicit:
        posting.version = max(explicit)
    else:
        posting.version = cover.version if cover else 1
    totals = [m.total for m in ([cover] if cover else []) + patches]
    posting.expected = max(totals + [max(posting.patches, default=1)])
    if cover is not None:
        posting.title = cover.title
    elif patches:
        first = by_id[posting.patches[min(posting.patches)]]
        posting.title = first.title
    dates = [m.date for m in ([cover] if cover else []) + patches if m.date]
    posting.date = min(dates) if dates else None
    if cover is not None and cover.resend:
        posting.resend = True
