"""The spools of prepared batches (`bot.ingest.spool`) that an ingest killed in a test left,
removed as a later ingest removes them once old enough, so no test leaves files in /dev/shm."""

from __future__ import annotations

import os
import time
from pathlib import Path

from bot.ingest.spool import ABANDONED_AFTER, PREFIX, Spool, default_root


def remove_spools_of(pid: int) -> list[Path]:
    """The spools process `pid` (killed) left; each is aged past `ABANDONED_AFTER` and a new
    spool is made, which must remove them. Returns what was left."""
    left = list(default_root().glob(f"{PREFIX}{pid}-*"))
    old = time.time() - ABANDONED_AFTER - 60
    for spool in left:
        os.utime(spool, (old, old))
    Spool().close()
    assert not [spool for spool in left if spool.exists()], "a killed ingest's spool stayed"
    return left
