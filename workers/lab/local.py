"""The `local` runner: run a benchmark on this host, with no kernel boot.

For the stand-in simulator tree (its "kernel" is a program) and for userspace-only comparisons.
A and B are two paths (for the simulator, two built `arch/x86/boot/bzImage` files), filled into
the benchmark's `{kernel}` parameter. Each run reads /proc/vmstat (and the benchmark's memcg
memory.stat) before and after, and records the reclaim counters' change beside the results as
`proc-vmstat.<name>` and `memcg.<name>` samples, as lkp-tests names them.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from workers.benchmarks.definition import Benchmark
from workers.benchmarks.vmstat import counter_delta, parse_counters
from workers.lab.pairs import Sample

VMSTAT = Path("/proc/vmstat")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class RunFailed(RuntimeError):
    """The benchmark exited non-zero, timed out, or printed no result."""


@dataclass(frozen=True)
class LocalRunner:
    """`run_one` for `run_pairs`: runs `benchmark` with `kernel=kernels[kernel]` on this host."""

    benchmark: Benchmark
    kernels: Mapping[str, Path]  # "A" and "B" -> the program each kernel stands for
    timeout: float = 300.0  # seconds per run
    vmstat: Path = VMSTAT
    host: str = field(default_factory=socket.gethostname)

    def __call__(self, kernel: str, pair_index: int, position: int) -> tuple[Sample, ...]:
        argv = self.benchmark.argv(kernel=str(self.kernels[kernel]))
        started = datetime.now(UTC)
        before = self._read_counters()
        output = _run(argv, self.timeout)
        after = self._read_counters()
        try:
            values = self.benchmark.parse(output)
        except ValueError as error:
            raise RunFailed(f"{self.benchmark.name}: {error}; output:\n{output[-2000:]}") from None

        def sample(metric: str, value: float, unit: str) -> Sample:
            return Sample(metric=metric, value=value, unit=unit, kernel=kernel,
                          pair_index=pair_index, position=position, host=self.host,
                          boot_id=_boot_id(), accel="none", time=started)

        samples = [
            sample(name, value, self._unit(name)) for name, value in values.items()
        ]
        patterns = self.benchmark.reclaim_counters
        for source, (old, new) in (("proc-vmstat", (before[0], after[0])),
                                   ("memcg", (before[1], after[1]))):
            if old is None or new is None:
                continue
            for name, change in counter_delta(old, new, patterns).items():
                samples.append(sample(f"{source}.{name}", float(change), "pages"))
        return tuple(samples)

    def _unit(self, name: str) -> str:
        try:
            return self.benchmark.metric(name).unit
        except KeyError:
            return ""

    def _read_counters(self) -> tuple[dict[str, int] | None, dict[str, int] | None]:
        vmstat = parse_counters(self.vmstat.read_text()) if self.vmstat.exists() else None
        memcg = None
        if self.benchmark.memcg is not None:
            memcg = parse_counters((Path(self.benchmark.memcg) / "memory.stat").read_text())
        return vmstat, memcg


def _run(argv: list[str], timeout: float) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"{argv[0]} timed out after {timeout:g} s") from None
    except OSError as error:
        raise RunFailed(f"cannot run {argv[0]}: {error}") from None
    if done.returncode != 0:
        raise RunFailed(f"{argv[0]} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _boot_id() -> str:
    # No boot happens here: every local run shares the host's boot, and says so.
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return "unknown"
