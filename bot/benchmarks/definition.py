"""What a benchmark is: the command to run, how to read its output, and how to judge each metric.

A `Benchmark` is plain data. Runners (workers/lab/) turn it into an argv, run it, parse the output
with its `parse` function and read the reclaim counters named by `reclaim_counters` before and
after; the pair loop judges each main `Metric` in its direction against its `delta`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bot.benchmarks.vmstat import RECLAIM_COUNTERS

# The two kernels of a comparison, as samples and campaigns name them.
BASE = "A"
PATCHED = "B"

# Output text -> {metric name: value}; raises ValueError when the output holds no result.
OutputParser = Callable[[str], Mapping[str, float]]


@dataclass(frozen=True)
class Metric:
    """One number a benchmark reports, named as lkp-tests names it (e.g. `hackbench.time`)."""

    name: str
    unit: str
    higher_is_better: bool
    delta: float = 0.01  # the smallest change worth reporting, as a fraction
    main: bool = True  # main metrics decide when the pair loop stops; others are only recorded


@dataclass(frozen=True)
class Benchmark:
    """A benchmark: an argv template whose `{name}` fields are filled from `parameters`."""

    name: str
    command: tuple[str, ...]
    parameters: Mapping[str, str | int | float]
    parse: OutputParser
    metrics: tuple[Metric, ...]
    # fnmatch patterns of /proc/vmstat (and memory.stat) counters read before and after each run.
    reclaim_counters: tuple[str, ...] = RECLAIM_COUNTERS
    # Run inside a fresh memcg with this memory.max ("64M"), whose memory.stat is read too:
    # memcg reclaim does not show in the global kswapd/direct counters. None: no memcg.
    memcg_max: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)  # free-form notes (suite, source)

    def argv(self, **overrides: str | int | float) -> list[str]:
        """The command with its parameters (and any overrides, e.g. `kernel=`) filled in."""
        values = {**self.parameters, **overrides}
        try:
            return [part.format(**values) for part in self.command]
        except KeyError as missing:
            raise ValueError(f"{self.name}: no value for parameter {missing}") from None

    @property
    def runs_the_kernel(self) -> bool:
        """Whether the command runs the kernel under test itself (`{kernel}`: the stand-in
        tree's program). A benchmark that does not measures whatever kernel it runs on, so it
        compares two kernels only where each is booted (a qemu or ssh lab host)."""
        return any("{kernel}" in part for part in self.command)

    @property
    def main_metrics(self) -> tuple[Metric, ...]:
        return tuple(m for m in self.metrics if m.main)

    def metric(self, name: str) -> Metric:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(f"{self.name} has no metric {name!r}")
