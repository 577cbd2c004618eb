"""A run of one public-inbox epoch's commits, read by the parse worker it is handed to.

The mbox path hands the parse workers byte ranges of the file (`MboxSlice`); the git path hands
them commits. Each worker reads its slice's blobs through a `git cat-file --batch` of its own, so
no mail passes through the storing process: when that process read every blob and pickled it
on to a worker, it was the busiest of the three and the workers waited on it (a backfill used
1.5 of 2 cores). What a slice reads, in commit order, is mail to parse, a removal (a commit that
renames `m` to `d`) or a skip (an object that could not be read, with its reason).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bot.ingest.catfile import read_blobs
from bot.ingest.sources import RawMail

_MSGID = re.compile(rb"^message-id:[ \t]*<?([^>\s]+)>?", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Change:
    """A message blob a commit of an epoch added, or a message it removed (`m` -> `d`, or a v1
    inbox's file deleted: `blob` is then the removed message)."""

    commit: str
    blob: str
    removed: bool


@dataclass(frozen=True)
class Removal:
    msgid: str
    commit: str  # the archive's commit that removed it
    reason: str = "removed from the archive"


@dataclass(frozen=True)
class Skip:
    """An archive commit whose message object could not be read, and why."""

    epoch: int | None
    commit: str
    object: str
    reason: str


def msgid_of(raw: bytes) -> str:
    head = raw.split(b"\n\n", 1)[0]
    found = _MSGID.search(head)
    return found.group(1).decode(errors="replace") if found else ""


@dataclass(frozen=True)
class EpochSlice:
    """Consecutive `changes` of epoch `epoch` (the repository `git_dir`) of the archive at
    `location`."""

    location: str
    epoch: int
    git_dir: str
    changes: tuple[Change, ...]

    def position(self) -> dict[str, str]:
        """The epoch's cursor once the whole slice is stored."""
        return {f"epoch/{self.epoch}": self.changes[-1].commit}

    def read(self) -> Iterator[RawMail | Removal | Skip]:
        """Each change's mail, removal or skip, in commit order."""
        blobs = read_blobs(Path(self.git_dir), [c.blob for c in self.changes])
        for change, blob in zip(self.changes, blobs, strict=True):
            if blob.data is None:
                yield Skip(self.epoch, change.commit, change.blob, blob.problem or "")
            elif change.removed:
                # The stored copy (if any) stays; the removal is recorded beside it.
                yield Removal(msgid_of(blob.data), change.commit,
                              f"removed from {self.location} epoch {self.epoch}")
            else:
                origin = f"pi-git:{self.location}#{self.epoch}:{change.commit}"
                yield RawMail(blob.data, origin)
