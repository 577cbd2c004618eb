"""The normalized record of one list message: what every later stage reads instead of raw mail.

Pure data, no I/O. `bot.mail.parse.parse_message` produces it from raw RFC 822 bytes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum


class MessageKind(StrEnum):
    """What a message is, as the series stage needs to know it."""

    COVER = "cover"  # [PATCH 0/N] ([RFC 0/N]...), or a thread root with a diffstat and no diff
    PATCH = "patch"  # a patch posting: [PATCH ...] subject (not Re:) carrying a diff
    REVIEW = "review"  # a reply without a diff (review comments, trailers, acks)
    INLINE_DIFF = "inline-diff"  # a reply carrying a diff: a reviewer's suggestion, not a patch
    PULL_REQUEST = "pull-request"  # [GIT PULL] with a repository, ref and base commit
    OTHER = "other"  # anything else: announcements, discussions


# The kinds of a reply to a posting, whether or not its client kept the "Re:" (`classify`):
# the messages whose trailers a patch is given (`bot.series.trailers`).
REPLY_KINDS = frozenset({MessageKind.REVIEW, MessageKind.INLINE_DIFF})


@dataclass(frozen=True)
class Address:
    name: str
    email: str  # lower-cased; "" when the header had none


@dataclass(frozen=True)
class Subject:
    """A subject parsed by b4's rules (b4.LoreSubject)."""

    raw: str  # the decoded subject, whitespace folded
    title: str  # without Re: and [bracketed] prefixes
    reply: bool  # Re:/Aw:/Fwd:
    patch: bool  # has a PATCH tag
    version: int  # vN, 1 when absent
    version_explicit: bool
    counter: int  # N in N/M; 1 when absent; 0 for a cover letter
    total: int  # M in N/M; 1 when absent
    counters_explicit: bool
    rfc: bool
    resend: bool
    prefixes: tuple[str, ...]  # extra tags other than PATCH, vN, N/M, RFC, RESEND: e.g. mm-unstable
    notes: tuple[str, ...] = ()  # what was not read as written (a version out of range), why


@dataclass(frozen=True)
class FileChange:
    """One file a diff touches."""

    path: str  # the path after the change (the old path for a deletion)
    change: str  # "modify", "add", "delete", "rename", "copy", "mode"
    old_path: str | None = None  # for renames and copies
    binary: bool = False
    added: int = 0
    removed: int = 0


@dataclass(frozen=True)
class Trailer:
    name: str  # canonical capitalisation: "Reviewed-by", "Signed-off-by", "Fixes", ...
    value: str


@dataclass
class ParsedMessage:
    msgid: str  # without angle brackets
    in_reply_to: str | None
    references: list[str]  # oldest first, without angle brackets, In-Reply-To last if missing
    sender: Address  # who wrote it: From, or the author a relay names (bot.mail.relayed)
    to: list[Address]
    cc: list[Address]
    date: dt.datetime | None  # timezone-aware, UTC; None when the Date header is unusable
    list_id: str | None  # from List-Id, e.g. "linux-mm.kvack.org"
    subject: Subject
    body: str  # the text/plain body, decoded to str, invalid bytes replaced
    kind: MessageKind
    diff: str | None  # the unified diff part of the body, if any
    files: list[FileChange]
    trailers: list[Trailer]  # trailers written in this message (not quoted ones)
    base_commit: str | None
    change_id: str | None
    patch_fingerprint: str | None  # like `git patch-id --stable`: same change, same id
    problems: list[str] = field(default_factory=list)  # non-fatal oddities, for the record

    @property
    def insertions(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(f.removed for f in self.files)


class UnparseableMessage(ValueError):
    """Raised for input that cannot be stored as a message; the text is the quarantine reason."""
