"""Following a public-inbox archive through git: its epochs, each walked from its own cursor.

The archive is a local path (read in place) or a URL (each epoch `<URL>/N`, or the one epoch the
URL names, cloned as a mirror under the data directory, then fetched). On disk it is any of the
layouts people hold (`bot.ingest.archive_layout`). In a v2 epoch each message is a commit whose
tree holds one blob `m`; a removal is a commit renaming `m` to `d`. In a v1 inbox each message
is a file of its own; a removal deletes it (over HTTP, a v1 inbox is followed through its feed,
`bot.ingest.lore`). Per epoch the cursor is the last commit stored; a cursor that is no longer
an ancestor of the epoch's head means the history was rewritten (a purge), and the epoch is
walked again from the start (storing is idempotent). Blobs are read by a parse worker, a slice
of an epoch at a time (`bot.ingest.epoch_slice`); a blob that is missing or corrupt is recorded
as skipped (`ingest_skips`, with its commit and reason) and the walk goes on past it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from bot.config import IngestSettings, ListSettings, data_dir
from bot.db.session import Database
from bot.git import BOUNDED_PACK_MAPS, run_git
from bot.ingest.archive_layout import (
    V1_MESSAGE,
    GitArchiveError,
    epoch_of_url,
    find_epochs,
    holds_mail,
)
from bot.ingest.cursor import CursorKey, load_position, record_poll
from bot.ingest.epoch_slice import Change, EpochSlice
from bot.ingest.live import LiveSummary, store_slices

log = logging.getLogger(__name__)


# An epoch is a bare repository; its failures are the archive's.
_EPOCH = {"bare": True, "error": GitArchiveError}


def parse_log(out: bytes) -> list[Change]:
    """Changes from `git log --reverse --raw --no-renames --no-abbrev --format=%x00%H`, in
    commit order: a v2 epoch's one message (`m`) or removal (`d`) per commit, or the message
    files a commit of a v1 inbox adds or deletes (one each, as public-inbox writes them)."""
    changes: list[Change] = []
    for record in out.split(b"\x00")[1:]:
        lines = record.split(b"\n")
        commit = lines[0].strip().decode()
        added: dict[bytes, str] = {}
        for line in lines[1:]:
            if not line.startswith(b":"):
                continue
            meta, _, path = line.partition(b"\t")
            fields = meta.split()
            status, new_blob, old_blob = fields[4][:1], fields[3].decode(), fields[2].decode()
            if V1_MESSAGE.fullmatch(path):
                if status in (b"A", b"M", b"D"):
                    removed = status == b"D"
                    changes.append(Change(commit, old_blob if removed else new_blob, removed))
            elif status in (b"A", b"M"):
                added[path] = new_blob
        if b"m" in added:
            changes.append(Change(commit, added[b"m"], removed=False))
        elif b"d" in added:
            changes.append(Change(commit, added[b"d"], removed=True))
    return changes


def commit_runs(changes: list[Change], size: int) -> Iterator[tuple[Change, ...]]:
    """`changes` in runs of `size`, a run made longer rather than end inside a commit: the
    cursor a stored run leaves is its last commit, so the rest of a commit cut in two would be
    taken as stored (a v1 commit may add several messages)."""
    start = 0
    while start < len(changes):
        end = min(start + size, len(changes))
        while end < len(changes) and changes[end].commit == changes[end - 1].commit:
            end += 1
        yield tuple(changes[start:end])
        start = end


def mirror_dir(url: str) -> Path:
    """Where the epochs of a remote archive are mirrored."""
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", url.split("://", 1)[-1]).strip("_")[:80]
    digest = hashlib.sha1(url.encode()).hexdigest()[:8]
    return data_dir() / "pi-git" / f"{slug}-{digest}"


def _is_remote(location: str) -> bool:
    return location.startswith(("http://", "https://", "git://"))


class PiGitSource:
    """A public-inbox archive on disk (`find_epochs`) or a v2 one over git smart HTTP: its
    epochs (`URL/N`), or one epoch the URL names (`epoch_of_url`)."""

    kind = "pi-git"

    def __init__(self, location: str, list_name: str | None, *, mirror: Path | None = None):
        self.location = location.rstrip("/")
        self.key = CursorKey(self.kind, self.location, list_name)
        self.remote = _is_remote(self.location)
        self.root = (mirror or mirror_dir(self.location)) if self.remote else Path(self.location)

    # ---- epochs

    def epochs(self) -> list[tuple[int, Path]]:
        """The epochs on disk after bringing a mirror up to date, oldest first."""
        if self.remote:
            self._update_mirror()
        found = find_epochs(self.root)
        if not found and not self.remote:
            raise GitArchiveError(
                f"{self.root}: no public-inbox archive here; give a v2 inbox (the folder holding"
                " git/0.git), one epoch's git repository, or a v1 inbox's git repository")
        return found

    def _update_mirror(self) -> None:
        git = self.root / "git"
        git.mkdir(parents=True, exist_ok=True)
        alone = epoch_of_url(self.location)
        if alone is not None:  # one epoch followed on its own: lore's `<inbox>/N`, GitHub's mirrors
            self._mirror_epoch(self.location, git / f"{alone}.git", first=True)
            return
        number = 0
        while self._mirror_epoch(f"{self.location}/{number}", git / f"{number}.git",
                                 first=number == 0):
            number += 1

    def _mirror_epoch(self, url: str, path: Path, *, first: bool) -> bool:
        """Bring the mirror `path` of the epoch at `url` up to date, cloning it the first time;
        False when there is no such epoch (GitArchiveError when it is the `first`)."""
        if path.exists():
            run_git(path, "fetch", "--quiet", "--prune", "--force", "origin", **_EPOCH)
            return True
        proc = subprocess.run(["git", "clone", "--quiet", "--mirror", url, str(path)],
                              capture_output=True)
        if proc.returncode == 0:
            return True
        if first:
            raise GitArchiveError(
                f"{url}: git clone failed: {proc.stderr.decode(errors='replace').strip()} (a URL is"
                " mirrored as an archive's epochs, URL/0, URL/1 ..., or as the one epoch it names,"
                " URL/N; follow a v1 inbox with `lorelab ingest lore URL`, or clone it and give its"
                " path)")
        return False

    # ---- walking

    def changes(self, git_dir: Path, since: str | None) -> tuple[list[Change], bool]:
        """Commits after `since` on the epoch's head, oldest first; and whether `since` was lost
        from history (rewritten), in which case every commit is returned."""
        head = run_git(git_dir, "rev-parse", "--verify", "--quiet", "HEAD", check=False,
                       **_EPOCH)
        if head.returncode != 0:
            return [], False  # an empty epoch
        if not since and not holds_mail(git_dir):
            raise GitArchiveError(
                f"{git_dir}: a git repository, but not a public-inbox archive (its head holds no"
                " message `m` and no v1 message folders); give an archive's path")
        rewritten = False
        if since:
            ancestor = run_git(git_dir, "merge-base", "--is-ancestor", since, "HEAD",
                               check=False, **_EPOCH)
            if ancestor.returncode != 0:
                rewritten = True
                since = None
        rev = f"{since}..HEAD" if since else "HEAD"
        out = run_git(git_dir, *BOUNDED_PACK_MAPS, "log", "--reverse", "--raw", "--no-renames",
                      "--no-abbrev", "--format=%x00%H", rev, **_EPOCH).stdout
        return parse_log(out), rewritten

    def slices(self, position: dict[str, str], per_slice: int,
               on_epoch: Callable[[int, int], None] | None = None) -> Iterator[EpochSlice]:
        """Every change after the cursors, epoch by epoch, oldest first, `per_slice` changes to
        a slice; `on_epoch(number, changes)` is told as each epoch starts."""
        for number, git_dir in self.epochs():
            changes, rewritten = self.changes(git_dir, position.get(f"epoch/{number}"))
            if rewritten:
                log.warning("%s: epoch %d history was rewritten (purged?); walking it again",
                            self.location, number)
            if not changes:
                continue
            if on_epoch is not None:
                on_epoch(number, len(changes))
            for part in commit_runs(changes, per_slice):
                yield EpochSlice(self.location, number, str(git_dir), part)

    def poll(
        self,
        db: Database,
        settings: IngestSettings,
        known_lists: list[ListSettings] | None = None,
        progress: WalkProgress | None = None,
    ) -> LiveSummary:
        """Fetch (for a URL), walk every epoch from its cursor, store; errors recorded, raised.

        Unreadable objects are not errors: each is recorded (`ingest_skips`) and walked past."""
        on_epoch = progress.epoch if progress is not None else None
        on_stored = progress.stored if progress is not None else None
        try:
            slices = self.slices(load_position(db, self.key), settings.batch_size, on_epoch)
            summary = store_slices(db, slices, key=self.key, settings=settings,
                                   known_lists=known_lists, on_stored=on_stored)
        except Exception as exc:
            record_poll(db, self.key, f"{type(exc).__name__}: {exc}")
            raise
        record_poll(db, self.key, None)
        return summary


class WalkProgress:
    """What a walk tells whoever shows its progress: each epoch as it starts (with its number
    of changes) and each batch of changes as it is committed."""

    def epoch(self, number: int, changes: int) -> None:
        """Epoch `number` starts; `changes` commits of it are to be walked."""

    def stored(self, changes: int) -> None:
        """`changes` more commits are stored (or recorded as skipped or removed)."""
