"""Choosing a runner: the `run_one` callable for a lab host's runner kind (local, qemu, ssh)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.benchmarks.definition import Benchmark
from bot.config.lab_hosts import LabHostSettings
from workers.lab.pairs import RunOne


def make_runner(host: LabHostSettings, benchmark: Benchmark,
                kernels: Mapping[str, Path]) -> RunOne:
    """The runner that boots `kernels` ("A", "B") on `host` and runs `benchmark` there."""
    if host.runner == "qemu":
        from workers.lab.qemu import QemuRunner

        return QemuRunner(benchmark, kernels, host)
    if host.runner == "ssh":
        from workers.lab.ssh import SshRunner

        return SshRunner(benchmark, kernels, host)
    from workers.lab.local import LocalRunner

    return LocalRunner(benchmark, kernels, timeout=host.timeout, iterations=host.iterations,
                       host=host.name)
