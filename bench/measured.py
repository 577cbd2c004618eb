"""A child process's CPU time, wall time and peak memory, measured so that the peak is its own.

`subprocess.Popen` starts a child by vfork: until it execs, the child runs in the benchmark's
own memory, and Linux counts that memory's high-water mark into the child's `ru_maxrss` at the
exec. A benchmark that holds its generated corpus (700 MB for 100,000 messages) therefore saw
every lorelab it started "peak" at the benchmark's size, whatever lorelab used (160 MB).

Here the command is started by a launcher: a fresh interpreter whose own memory is a few MB,
which runs it, waits for it with wait4 and writes its figures (JSON) to a file. The command's
peak is then the largest of its processes (lorelab and its parse workers), each its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

_LAUNCHER = """
import json, os, subprocess, sys, time
report, command = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
child = subprocess.Popen(command)
_, status, usage = os.wait4(child.pid, 0)
with open(report, "w") as out:
    json.dump({"returncode": os.waitstatus_to_exitcode(status),
               "seconds": time.perf_counter() - start,
               "cpu_seconds": usage.ru_utime + usage.ru_stime,
               "peak_rss_mb": usage.ru_maxrss / 1024}, out)
"""


@dataclass(frozen=True)
class Measured:
    """What one run of a command cost: exit status, wall and CPU seconds (the command's and its
    children's that it waited for), and the peak resident memory of the largest of them."""

    returncode: int
    seconds: float
    cpu_seconds: float
    peak_rss_mb: float


def run_measured(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    stdin: IO[Any] | int | None = subprocess.DEVNULL,
    stdout: IO[Any] | int | None = None,
    stderr: IO[Any] | int | None = None,
) -> Measured:
    """Run `command` to its end through the launcher; its standard streams are those given."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run(
            [sys.executable, "-c", _LAUNCHER, report.name, *command],
            env=env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            check=True,
        )
        return Measured(**json.loads(report.read()))
