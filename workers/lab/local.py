"""The `local` runner: run a benchmark on this host, with no kernel boot.

For the stand-in simulator tree (its "kernel" is a program) and for userspace-only comparisons.
A and B are two paths (for the simulator, two built `arch/x86/boot/bzImage` files), filled into
the benchmark's `{kernel}` parameter. The job script (workers.lab.job) reads /proc/vmstat (and
the benchmark memcg's memory.stat) around each run; the changes are recorded beside the results
as `proc-vmstat.<name>` and `memcg.<name>` samples, as lkp-tests names them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from workers.benchmarks.definition import Benchmark
from workers.lab.job import BootInfo, RunFailed, collect, job_script
from workers.lab.pairs import Sample

__all__ = ["LocalRunner", "RunFailed"]


@dataclass(frozen=True)
class LocalRunner:
    """`run_one` for `run_pairs`: runs `benchmark` with `kernel=kernels[kernel]` on this host."""

    benchmark: Benchmark
    kernels: Mapping[str, Path]  # "A" and "B" -> the program each kernel stands for
    timeout: float = 300.0  # seconds per boot (all its iterations)
    iterations: int = 1
    scratch: Path | None = None  # a directory for page-cache benchmarks; None: a temporary one
    host: str = field(default_factory=socket.gethostname)

    def __call__(self, kernel: str, pair_index: int, position: int) -> tuple[Sample, ...]:
        started = datetime.now(UTC)
        with tempfile.TemporaryDirectory(prefix="lorelab-job-") as tmp:
            work = Path(tmp)
            scratch = self.scratch or work / "scratch"
            scratch.mkdir(parents=True, exist_ok=True)
            argv = self.benchmark.argv(kernel=str(self.kernels[kernel]), scratch=str(scratch))
            script = work / "job.sh"
            script.write_text(job_script(self.benchmark, argv, str(work / "results"),
                                         self.iterations))
            _run(["sh", str(script)], self.timeout, self.benchmark.name)
            boot = BootInfo(kernel=kernel, pair_index=pair_index, position=position,
                            host=self.host, accel="none", time=started)
            return collect(self.benchmark, work / "results", self.iterations, boot)


def _run(argv: list[str], timeout: float, name: str) -> None:
    # A session of its own, so that a timeout kills what the job started too (a memcached
    # left running would hold its port against the next run).
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise RunFailed(f"{name} timed out after {timeout:g} s") from None

