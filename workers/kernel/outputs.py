"""Reading what a sandboxed build left behind, without following anything it planted.

After the sandbox exits, the worker (unsandboxed, our uid) reads the build's outputs: the
image, `.config`. A build can make any of them, or a directory on the way, a symlink to a file
outside (an SSH key, /etc/shadow), a FIFO that blocks the reader, or a device. So every path
is opened one component at a time from a directory fd, each with O_NOFOLLOW (directories with
O_DIRECTORY too), and the last must be a regular file: anything else is `UnsafeOutput`. The
worker never writes into a directory a build could write (its stamps live elsewhere).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO the build made does not wait for a writer.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class UnsafeOutput(OSError):
    """A build output is not a regular file inside the build directory (a symlink, a FIFO...)."""


@contextlib.contextmanager
def open_output(root: Path, relative: str) -> Iterator[int]:
    """A read-only fd of the regular file `relative` under `root`, no symlink followed on the
    way; UnsafeOutput otherwise (FileNotFoundError when it is simply missing)."""
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        raise UnsafeOutput(f"{relative}: not a path inside the build directory")
    fds = [os.open(root, _DIR_FLAGS)]
    try:
        for part in parts[:-1]:
            fds.append(_open_at(part, fds[-1], _DIR_FLAGS, relative))
        fd = _open_at(parts[-1], fds[-1], _FILE_FLAGS, relative)
        fds.append(fd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeOutput(f"{relative}: not a regular file; refused")
        os.set_blocking(fd, True)
        yield fd
    finally:
        for opened in fds:
            os.close(opened)


def _open_at(name: str, dir_fd: int, flags: int, relative: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        # ELOOP: a symlink; ENOTDIR: a symlink or a file where a directory was expected.
        raise UnsafeOutput(f"{relative}: not a regular file inside the build directory "
                           f"({exc.strerror}); refused") from None


def read_output(root: Path, relative: str, limit: int = 64 * 1024 * 1024) -> bytes:
    """The bytes of a small output (a .config), at most `limit` of them; UnsafeOutput beyond."""
    with open_output(root, relative) as fd, os.fdopen(os.dup(fd), "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UnsafeOutput(f"{relative}: larger than {limit} bytes; refused")
    return data


def copy_output(root: Path, relative: str, destination: Path) -> None:
    """Copy the output `relative` to `destination`, a new file in a directory only the worker
    writes; its mode bits (but setuid/setgid) and mtime come along."""
    with open_output(root, relative) as fd, os.fdopen(os.dup(fd), "rb") as source:
        info = os.fstat(fd)
        with open(destination, "xb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
        os.chmod(destination, stat.S_IMODE(info.st_mode) & 0o777)
        os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns))
