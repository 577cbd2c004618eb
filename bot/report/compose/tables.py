"""Verdict lines and per-benchmark tables in the style of lkp-tests and mmtests.

A table has one row per metric, in lkp-tests' order: the numbers first, base and patched side
by side (n, median, robust CV), then the change, its interval and the metric's own smallest
change of interest (p is in the JSON and on the status page), and the metric's name last. A
significant change is marked as mmtests marks it, `*-2.93%*`, others read `(+0.61%)`. Rows are
grouped: the benchmark's main metrics, its other metrics, then reclaim counters per source
(/proc/vmstat, the benchmark memcg's memory.stat), each under a heading and named without the
source's prefix. Counters identical in every run, and counters zero in every run, are one line
each after the rows.

Every table fits in 100 columns whatever the metric names and values: values switch to a compact
form (1.23M) before a table grows wider, a name that does not fit after its numbers goes on its
own line above them, and a numbers row that still does not fit is wrapped. Never an exception: a
reply that cannot be laid out is no reply.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from bot.analysis.robust import TailKind
from bot.analysis.verdict import Comparison, Verdict
from bot.report.compose.inputs import TreeInfo
from bot.report.compose.results import BenchmarkResult, MetricResult
from bot.report.compose.text import TABLE_WIDTH

# Counter sources: the sample name's prefix (workers/lab/job.py), the file, its rows' heading.
COUNTER_SOURCES = (
    ("proc-vmstat.", "/proc/vmstat", "reclaim counters, /proc/vmstat (change per run)"),
    ("memcg.", "memory.stat",
     "reclaim counters, the benchmark memcg's memory.stat (change per run)"),
)
OTHER_COUNTERS = "counters (per run)"
OTHER_METRICS = "other metrics of the benchmark"


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
    """p in significant digits: 0.007, 7.4e-07."""
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


def fmt_exact(value: float) -> str:
    """One measured value as it was recorded: 193.382, 8590960 (no exponent, no rounding to
    a column's width)."""
    if value == int(value) or abs(value) >= 1e6:
        return f"{value:.0f}"
    return f"{value:.6g}"


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
            values = ", ".join(fmt_exact(o.value) for o in outliers[:MAX_OUTLIERS_SHOWN])
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
    # A metric judged with another (an exact reciprocal) is in the table, not a verdict of its own.
    found = [(b, m) for b in benchmarks for m in b.metrics
             if m.notable and m.comparison.derived_from is None]
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
                _change_text(c),
                _interval_text(c),
                "; ".join((metric.words, *findings)),
            )
        )
    if not rows:
        return ()
    # A label longer than a third of the line goes on its own line, the numbers under it.
    inline = [row for row in rows if len(row[0]) <= TABLE_WIDTH // 3]
    widths = [max((len(row[i]) for row in inline), default=0) for i in range(3)]
    lines = []
    for label, pct, interval, words in rows:
        if len(label) > TABLE_WIDTH // 3:
            lines.extend(_wrapped(label, 0))
            label = ""
        head = f"{label:<{widths[0]}}  {pct:>{widths[1]}} {interval:<{widths[2]}}  "
        if len(head) + len(words) <= TABLE_WIDTH:
            lines.append(head + words)
        else:
            lines.append(head.rstrip())
            lines.extend(_wrapped(words, 4, 6))
    return tuple(lines)


def _wrapped(text: str, indent: int, hanging: int | None = None) -> list[str]:
    """`text` in lines of at most TABLE_WIDTH, breaking long words only when they must."""
    return textwrap.wrap(text, TABLE_WIDTH, initial_indent=" " * indent,
                         subsequent_indent=" " * (indent if hanging is None else hanging),
                         break_on_hyphens=False) or [""]


def _change_cells(comparisons: Sequence[Comparison]) -> list[str]:
    texts = [_change_text(c) for c in comparisons]
    width = max((len(t) for t in texts), default=0)
    return [
        f"*{text:>{width}}*" if c.changed else f"({text:>{width}})"
        for c, text in zip(comparisons, texts, strict=True)
    ]


def _change_text(c: Comparison) -> str:
    if c.scale == "absolute":  # zero in some runs: a difference in the unit, not a ratio
        return _absolute(c.estimate)
    return fmt_pct(c.change_pct)


def _interval_text(c: Comparison) -> str:
    """The interval as the verdict line prints it: in percent, or in the metric's unit for a
    count compared on an absolute scale (zero in some runs)."""
    if c.scale == "absolute":
        return f"[{_absolute(c.shift.ci_low)}, {_absolute(c.shift.ci_high)}]"
    return fmt_interval(c.ci_low_pct, c.ci_high_pct)


def _absolute(value: float) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value:+.4g}"


def _interval_cell(c: Comparison, level: float) -> str:
    cell = _interval_text(c) if c.scale == "absolute" else \
        fmt_interval(c.ci_low_pct, c.ci_high_pct, "")
    # The table's header names the common level; a row judged at another level says its own.
    if not math.isclose(c.interval_level, level):
        cell += f" {100 * c.interval_level:g}%"
    return cell


def _delta_cell(c: Comparison) -> str:
    return f"{100 * c.delta:g}%"


def counter_source(metric: MetricResult) -> tuple[str, str] | None:
    """(prefix, heading) of a reclaim counter's source, None for the benchmark's own metrics."""
    for prefix, _, heading in COUNTER_SOURCES:
        if metric.name.startswith(prefix):
            return prefix, heading
    return None


def _section(metric: MetricResult) -> tuple[int, str, str]:
    """(order, heading, name as shown) of a metric's group in its table."""
    if not metric.secondary:
        return 0, "", metric.name
    source = counter_source(metric)
    if source is not None:
        prefix, heading = source
        return 2 + [p for p, _, _ in COUNTER_SOURCES].index(prefix), heading, \
            metric.name.removeprefix(prefix)
    if metric.direction_known:
        return 1, OTHER_METRICS, metric.name
    return 2 + len(COUNTER_SOURCES), OTHER_COUNTERS, metric.name


@dataclass(frozen=True)
class _Row:
    metric: MetricResult
    heading: str
    name: str


def _rows(bench: BenchmarkResult) -> tuple[list[_Row], list[_Row]]:
    """(rows with numbers, rows identical in every run) in section order."""
    ordered = sorted(bench.metrics, key=lambda m: _section(m)[0])
    rows = [_Row(m, *_section(m)[1:]) for m in ordered]
    # Main metrics keep their row even when identical: the reader looks for them.
    same = [r for r in rows if r.metric.secondary and r.metric.comparison.identical]
    return [r for r in rows if r not in same], same


def common_level(benchmarks: Sequence[BenchmarkResult]) -> float:
    """The interval level most metrics were judged at: the one the tables' header names."""
    levels = [m.comparison.interval_level for b in benchmarks for m in b.metrics]
    return max(set(levels), key=levels.count) if levels else 0.95


# (header, alignment, spaces before, cells).
Column = tuple[str, str, int, list[str]]


def _columns(rows: Sequence[_Row], compact: bool, level: float) -> list[Column]:
    comparisons = [r.metric.comparison for r in rows]
    base = [c.base for c in comparisons]
    patched = [c.patched for c in comparisons]
    # p is left to the verdict, the notes and the JSON: the table keeps to what lkp-tests and
    # mmtests readers compare (medians, spread, change), with the interval and delta beside.
    return [
        ("n", ">", 0, [str(b.n) if b.n == q.n else f"{b.n}/{q.n}" for b, q in zip(
            base, patched, strict=True)]),
        ("median", ">", 2, [fmt_value(s.median, compact) for s in base]),
        ("rCV%", ">", 1, [f"{100 * s.robust_cv:.2f}" for s in base]),
        ("median", ">", 3, [fmt_value(s.median, compact) for s in patched]),
        ("rCV%", ">", 1, [f"{100 * s.robust_cv:.2f}" for s in patched]),
        ("change", ">", 2, _change_cells(comparisons)),
        (f"{100 * level:g}% interval", "<", 2, [_interval_cell(c, level) for c in comparisons]),
        ("delta", ">", 1, [_delta_cell(c) for c in comparisons]),
    ]


def _widths(tables: Sequence[list[Column]]) -> list[int]:
    return [
        max(len(header), *(len(cell) for cell in cells))
        for columns in zip(*tables, strict=True)
        for header, cells in [(columns[0][0], [c for column in columns for c in column[3]])]
    ]


def benchmark_tables(
    benchmarks: Sequence[BenchmarkResult], tree: TreeInfo
) -> list[tuple[str, ...]]:
    """One table per benchmark run, all with the same column widths so they read as one, each
    within TABLE_WIDTH columns."""
    level = common_level(benchmarks)
    split = [_rows(bench) for bench in benchmarks]
    layouts = []
    for compact in (False, True):
        tables = [_columns(rows, compact, level) for rows, _ in split]
        widths = _widths(tables)
        layouts.append([
            _render(bench, tree, rows, same, columns, widths)
            for bench, (rows, same), columns in zip(benchmarks, split, tables, strict=True)
        ])
    # Full values unless compact ones (1.23M) keep more names on their rows.
    rendered = min(layouts, key=lambda tables: sum(len(t) for t in tables))
    # Values too long even in compact form: the numbers rows wrap rather than overflow.
    return [tuple(part for line in table for part in
                  ([line] if len(line) <= TABLE_WIDTH else _wrapped(line.strip(), 0, 4)))
            for table in rendered]


def _render(
    bench: BenchmarkResult,
    tree: TreeInfo,
    rows: list[_Row],
    same: list[_Row],
    columns: list[Column],
    widths: list[int],
) -> tuple[str, ...]:
    def join(cells: Sequence[str]) -> str:
        return "".join(
            " " * space + f"{cell:{align}{width}}"
            for cell, (_, align, space, _), width in zip(cells, columns, widths, strict=True)
        )

    def with_name(numbers: str, name: str) -> list[str]:
        line = f"{numbers}  {name}"
        if len(line) <= TABLE_WIDTH:
            return [line]
        return [*_wrapped(name, 0), numbers.rstrip()]  # lkp's form needs a wider screen

    # Each kernel over its two columns, as lkp-tests puts the commits over theirs; the commits
    # themselves on the line above, where they fit whatever the columns' widths.
    base_start = widths[0] + 2
    group = widths[1] + 1 + widths[2]
    commits = f"base {tree.short_base}" + (f", patched {tree.short_head}" if tree.head else "")
    sides = " " * base_start + f"{'base':^{group}}" + " " * 3 + f"{'patched':^{group}}"
    rules = " " * base_start + "-" * group + " " * 3 + "-" * group
    lines = [*_wrapped(f"{bench.label} ({commits})", 0, 4), sides.rstrip(), rules,
             join([h for h, *_ in columns]) + "  metric"]
    heading = ""
    for index, row in enumerate(rows):
        if row.heading != heading:
            heading = row.heading
            lines.append(f"{heading}:")
        lines.extend(with_name(join([cells[index] for *_, cells in columns]), row.name))
    lines.extend(_collapsed(same))
    if bench.not_compared:
        lines += _wrapped("not compared (a value of 0 in some run: no ratio): "
                          + ", ".join(bench.not_compared), 0, 4)
    return tuple(line.rstrip() for line in lines)


def _collapsed(same: list[_Row]) -> list[str]:
    """Per source, one line for the counters zero in every run and one for those identical in
    every run (each name once: the reader scans for a counter that moved)."""
    lines = []
    for heading in dict.fromkeys(r.heading for r in same):
        rows = [r for r in same if r.heading == heading]
        where = f" ({_source_name(heading)})" if _source_name(heading) else ""
        runs = rows[0].metric.comparison.base.n + rows[0].metric.comparison.patched.n
        zero = [r.name for r in rows if r.metric.comparison.base.median == 0]
        other = [f"{r.name} {fmt_value(r.metric.comparison.base.median)}" for r in rows
                 if r.metric.comparison.base.median != 0]
        if zero:
            lines += _wrapped(f"zero in all {runs} runs{where}: " + ", ".join(zero), 0, 4)
        if other:
            lines += _wrapped(f"identical in all {runs} runs{where}: " + ", ".join(other), 0, 4)
    return lines


def _source_name(heading: str) -> str:
    """"/proc/vmstat" or "memory.stat" for a counter heading, "" for others."""
    return next((name for _, name, counters in COUNTER_SOURCES if heading == counters), "")
