"""Settings of the data plane: where builds happen, their limits, and how Celery is reached.

Carried by `bot.config.Settings` as the `[build]` and `[celery]` sections; kept here so that a
worker needs nothing from the control plane to know its own limits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# Config fragments that ship with lorelab, named by their file's stem in `fragments`:
# "reclaim-vm" is the lab kernel (a distribution's memory management on tinyconfig).
SHIPPED_FRAGMENTS = Path(__file__).with_name("kernel")


def fragment_path(entry: str) -> str:
    """A `fragments` entry as a file: a shipped fragment's name ("reclaim-vm"), or a path."""
    shipped = SHIPPED_FRAGMENTS / f"{entry}.config"
    if "/" not in entry and not entry.endswith(".config") and shipped.is_file():
        return str(shipped)
    if not os.path.isfile(entry):
        names = ", ".join(sorted(p.stem for p in SHIPPED_FRAGMENTS.glob("*.config")))
        raise ValueError(f"[build] fragments: no file {entry!r} (give a path, or one of "
                         f"lorelab's own: {names})")
    return entry


@dataclass
class BuildSettings:
    # Where worktrees, O= directories, the artifact cache and ccache live; empty: the data
    # directory's "build" folder.
    work_dir: str = ""
    base_config: str = "tinyconfig"  # a make target (tinyconfig, defconfig) or a file path
    # Config fragments merged in order: files, or the name of one lorelab ships. The default,
    # the lab kernel, makes tinyconfig a kernel that boots in the lab and reclaims like a
    # distribution's; a tree without Kconfig (the stand-in) sets [].
    fragments: list[str] = field(default_factory=lambda: ["reclaim-vm"])
    targets: list[str] = field(default_factory=lambda: ["bzImage"])
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    ccache: bool = True  # use ccache when it is installed
    cpu_seconds: int = 4 * 3600  # RLIMIT_CPU of each process in the build
    memory_mb: int = 4096  # RLIMIT_AS of each process in the build, and its cgroup in all
    # The whole build (all its makes), killed after this: about 3x the cold build of the lab
    # kernel (tinyconfig + reclaim-vm, 12-20 min on 2 cores, bench/build.py --kernel).
    wall_seconds: int = 3600
    max_file_mb: int = 2048  # RLIMIT_FSIZE: no single file written larger than this
    max_processes: int = 2048  # pids.max of the build's cgroup: a fork bomb stops there
    # The build's own O= directory may hold this much; beyond, the build is killed (a tinyconfig
    # kernel's takes ~0.3 GB, a defconfig one's ~3 GB).
    max_disk_mb: int = 20480
    max_log_bytes: int = 4 * 1024 * 1024  # captured output; the middle is dropped beyond this
    # IO on the disk holding the build directories, MiB and operations per second (0: no limit;
    # none where they have no block device). The stand-in's builds write under 1 MiB/s, a
    # defconfig kernel ~3 GB in all; 100 MiB/s is a tenth of a virtio disk's direct writes.
    io_read_mbps: int = 200
    io_write_mbps: int = 100
    io_read_iops: int = 0
    io_write_iops: int = 0
    # Applying (git am, outside the sandbox): binary files a series may carry, once inflated,
    # in all; and the memory git am may use (its own cgroup, where the host gives one).
    max_binary_mb: int = 64
    apply_memory_mb: int = 2048
    readonly_root: bool = True  # as root: everything but the build directories mounted read-only


    def fragment_files(self) -> list[Path]:
        """`fragments` as files; ValueError naming what is missing and what ships."""
        return [Path(fragment_path(entry)) for entry in self.fragments]


@dataclass
class CelerySettings:
    # Empty broker_url: the embedded default, tasks run eagerly in the calling process.
    broker_url: str = ""  # e.g. redis://127.0.0.1:6379/0
    result_backend: str = ""  # empty: none (lorelab reads no task results)
    apply_time_limit: int = 600  # seconds
    build_time_limit: int = 4 * 3600
    bench_time_limit: int = 12 * 3600  # every benchmark of a review run, all its pairs
    max_tasks_per_child: int = 20
    # Transient failures (the database or the broker unreachable, a git lock held) are retried
    # after retry_backoff seconds, doubling up to retry_backoff_max (jittered): 12 retries ride
    # out at least 14 minutes of outage (bot.runs.taskqueue.retry_delay).
    max_retries: int = 12
    retry_backoff: int = 2
    retry_backoff_max: int = 300
    # A step sent to the workers and still queued this long after it could start is sent again
    # by `lorelab run` (bot/runs/reaper.py): its message was lost in a broker outage.
    queued_deadline: int = 1800
