"""Following a public-inbox v2 archive through git: the epochs `git/N.git`, walked by cursor.

The archive is a local path (read in place) or a URL (each epoch `<URL>/N` cloned as a mirror
under the data directory, then fetched). Each message is a commit whose tree holds one blob `m`;
a removal is a commit renaming `m` to `d`. Per epoch the cursor is the last commit stored; a
cursor that is no longer an ancestor of the epoch's head means the history was rewritten (a
purge), and the epoch is walked again from the start (storing is idempotent). Blobs are read by
one long-running `git cat-file --batch` per epoch, which is what makes a backfill fast.
"""

from __future__ import annotations

import hashlib
import logging
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from bot.config import IngestSettings, ListSettings, data_dir
from bot.db.session import Database
from bot.git import GitError, run_git
from bot.ingest.cursor import CursorKey, load_position, record_poll
from bot.ingest.live import LiveSummary, Removal, Step, store_steps
from bot.ingest.sources import RawMail

log = logging.getLogger(__name__)

_MSGID = re.compile(rb"^message-id:[ \t]*<?([^>\s]+)>?", re.IGNORECASE | re.MULTILINE)


class GitArchiveError(GitError):
    """The archive cannot be read or fetched; the text says which epoch and why."""


# An epoch is a bare repository; its failures are the archive's.
_EPOCH = {"bare": True, "error": GitArchiveError}


@dataclass(frozen=True)
class Change:
    """One commit of an epoch: a message blob added, or a message removed (`m` -> `d`)."""

    commit: str
    blob: str
    removed: bool


def parse_log(out: bytes) -> list[Change]:
    """Changes from `git log --reverse --raw --no-renames --no-abbrev --format=%x00%H`."""
    changes: list[Change] = []
    for record in out.split(b"\x00")[1:]:
        lines = record.split(b"\n")
        commit = lines[0].strip().decode()
        added: dict[str, str] = {}
        for line in lines[1:]:
            if not line.startswith(b":"):
                continue
            meta, _, path = line.partition(b"\t")
            fields = meta.split()
            status, new_blob, old_blob = fields[4][:1], fields[3].decode(), fields[2].decode()
            name = path.decode(errors="replace")
            if status in (b"A", b"M"):
                added[name] = new_blob
            elif status == b"D":
                added.setdefault(f"-{name}", old_blob)
        if "m" in added:
            changes.append(Change(commit, added["m"], removed=False))
        elif "d" in added:
            changes.append(Change(commit, added["d"], removed=True))
    return changes


def msgid_of(raw: bytes) -> str:
    head = raw.split(b"\n\n", 1)[0]
    found = _MSGID.search(head)
    return found.group(1).decode(errors="replace") if found else ""


class CatFile:
    """One `git cat-file --batch`: blob ids in, contents out, in order, without a round trip
    per blob (a writer thread feeds ids while the caller reads)."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 20,
        )

    def read_all(self, blobs: list[str]) -> Iterator[bytes]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        stdin: IO[bytes] = self.proc.stdin

        def feed() -> None:
            try:
                for blob in blobs:
                    stdin.write(blob.encode() + b"\n")
                stdin.close()
            except BrokenPipeError:
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        out = self.proc.stdout
        try:
            for blob in blobs:
                header = out.readline().split()
                if len(header) < 3 or header[1] != b"blob":
                    raise GitArchiveError(f"git cat-file: {blob}: {b' '.join(header).decode()}")
                data = out.read(int(header[2]))
                out.read(1)  # the newline after each object
                yield data
        finally:
            writer.join(timeout=5)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def mirror_dir(url: str) -> Path:
    """Where the epochs of a remote archive are mirrored."""
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", url.split("://", 1)[-1]).strip("_")[:80]
    digest = hashlib.sha1(url.encode()).hexdigest()[:8]
    return data_dir() / "pi-git" / f"{slug}-{digest}"


def _is_remote(location: str) -> bool:
    return location.startswith(("http://", "https://", "git://"))


class PiGitSource:
    """A public-inbox v2 archive on disk (`PATH/git/N.git`) or over git smart HTTP (`URL/N`)."""

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
        found = []
        for path in (self.root / "git").glob("*.git"):
            if path.name[:-4].isdigit():
                found.append((int(path.name[:-4]), path))
        if not found and not self.remote:
            raise GitArchiveError(f"{self.root}: no public-inbox v2 epochs (git/N.git) here")
        return sorted(found)

    def _update_mirror(self) -> None:
        git = self.root / "git"
        git.mkdir(parents=True, exist_ok=True)
        number = 0
        while True:
            path = git / f"{number}.git"
            url = f"{self.location}/{number}"
            if path.exists():
                run_git(path, "fetch", "--quiet", "--prune", "--force", "origin", **_EPOCH)
            else:
                proc = subprocess.run(
                    ["git", "clone", "--quiet", "--mirror", url, str(path)], capture_output=True
                )
                if proc.returncode != 0:
                    if number == 0:
                        raise GitArchiveError(f"{url}: git clone failed: "
                                              f"{proc.stderr.decode().strip()}")
                    break  # no further epoch
            number += 1

    # ---- walking

    def changes(self, git_dir: Path, since: str | None) -> tuple[list[Change], bool]:
        """Commits after `since` on the epoch's head, oldest first; and whether `since` was lost
        from history (rewritten), in which case every commit is returned."""
        head = run_git(git_dir, "rev-parse", "--verify", "--quiet", "HEAD", check=False,
                       **_EPOCH)
        if head.returncode != 0:
            return [], False  # an empty epoch
        rewritten = False
        if since:
            ancestor = run_git(git_dir, "merge-base", "--is-ancestor", since, "HEAD",
                               check=False, **_EPOCH)
            if ancestor.returncode != 0:
                rewritten = True
                since = None
        rev = f"{since}..HEAD" if since else "HEAD"
        out = run_git(git_dir, "log", "--reverse", "--raw", "--no-renames", "--no-abbrev",
                      "--format=%x00%H", rev, **_EPOCH).stdout
        return parse_log(out), rewritten

    def steps(self, position: dict[str, str]) -> Iterator[Step]:
        for number, git_dir in self.epochs():
            cursor_name = f"epoch/{number}"
            changes, rewritten = self.changes(git_dir, position.get(cursor_name))
            if rewritten:
                log.warning("%s: epoch %d history was rewritten (purged?); walking it again",
                            self.location, number)
            if not changes:
                continue
            cat = CatFile(git_dir)
            try:
                blobs = cat.read_all([c.blob for c in changes])
                for change, raw in zip(changes, blobs, strict=True):
                    update = {cursor_name: change.commit}
                    origin = f"pi-git:{self.location}#{number}:{change.commit}"
                    if change.removed:
                        # The stored copy (if any) stays; the removal is recorded beside it.
                        removal = Removal(msgid_of(raw), change.commit,
                                          f"removed from {self.location} epoch {number}")
                        yield Step(removal=removal, position=update)
                    else:
                        yield Step(mail=RawMail(raw, origin), position=update)
            finally:
                cat.close()

    def poll(
        self, db: Database, settings: IngestSettings, known_lists: list[ListSettings] | None = None
    ) -> LiveSummary:
        """Fetch (for a URL), walk every epoch from its cursor, store; errors recorded, raised."""
        try:
            summary = store_steps(db, self.steps(load_position(db, self.key)), key=self.key,
                                  settings=settings, known_lists=known_lists)
        except Exception as exc:
            record_poll(db, self.key, f"{type(exc).__name__}: {exc}")
            raise
        record_poll(db, self.key, None)
        return summary
