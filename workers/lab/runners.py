"""Choosing a runner: the `run_one` callable for a lab host's runner kind (local, qemu, ssh)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.benchmarks.definition import Benchmark
from bot.config.lab_hosts import LabHostSettings
from workers.lab.pairs import RunOne


def make_runner(host: LabHostSettings, benchmark: Benchmark,
                kernels: Mapping[str, Path], lru: str | None = None) -> RunOne:
    """The runner that boots `kernels` ("A", "B") on `host` and runs `benchmark` there, with
    the booted kernel's LRU switched to `lru` (bot.runs.lru) when it is given."""
    if host.runner == "qemu":
        from workers.lab.qemu import QemuRunner

        return QemuRunner(benchmark, kernels, host, lru=lru)
    if host.runner == "ssh":
        from workers.lab.ssh import SshRunner

        return SshRunner(benchmark, kernels, host, lru=lru)
    from workers.lab.kernel_image import is_kernel_image
    from workers.lab.local import LocalRunner

    booted = [kind for kind, path in kernels.items() if is_kernel_image(Path(path))]
    if booted:
        # Both sides would run on this host's own kernel: a reply would compare nothing.
        raise ValueError(
            f"lab host {host.name!r} is a local runner, which boots nothing, and kernel "
            f"{booted[0]} is a real kernel image: a kernel comparison needs a qemu or ssh lab "
            "host ([[lab_hosts]] runner = \"qemu\")")
    if not benchmark.runs_the_kernel:
        raise ValueError(
            f"{benchmark.name} measures the kernel it runs on, and lab host {host.name!r} is a "
            "local runner, which boots neither kernel: both sides would be this host's kernel. "
            "Run it on a qemu or ssh lab host")
    return LocalRunner(benchmark, kernels, timeout=host.timeout, iterations=host.iterations,
                       host=host.name)
