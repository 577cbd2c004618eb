"""The disk a directory is stored on, as the IO controller names it ("254:0").

A job's IO is throttled per device, and the kernel throttles whole disks only (blk-throttle and
io.max refuse a partition's numbers), so a directory on /dev/sda2 is limited on /dev/sda: the
partition's parent in sysfs. A filesystem with no block device of its own (tmpfs, overlay,
virtio-fs, NFS, a btrfs subvolume: all numbered 0:N) has nothing to throttle, and `disk_of`
says so in words for the job's log.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def disk_of(path: Path, sys_root: Path = Path("/sys"),
            mountinfo: Path = Path("/proc/self/mountinfo")) -> tuple[str | None, str]:
    """("MAJ:MIN" of the whole disk holding `path`, "") or (None, why it has none)."""
    try:
        number = os.stat(path).st_dev
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    device = f"{os.major(number)}:{os.minor(number)}"
    block = sys_root / "dev" / "block" / device
    if os.major(number) == 0 or not block.exists():
        return None, (f"{path} is on {_fstype(device, mountinfo)} ({device}), which has no "
                      "block device")
    if (block / "partition").exists():  # the disk is the partition's parent in sysfs
        try:
            return (block.resolve().parent / "dev").read_text().strip(), ""
        except OSError as exc:
            return None, f"{path}: partition {device} has no disk in {sys_root}: {exc.strerror}"
    return device, ""


def _fstype(device: str, mountinfo: Path) -> str:
    with contextlib.suppress(OSError):
        for line in mountinfo.read_text().splitlines():
            fields = line.split()
            if fields[2] == device:
                return fields[fields.index("-") + 1]
    return "a filesystem"
