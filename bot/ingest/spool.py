"""Prepared batches handed from the parse workers to the storing process through files in
memory (a private directory on tmpfs) rather than through the process pool's pipe.

A batch of 2,000 mails pickles to about 8 MB, mostly compressed raw mail. Through the pool's
pipe it went in 64 KB pieces: the worker made one bytes object of the whole pickle and blocked
on the pipe, the storing process read each piece into a growing buffer before unpickling it.
Written to a file on tmpfs and unpickled from a map of it, the pool's thread spends 0.005 s of
the 0.14 s it did, and a 20,000-mail `ingest mbox` used 1.5-4% less CPU in all (three sets of 8
alternating runs, medians 5.22 -> 5.12, 5.21 -> 5.01, 5.15 -> 5.07 s). The file is unlinked as
soon as it is opened again; the directory goes with the pool.

Where the directory cannot take a batch (a container's /dev/shm is 64 MB), the worker hands
that batch back through the pipe as before, and a batch whose file was removed before it was
read is prepared again: a spool never fails an ingest. A process killed with batches in flight
leaves its directory behind; a spool made later removes those of processes that are gone (the
pid is in the name) once untouched for an hour (a spool in use changes with every batch; the
hour also spares one of a process in another pid namespace).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PREFIX = "lorelab-batches-"
ABANDONED_AFTER = 3600  # seconds a spool of a process that is gone stays untouched before removal


class Spool:
    """A private directory for one pool's batches, removed on `close`."""

    def __init__(self, root: Path | None = None) -> None:
        root = root or default_root()
        _remove_abandoned(root)
        self.path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=root)

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def hand_over(value: Any, directory: str) -> str | Any:
    """In a worker: `value` pickled into a new file in `directory`; the file's path, or `value`
    itself when the directory cannot take it."""
    try:
        fd, path = tempfile.mkstemp(dir=directory)
    except OSError:  # the directory is gone
        return value
    try:
        with open(fd, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:  # no space left: the pipe takes it
        with contextlib.suppress(OSError):
            os.unlink(path)
        return value
    return path


def take_back(handed: str | Any, redo: Callable[[], Any]) -> Any:
    """In the storing process: what `hand_over` wrote (the file is gone after), or the value
    it handed back itself; `redo()` when the file was removed before it could be read (on
    logout systemd-logind removes a user's files in /dev/shm, unless RemoveIPC=no)."""
    if not isinstance(handed, str):
        return handed
    try:
        spooled = open(handed, "rb")  # noqa: SIM115 - closed below, after the unlink
    except FileNotFoundError:
        return redo()
    with spooled:
        os.unlink(handed)
        with mmap.mmap(spooled.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return pickle.loads(mapped)


def default_root() -> Path:
    """Where spools go: tmpfs (/dev/shm) where there is one, else the temporary directory.
    tmpfs saved twice what the ext4 of /tmp did (alternating runs: 3.9% and 2.2% less CPU)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return Path(tempfile.gettempdir())


def _remove_abandoned(root: Path) -> None:
    """Spools left by processes that no longer run (killed with batches in flight)."""
    for spool in root.glob(f"{PREFIX}*"):
        pid = spool.name[len(PREFIX):].split("-", 1)[0]
        try:
            status = spool.stat()
        except OSError:  # removed meanwhile
            continue
        if (not pid.isdigit() or status.st_uid != os.getuid()
                or time.time() - status.st_mtime < ABANDONED_AFTER):
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(spool, ignore_errors=True)
        except PermissionError:
            pass  # alive, another user's
