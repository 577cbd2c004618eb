"""Settings of the data plane: where builds happen, their limits, and how Celery is reached.

Carried by `bot.config.Settings` as the `[build]` and `[celery]` sections; kept here so that a
worker needs nothing from the control plane to know its own limits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass
class BuildSettings:
    # Where worktrees, O= directories, the artifact cache and ccache live; empty: the data
    # directory's "build" folder.
    work_dir: str = ""
    base_config: str = "tinyconfig"  # a make target (tinyconfig, defconfig) or a file path
    fragments: list[str] = field(default_factory=list)  # config fragment files, merged in order
    targets: list[str] = field(default_factory=lambda: ["bzImage"])
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    ccache: bool = True  # use ccache when it is installed
    cpu_seconds: int = 4 * 3600  # RLIMIT_CPU of each process in the build
    memory_mb: int = 4096  # RLIMIT_AS of each process in the build
    wall_seconds: int = 3 * 3600  # the whole build, killed after this
    max_file_mb: int = 2048  # RLIMIT_FSIZE: no single file written larger than this
    max_log_bytes: int = 4 * 1024 * 1024  # captured output; the middle is dropped beyond this
    readonly_root: bool = True  # as root: everything but the build directories mounted read-only


@dataclass
class CelerySettings:
    # Empty broker_url: the embedded default, tasks run eagerly in the calling process.
    broker_url: str = ""  # e.g. redis://127.0.0.1:6379/0
    result_backend: str = ""  # empty: the broker's URL
    apply_time_limit: int = 600  # seconds
    build_time_limit: int = 4 * 3600
    bench_time_limit: int = 12 * 3600  # every benchmark of a review run, all its pairs
    max_tasks_per_child: int = 20
    max_retries: int = 3  # for transient failures (database or git lock contention)
