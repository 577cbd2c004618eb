"""Walking a large epoch keeps git's memory bounded: the pack is read through small windows.

By default git maps a pack in windows of up to 1 GB and keeps them, so the `git log` that lists
an epoch's commits grew to about the size of the pack it walked (381 MB for linux-block's
313 MB pack; an epoch of lore's LKML is a 1 GB pack), beyond the 500 MB a backfill may use.
The epoch here is made with `git fast-import`, its blobs stored uncompressed: a 200 MB pack in
a few seconds, its commits spread through it as public-inbox's are.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

COMMITS = 10_000
BLOB_BYTES = 20_000  # a list mail's size: a commit every 20 KB of pack, as in a real epoch
MEASURE = """
import resource, sys
from pathlib import Path
from bot.ingest.pigit import PiGitSource
changes, _ = PiGitSource(sys.argv[1], None).changes(Path(sys.argv[2]), None)
print(len(changes), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def big_epoch(git_dir: Path) -> None:
    """An epoch of `COMMITS` messages, each commit replacing `m` as public-inbox's do."""
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    stream = bytearray()
    for n in range(COMMITS):
        stream += b"blob\nmark :%d\ndata %d\n%s\n" % (n + 1, BLOB_BYTES, os.urandom(BLOB_BYTES))
        stream += (b"commit refs/heads/master\ncommitter A U Thor <a@example.org> %d +0000\n"
                   b"data 4\nmail\nM 100644 :%d m\n" % (1_700_000_000 + n, n + 1))
    subprocess.run(["git", "--git-dir", str(git_dir), "-c", "core.compression=0",
                    "fast-import", "--quiet"], input=bytes(stream), check=True)
    subprocess.run(["git", "--git-dir", str(git_dir), "symbolic-ref", "HEAD",
                    "refs/heads/master"], check=True)


def test_listing_an_epoch_maps_little_of_its_pack(tmp_path: Path) -> None:
    git_dir = tmp_path / "archive" / "git" / "0.git"
    big_epoch(git_dir)
    pack_mb = sum(p.stat().st_size for p in (git_dir / "objects" / "pack").glob("*.pack")) >> 20
    assert pack_mb >= 190

    # In a process of its own: its children are the git commands of the walk, and nothing else.
    out = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path / "archive"), str(git_dir)],
                         capture_output=True, text=True, check=True).stdout.split()
    listed, git_peak_mb = int(out[0]), int(out[1])

    assert listed == COMMITS
    assert git_peak_mb < 100, f"git used {git_peak_mb} MB to list an epoch of a {pack_mb} MB pack"
