"""What a benchmark reply reports: the results, the machine, the build, the method, the claims.

Plain frozen dataclasses. Each metric carries its `Comparison` (bot.analysis.verdict), already
judged by the analysis stage (including the false-discovery-rate control across a run's metrics);
the reply only renders it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from bot.analysis.stored import comparison_from_data, to_data
from bot.analysis.verdict import Comparison
from bot.report.compose.inputs import ParentMessage, SeriesInfo, TreeInfo


@dataclass(frozen=True)
class MetricResult:
    name: str  # as lkp-tests names it: "hackbench.time", or a counter: "pgscan_direct"
    unit: str  # "s", "ops/s", "pages"
    comparison: Comparison
    secondary: bool = False  # a reclaim counter from /proc/vmstat, shown below the metrics
    # False for counters that are neither better high nor low: words say increase/decrease.
    direction_known: bool = True

    @property
    def words(self) -> str:
        """The verdict words; "increase"/"decrease" by the sign when no direction is better."""
        c = self.comparison
        if self.direction_known or not c.changed:
            return c.words
        larger = c.shift.u > c.shift.m * c.shift.n / 2  # as the test decided, not the estimate
        return c.words.replace(c.verdict.value, "increase" if larger else "decrease")

    @property
    def direction(self) -> str:
        if not self.direction_known:
            return "no better direction"
        return "higher is better" if self.comparison.higher_is_better else "lower is better"

    def as_dict(self) -> dict[str, Any]:
        """The judgement as JSON-ready data (`lorelab analyze --json`, the status page)."""
        c = self.comparison
        return {
            "metric": self.name,
            "unit": self.unit,
            "secondary": self.secondary,
            "direction": self.direction,
            "verdict": c.verdict.value,
            "words": self.words,
            "change_pct": round(float(c.change_pct), 3),
            "ci_pct": [round(float(c.ci_low_pct), 3), round(float(c.ci_high_pct), 3)],
            "interval_level": float(c.interval_level),  # the interval's nominal coverage
            "delta_pct": float(100 * c.delta),  # this metric's smallest change of interest
            "p": float(c.pvalue),
            "alpha": float(c.alpha),
            "mean_change_pct": round(float(c.mean_change_pct), 3),
            "median_change_pct": round(float(c.median_change_pct), 3),
            "base": _side(c.base),
            "patched": _side(c.patched),
            "findings": list(c.findings),
            "notes": list(c.notes()),
            "early_stop": c.early_stop,
            "comparison": to_data(c),  # the whole judgement, read back by `from_dict`
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetricResult:
        """The metric `as_dict` stored, its judgement as it was made (not made again)."""
        return cls(name=data["metric"], unit=data["unit"],
                   comparison=comparison_from_data(data["comparison"]),
                   secondary=bool(data["secondary"]),
                   direction_known=data["direction"] != "no better direction")

    @property
    def notable(self) -> bool:
        """Worth a verdict line: changed, or its tail of slow runs changed (a tail is "slow"
        only for a metric with a better direction: a counter's has none)."""
        return self.comparison.changed or (self.direction_known
                                           and self.comparison.tail.kind is not None)


def _side(side: Any) -> dict[str, Any]:
    # numpy scalars are not JSON: the stored and printed forms are plain floats.
    return {"n": int(side.n), "median": float(side.median), "robust_cv": float(side.robust_cv)}


@dataclass(frozen=True)
class BenchmarkResult:
    """One benchmark at one set of parameters, e.g. hackbench with 125 process groups."""

    name: str
    parameters: tuple[tuple[str, str], ...]  # in the order the benchmark takes them
    metrics: tuple[MetricResult, ...]
    # Metrics that could not be compared as ratios (a counter that was 0 in some runs).
    not_compared: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """E.g. "hackbench groups=125 mode=process"."""
        return " ".join([self.name, *(f"{key}={value}" for key, value in self.parameters)])

    def metric_label(self, metric: MetricResult, varying: tuple[str, ...]) -> str:
        """The metric's name, with the parameters that differ between this reply's runs, and
        the benchmark when the name does not say it ("readtwice.throughput (readtwice-memcg)")."""
        keys = dict(self.parameters)
        extra = [f"{key}={keys[key]}" for key in varying if key in keys]
        if metric.name.split(".", 1)[0] not in (self.name, "proc-vmstat", "memcg") \
                and "." in metric.name:
            extra.insert(0, f"({self.name})")
        return " ".join([metric.name, *extra])


@dataclass(frozen=True)
class Machine:
    """The machine the samples came from, as the runner recorded it there (never assumed)."""

    cpu: str  # model name as /proc/cpuinfo gives it (a guest's is QEMU's)
    cores: int
    threads: int | None = None
    l1d: str = ""  # sizes as lscpu prints them: "32 KiB"
    l1i: str = ""
    l2: str = ""
    l3: str = ""
    memory: str = ""  # e.g. "16 GiB"
    numa_nodes: int = 1
    # What ran the benchmark: "bare metal", "virtual machine (kvm)", "QEMU guest under TCG".
    boot: str = "bare metal"
    host: str = ""  # the lab host's configured name
    runner: str = ""  # local, qemu or ssh
    kernel: str = ""  # the release the benchmark ran on (uname -r there)
    # For a qemu guest: the machine QEMU ran on, e.g. "AMD EPYC 7B13, 2 cores, a virtual
    # machine (kvm)".
    host_machine: str = ""
    lru: str = ""  # "MGLRU (lru_gen enabled)" or "the classic two-list LRU"; "" unknown


@dataclass(frozen=True)
class BuildInfo:
    config_name: str  # e.g. "x86_64-defconfig+reclaim"
    config_hash: str
    compiler: str
    config_url: str = ""


@dataclass(frozen=True)
class RunPolicy:
    """How the runs were made and judged (docs/statistics.md)."""

    runs_per_kernel: int  # boots of each kernel per parameter set (the pairs that ran)
    order: str = "randomized pairs"  # how A and B runs were ordered
    sequential: bool = False  # stopped by the sequential rule (else a fixed number of runs)
    k_min: int | None = None
    k_max: int | None = None
    alpha: float = 0.05  # overall level; the per-look alpha' is in each Comparison
    delta: float = 0.01
    iterations: str = ""  # how iterations inside one boot are summarised, if more than one


@dataclass(frozen=True)
class ClaimQuote:
    """An author's performance claim from the thread, as the reply quotes and weighs it."""

    author: str  # the name the attribution line shows
    lines: tuple[str, ...]  # the claimed lines, without quote marks; "..." marks a gap
    summary: str  # what the claim's own numbers can support, one or two sentences
    benchmarks: tuple[str, ...] = ()  # benchmark names the claim is about
    change_pct: float | None = None  # the claimed change in `unit`, +1.5 for +1.5%
    unit: str | None = None
    higher_is_better: bool | None = None
    runs: int | None = None
    date: dt.datetime | None = None  # of the message that made the claim
    msgid: str | None = None


@dataclass(frozen=True)
class BenchmarkReplyContext:
    parent: ParentMessage
    series: SeriesInfo
    tree: TreeInfo
    machine: Machine
    build: BuildInfo
    policy: RunPolicy
    benchmarks: tuple[BenchmarkResult, ...]
    claims: tuple[ClaimQuote, ...] = ()
    reproduce: tuple[str, ...] = ()  # shell lines, runnable without the bot where possible
    # What the run found (bot.runs.outcome's label: "regression", "inconclusive", ...), the
    # same word the exit status, `lorelab runs` and the status page give; "" when not known.
    outcome: str = ""

    def all_metrics(self) -> list[tuple[BenchmarkResult, MetricResult]]:
        return [(bench, metric) for bench in self.benchmarks for metric in bench.metrics]
