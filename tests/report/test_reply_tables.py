"""The benchmark tables fit in 100 columns whatever the metrics are called and whatever their
values, and say what a maintainer would otherwise have to work out: which rows are counters, which
counters never changed, which were zero throughout."""

from __future__ import annotations

import random

from bot.analysis.family import MetricPairs, judge_pairs
from bot.analysis.verdict import compare
from bot.report.compose.inputs import TreeInfo
from bot.report.compose.results import BenchmarkResult, MetricResult
from bot.report.compose.tables import benchmark_tables, verdict_lines
from bot.report.compose.text import TABLE_WIDTH

TREE = TreeInfo(tree="linux-6.1", branch="master", base="69a2a612d7551234",
                head="4b1d9e0f77aa5678")
# Names a real 6.1 kernel's /proc/vmstat and a memcg's memory.stat give (scripts/kernel-review).
VMSTAT = ("pgscan_kswapd", "pgscan_direct", "pgscan_direct_throttle", "pgscan_anon",
          "pgscan_file", "pgsteal_kswapd", "pgsteal_direct", "pgsteal_anon", "pgsteal_file",
          "workingset_refault_anon", "workingset_refault_file", "pswpin", "pswpout")
ZERO = ("allocstall_dma", "allocstall_dma32", "allocstall_normal", "allocstall_movable",
        "pgscan_khugepaged", "pgsteal_khugepaged")


def _metric(name: str, base: list[float], patched: list[float], *, secondary: bool = True,
            unit: str = "pages", higher: bool | None = None) -> MetricResult:
    comparison = compare(base, patched, higher_is_better=bool(higher), delta=0.02)
    return MetricResult(name=name, unit=unit, comparison=comparison, secondary=secondary,
                        direction_known=higher is not None)


def _noisy(rng: random.Random, centre: float, cv: float, n: int = 6) -> list[float]:
    return [centre * rng.lognormvariate(0, cv) for _ in range(n)]


def _kernel_run() -> BenchmarkResult:
    """Six pairs judged as a lab campaign judges them (one family, the sequential rule)."""
    rng = random.Random(3)
    pairs = [MetricPairs("readtwice-memcg.throughput", tuple(_noisy(rng, 180, 0.2)),
                         tuple(_noisy(rng, 80, 0.2)), higher_is_better=True, delta=0.02,
                         main=True)]
    for source in ("proc-vmstat", "memcg"):
        for name in VMSTAT:
            pairs.append(MetricPairs(f"{source}.{name}", tuple(_noisy(rng, 123456789, 0.01)),
                                     tuple(_noisy(rng, 123456789, 0.01)), None, 0.05, False))
        for name in ZERO:
            pairs.append(MetricPairs(f"{source}.{name}", (0.0,) * 6, (0.0,) * 6, None, 0.05,
                                     False))
    pairs.append(MetricPairs("proc-vmstat.pgscan_proactive_with_a_name_longer_than_any_today",
                             (7.0,) * 6, (7.0,) * 6, None, 0.05, False))
    pairs.append(MetricPairs("memcg.a_counter_whose_name_alone_is_wider_than_a_mail_client_"
                             "window_and_then_some_more", tuple(_noisy(rng, 5e11, 0.05)),
                             tuple(_noisy(rng, 5e11, 0.05)), None, 0.05, False))
    judged = {**judge_pairs(pairs, k_min=5, k_max=6).decided,
              **judge_pairs(pairs, k_min=5, k_max=6).current}
    metrics = tuple(MetricResult(name=m.name, unit="MiB/s" if m.main else "pages",
                                 comparison=judged[m.name], secondary=not m.main,
                                 direction_known=m.higher_is_better is not None)
                    for m in pairs)
    return BenchmarkResult(name="readtwice-memcg",
                           parameters=(("mb", "512"), ("files", "0"), ("memcg_max", "128M")),
                           metrics=metrics)


def test_a_real_kernels_counters_fit_in_100_columns_and_say_what_they_are() -> None:
    (table,) = benchmark_tables([_kernel_run()], TREE)
    assert all(len(line) <= TABLE_WIDTH for line in table), max(table, key=len)
    text = "\n".join(table)
    # Counters under their source's heading, named without the prefix the samples carry.
    assert "reclaim counters, /proc/vmstat (change per run):" in text
    assert "reclaim counters, the benchmark memcg's memory.stat (change per run):" in text
    assert any(line.endswith("  workingset_refault_anon") for line in table)
    # Zero throughout: one list per source, each name once; identical: the value, once.
    flat = " ".join(text.split())
    assert "zero in all 12 runs (/proc/vmstat): allocstall_dma, allocstall_dma32," in flat
    assert "zero in all 12 runs (memory.stat): allocstall_dma, allocstall_dma32," in flat
    assert text.count("allocstall_dma32") == 2
    assert "identical in all 12 runs (/proc/vmstat): " \
        "pgscan_proactive_with_a_name_longer_than_any_today 7" in flat
    # Nothing that did not vary is printed as a ratio with an infinite interval.
    assert "+inf" not in text and "-100.00" not in text
    # A name too long for its row goes on its own line above the numbers.
    long = "a_counter_whose_name_alone_is_wider_than_a_mail_client_window_and_then_some_more"
    assert long in text and not any(line.endswith(long) and "%" in line for line in table)


def test_verdict_lines_fit_with_any_label() -> None:
    rng = random.Random(5)
    name = "memcg." + "workingset_refault_anon_" * 6
    bench = BenchmarkResult(name="readtwice", parameters=(), metrics=(
        _metric(name, _noisy(rng, 100, 0.01, 10), _noisy(rng, 150, 0.01, 10), secondary=False,
                unit="MiB/s", higher=True),))
    lines = verdict_lines([bench])
    assert lines and all(len(line) <= TABLE_WIDTH for line in lines)
    assert "regression" in " ".join(lines) or "improvement" in " ".join(lines)
