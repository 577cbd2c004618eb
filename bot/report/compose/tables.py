"""Verdict lines and per-benchmark tables in the style of lkp-tests and mmtests.

A table has one row per metric, base and patched side by side (n, median, robust CV), then the
change (Hodges-Lehmann, percent), its interval and the Mann-Whitney p. A significant change is
marked as mmtests marks it, `*-2.93%*`, others read `(+0.61%)`. Reclaim counters follow under
their own heading. Tables size their columns to the data and stay within 100 columns: values
switch to a compact form (1.23M) before a table would grow wider.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

from bot.analysis.robust import TailKind
from bot.analysis.verdict import Comparison, Verdict
from bot.report.compose.inputs import TreeInfo
from bot.report.compose.results import BenchmarkResult, MetricResult
from bot.report.compose.text import TABLE_WIDTH

COUNTERS_HEADING = "reclaim counters (/proc/vmstat, per run)"


def fmt_pct(value: float) -> str:
    if math.isinf(value):
        return "+inf%" if value > 0 else "-inf%"
    return f"{value:+.2f}%"


def fmt_interval(low: float, high: float, unit: str = "%") -> str:
    def one(value: float) -> str:
        text = fmt_pct(value)
        return text if unit else text.rstrip("%")

    return f"[{one(low)}, {one(high)}]"


def fmt_p(pvalue: float) -> str:
    return f"{pvalue:.3f}" if pvalue >= 0.001 else f"{pvalue:.1e}"


def fmt_value(value: float, compact: bool = False) -> str:
    """A median as a reader wants it: 72.251, 1234567; compact: 1.23M."""
    if compact and abs(value) >= 10_000:
        for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= limit:
                return f"{value / limit:.3g}{suffix}"
    if abs(value) >= 10_000 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.5g}"


def varying_parameters(benchmarks: Sequence[BenchmarkResult]) -> tuple[str, ...]:
    """Parameter keys whose values differ between runs of the same benchmark."""
    keys: list[str] = []
    for bench in benchmarks:
        for key, value in bench.parameters:
            others = {
                dict(other.parameters).get(key) for other in benchmarks if other.name == bench.name
            }
            if len(others | {value}) > 1 and key not in keys:
                keys.append(key)
    return tuple(keys)


MAX_OUTLIERS_SHOWN = 3


def tail_words(c: Comparison) -> tuple[str, ...]:
    """The tail finding in the reply's words (base/patched, not A/B), e.g.
    "2 slow outliers in patched (193.382, 103.189): tail regression"."""
    slow = "low" if c.higher_is_better else "slow"
    found = []
    for side, outliers, kind in (
        ("base", c.tail.base, TailKind.TAIL_IMPROVEMENT),
        ("patched", c.tail.patched, TailKind.TAIL_REGRESSION),
    ):
        if outliers:
            noun = "outlier" if len(outliers) == 1 else "outliers"
            # The worst few say enough; a long list would not fit the verdict line.
            values = ", ".join(f"{o.value:g}" for o in outliers[:MAX_OUTLIERS_SHOWN])
            if len(outliers) > MAX_OUTLIERS_SHOWN:
                values += ", ..."
            text = f"{len(outliers)} {slow} {noun} in {side} ({values})"
            if c.tail.kind is kind:
                text += f": {kind.value}"
            found.append(text)
    return tuple(found)


def _importance(metric: MetricResult) -> tuple[int, float]:
    c = metric.comparison
    if c.verdict is Verdict.REGRESSION and metric.direction_known:
        rank = 0
    elif c.changed:
        rank = 1
    else:
        rank = 2  # a tail finding only
    return (rank + (3 if metric.secondary else 0), -abs(c.change_pct))


def notable_metrics(
    benchmarks: Sequence[BenchmarkResult],
) -> list[tuple[BenchmarkResult, MetricResult]]:
    """Metrics that get a verdict line, most important first: regressions, improvements, tail
    changes; primary metrics before reclaim counters; larger changes first."""
    found = [(b, m) for b in benchmarks for m in b.metrics if m.notable]
    return sorted(found, key=lambda pair: _importance(pair[1]))


def verdict_lines(benchmarks: Sequence[BenchmarkResult]) -> tuple[str, ...]:
    """E.g. "hackbench.time groups=130  -2.98% [-5.54%, -0.51%]  improvement (may be < 1%)"."""
    varying = varying_parameters(benchmarks)
    rows = []
    for bench, metric in notable_metrics(benchmarks):
        c = metric.comparison
        findings = tail_words(c) if metric.direction_known else ()
        rows.append(
            (
                bench.metric_label(metric, varying),
                fmt_pct(c.change_pct),
                fmt_interval(c.ci_low_pct, c.ci_high_pct),
                "; ".join((metric.words, *findings)),
            )
        )
    if not rows:
        return ()
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for label, pct, interval, words in rows:
        head = f"{label:<{widths[0]}}  {pct:>{widths[1]}} {interval:<{widths[2]}}  "
        if len(head) + len(words) <= TABLE_WIDTH:
            lines.append(head + words)
        else:
            lines.append(head.rstrip())
            lines.extend(textwrap.wrap(words, TABLE_WIDTH, initial_indent=" " * 4,
                                       subsequent_indent=" " * 6))
    return tuple(lines)


def _change_cells(comparisons: Sequence[Comparison]) -> list[str]:
    texts = [fmt_pct(c.change_pct) for c in comparisons]
    width = max((len(t) for t in texts), default=0)
    return [
        f"*{text:>{width}}*" if c.changed else f"({text:>{width}})"
        for c, text in zip(comparisons, texts, strict=True)
    ]


def benchmark_tables(
    benchmarks: Sequence[BenchmarkResult], tree: TreeInfo
) -> list[tuple[str, ...]]:
    """One table per benchmark run, all with the same column widths so they read as one."""
    for compact in (False, True):
        tables = [_columns(bench, compact) for bench in benchmarks]
        widths = _widths([columns for _, columns in tables])
        rendered = [
            _render(bench, tree, ordered, columns, widths)
            for bench, (ordered, columns) in zip(benchmarks, tables, strict=True)
        ]
        if all(len(line) <= TABLE_WIDTH for table in rendered for line in table):
            return rendered
    raise ValueError(f"the benchmark tables do not fit in {TABLE_WIDTH} columns")


# (header, alignment, spaces before, cells).
Column = tuple[str, str, int, list[str]]


def _columns(bench: BenchmarkResult, compact: bool) -> tuple[list[MetricResult], list[Column]]:
    ordered = [m for m in bench.metrics if not m.secondary] + [
        m for m in bench.metrics if m.secondary
    ]
    comparisons = [m.comparison for m in ordered]
    level = comparisons[0].shift.confidence if comparisons else 0.95
    base = [c.base for c in comparisons]
    patched = [c.patched for c in comparisons]
    return ordered, [
        ("metric", "<", 0, [m.name for m in ordered]),
        ("n", ">", 2, [str(s.n) for s in base]),
        ("median", ">", 2, [fmt_value(s.median, compact) for s in base]),
        ("rCV%", ">", 1, [f"{100 * s.robust_cv:.2f}" for s in base]),
        ("n", ">", 2, [str(s.n) for s in patched]),
        ("median", ">", 2, [fmt_value(s.median, compact) for s in patched]),
        ("rCV%", ">", 1, [f"{100 * s.robust_cv:.2f}" for s in patched]),
        ("change", ">", 2, _change_cells(comparisons)),
        (f"{100 * level:g}% CI", "<", 2, [_interval_cell(c) for c in comparisons]),
        ("p", ">", 1, [fmt_p(c.pvalue) for c in comparisons]),
    ]


def _widths(tables: Sequence[list[Column]]) -> list[int]:
    return [
        max(len(header), *(len(cell) for cell in cells))
        for columns in zip(*tables, strict=True)
        for header, cells in [(columns[0][0], [c for column in columns for c in column[3]])]
    ]


def _render(
    bench: BenchmarkResult,
    tree: TreeInfo,
    ordered: list[MetricResult],
    columns: list[Column],
    widths: list[int],
) -> tuple[str, ...]:
    def join(cells: Sequence[str]) -> str:
        return "".join(
            " " * space + f"{cell:{align}{width}}"
            for cell, (_, align, space, _), width in zip(cells, columns, widths, strict=True)
        ).rstrip()

    # Each kernel's name over its three columns, as lkp-tests puts the commits over theirs.
    group = sum(widths[1:4]) + 3  # the spaces before median and rCV%
    start = widths[0] + 2
    base_head = f"base {tree.short_base}"
    patched_head = f"patched {tree.short_head}" if tree.head else "patched"
    sides = " " * start + f"{base_head:^{group}}" + "  " + f"{patched_head:^{group}}"
    rules = " " * start + "-" * group + "  " + "-" * group
    lines = [bench.label, sides.rstrip(), rules, join([header for header, *_ in columns])]
    for index, metric in enumerate(ordered):
        if metric.secondary and (index == 0 or not ordered[index - 1].secondary):
            lines.append(COUNTERS_HEADING + ":")
        lines.append(join([cells[index] for *_, cells in columns]))
    return tuple(lines)


def _interval_cell(c: Comparison) -> str:
    return fmt_interval(c.ci_low_pct, c.ci_high_pct, "")
