"""The mail of a public-inbox archive, read as the git path reads it: for the benchmarks that
measure on a real list's archive (bench/backfill.py walks it, bench/ingest.py ingests its mail
as an mbox) rather than on the generated corpus."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bot.ingest.archive_layout import find_epochs  # noqa: E402
from bot.ingest.catfile import read_blobs  # noqa: E402
from bot.ingest.pigit import parse_log  # noqa: E402


def epochs_of(archive: Path) -> list[Path]:
    """The archive's epoch repositories, oldest first, in any layout `ingest pi-git` takes."""
    return [git_dir for _, git_dir in find_epochs(archive)]


def archive_mail(archive: Path) -> Iterator[bytes]:
    """Each message the archive added, oldest epoch and commit first, read through one
    `git cat-file --batch` per epoch (a missing object reads as empty); removals are left out."""
    for epoch in epochs_of(archive):
        out = subprocess.run(["git", "--git-dir", str(epoch), "log", "--reverse", "--raw",
                              "--no-renames", "--no-abbrev", "--format=%x00%H"],
                             capture_output=True, check=True).stdout
        blobs = [c.blob for c in parse_log(out) if not c.removed]
        for blob in read_blobs(epoch, blobs):
            yield blob.data or b""
