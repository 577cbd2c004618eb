"""The `local` runner: run a benchmark on this host, with no kernel boot.

For the stand-in simulator tree (its "kernel" is a program) and for userspace-only comparisons.
A and B are two paths (for the simulator, two built `arch/x86/boot/bzImage` files), filled into
the benchmark's `{kernel}` parameter. A program built from a patch is a stranger's code, so the
job runs in the build sandbox (workers.kernel.sandbox): no network but a loopback of its own, an
environment of nothing but the allow-list, the filesystem read-only but for the job's own
directories, the host's secrets hidden but for the programs and scripts in the job's command,
resource limits (its own cgroup: processes, memory, CPU; a bounded job directory), and the
whole job killed at the timeout.

The job script (workers.lab.job) reads /proc/vmstat (and the benchmark memcg's memory.stat)
around each run; the changes are recorded beside the results as `proc-vmstat.<name>` and
`memcg.<name>` samples, as lkp-tests names them.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.benchmarks.definition import Benchmark
from workers.kernel.sandbox import (
    Limits,
    SandboxError,
    limit_message,
    minimal_env,
    run_sandboxed,
)
from workers.lab.job import BootInfo, RunFailed, collect, job_script
from workers.lab.machine import MACHINE_DIR, read_machine
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
    # Per kernel ("A", "B"): the machine its last boot ran on, as the job read it.
    machine: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)

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
            # The programs and scripts the job runs (the kernel under the artifact cache,
            # anon-swap under the user's cache) stay readable; the rest of home is hidden.
            readable = [Path(arg) for arg in argv if os.path.isabs(arg) and os.path.exists(arg)]
            _run(script, work, scratch, readable, self.timeout, self.benchmark.name)
            boot = BootInfo(kernel=kernel, pair_index=pair_index, position=position,
                            host=self.host, accel="none", time=started)
            samples = collect(self.benchmark, work / "results", self.iterations, boot)
            self.machine[kernel] = {**read_machine(work / "results" / MACHINE_DIR),
                                    "runner": "local"}
            return samples


# A benchmark is a few processes (a stress tool's workers at most): far below this, a fork bomb
# far above. Its results (and its scratch files, unless [lab] gives a scratch directory of its
# own) fit in the disk limit.
MAX_PROCESSES = 1024
MAX_DISK_MB = 16384


def _run(script: Path, work: Path, scratch: Path, readable: list[Path], timeout: float,
         name: str) -> None:
    limits = Limits(cpu_seconds=max(1, int(timeout)) * (os.cpu_count() or 1),
                    memory_mb=_memory_mb(), wall_seconds=timeout, max_log_bytes=64 * 1024,
                    max_processes=MAX_PROCESSES, max_disk_mb=MAX_DISK_MB)
    try:
        result = run_sandboxed(["sh", str(script)], cwd=work, writable=[work, scratch],
                               readable=readable, limits=limits, env=minimal_env(work),
                               disk=[work])  # a configured scratch may hold files already
    except SandboxError as exc:
        raise RunFailed(f"{name}: not run: {exc}") from None
    if result.timed_out:
        raise RunFailed(f"{name} timed out after {timeout:g} s")
    if result.limit:
        raise RunFailed(f"{name}: {limit_message(result.limit, limits)}")


def _memory_mb() -> int:
    # RLIMIT_AS is per process: this machine's memory bounds a runaway, not a benchmark.
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
