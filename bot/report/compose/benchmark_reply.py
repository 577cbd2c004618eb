"""The benchmark reply: what was tested, what changed, the tables, the author's claim, the setup.

The content follows docs/replies.md, items 1-7, in that order:
1. one sentence on what was tested (series, version, patches, tree, branch, base, patched head);
2. verdict lines, most important first, and one line counting the metrics that did not change;
3. a table per benchmark run (tables.py), with the reclaim counters as secondary rows;
4. the author's claims, quoted, each set beside what the bot measured (claim_view.py);
5. machine, kernel config, compiler, benchmark parameters, run count and order;
6. how to reproduce;
7. the series page on the status site.
"""

from __future__ import annotations

import math
from collections import Counter

from bot.analysis.verdict import Verdict
from bot.report.compose import kinds
from bot.report.compose.claim_view import claim_support
from bot.report.compose.inputs import ReplyOptions
from bot.report.compose.message import ComposedReply, compose_reply
from bot.report.compose.results import (
    BenchmarkReplyContext,
    BenchmarkResult,
    Machine,
    MetricResult,
    RunPolicy,
)
from bot.report.compose.tables import (
    MAX_OUTLIERS_SHOWN,
    benchmark_tables,
    common_level,
    counter_source,
    fmt_exact,
    varying_parameters,
    verdict_lines,
)
from bot.report.compose.text import Block, Fields, Preformatted, Prose, Quote, glue, indent

KIND = kinds.BENCHMARK


def compose_benchmark_reply(ctx: BenchmarkReplyContext, options: ReplyOptions) -> ComposedReply:
    return compose_reply(
        kind=KIND,
        parent=ctx.parent,
        author=ctx.parent.sender,
        options=options,
        blocks=benchmark_body(ctx),
        series_version_id=ctx.series.series_version_id,
        version=ctx.series.version,
        run_id=ctx.series.run_id,
        anchor=ctx.series.anchor_msgid or ctx.parent.msgid,
    )


# The run's outcome in the reply's words: one word per outcome, as everywhere else.
RESULT_WORDS = {
    "improvement": "improvement",
    "regression": "regression",
    "no change": "no change (every main metric was shown not to change by its smallest change "
                 "of interest or more)",
    "inconclusive": "inconclusive (lorelab could not tell whether the series changes "
                    "performance: see each metric's interval)",
}


def benchmark_body(ctx: BenchmarkReplyContext) -> list[Block]:
    result = [Prose(f"Result: {RESULT_WORDS[ctx.outcome]}.")] if ctx.outcome in RESULT_WORDS \
        else []
    blocks: list[Block] = [_tested(ctx), *result, *_verdicts(ctx)]
    for table in benchmark_tables(ctx.benchmarks, ctx.tree):
        blocks.append(Preformatted(table))
    blocks.extend(_legend(ctx))
    for claim in ctx.claims:
        when = f"On {claim.date:%a, %d %b %Y}, " if claim.date else ""
        blocks.append(Quote(f"{when}{claim.author} wrote:", claim.lines))
        blocks.append(Prose(claim_support(claim, ctx.benchmarks)))
    blocks.extend(_setup(ctx))
    if ctx.reproduce:
        blocks.append(Prose("To reproduce without lorelab:"))
        blocks.append(Preformatted(indent(ctx.reproduce)))
    if ctx.series.status_url:
        blocks.append(Prose(f"Series page: {ctx.series.status_url}"))
    return blocks


def _tested(ctx: BenchmarkReplyContext) -> Prose:
    head = f", {glue('patched head ' + ctx.tree.short_head)}" if ctx.tree.head else ""
    tree = ctx.tree
    return Prose(
        f"lorelab tested {ctx.series.describe()} applied to {tree.tree} {tree.branch} at "
        f"{glue('base ' + tree.short_base)}{head}." + ctx.series.resent_sentence()
    )


def _verdicts(ctx: BenchmarkReplyContext) -> list[Block]:
    blocks: list[Block] = []
    lines = verdict_lines(ctx.benchmarks)
    if lines:
        blocks.append(Preformatted(lines))
    metrics = [(b, m) for b, m in ctx.all_metrics() if m.comparison.derived_from is None]
    rest = [metric for _, metric in metrics if not metric.notable]
    if rest:
        kinds = Counter(_kind(metric) for metric in rest)
        parts = "; ".join(f"{count} {words}" for words, count in sorted(kinds.items()))
        other = " other" if len(rest) < len(metrics) else ""
        noun = "metric" if len(rest) == 1 else "metrics"
        blocks.append(Prose(f"The {len(rest)}{other} {noun}: {parts}."))
    varying = varying_parameters(ctx.benchmarks)
    for bench, metric in metrics:
        if metric.secondary and not metric.notable:
            continue
        for note in metric.comparison.notes():
            blocks.append(Prose(f"{bench.metric_label(metric, varying)}: {note}"))
    return blocks


def _kind(metric: MetricResult) -> str:
    """A metric's verdict without its own numbers, to count metrics alike ("could not tell",
    "no change of 2% or more", "no change (identical in every run)")."""
    c = metric.comparison
    if c.verdict is Verdict.INCONCLUSIVE:
        return "could not tell (see the tables' intervals)"
    if c.identical:
        return "no change (identical in every run)"
    return metric.words


def _legend(ctx: BenchmarkReplyContext) -> list[Block]:
    comparisons = [m.comparison for _, m in ctx.all_metrics()]
    if not comparisons:
        return []
    first = comparisons[0]
    paired = first.shift.paired
    test = ("the Wilcoxon signed-rank test on the pairs' log ratios" if paired
            else "the Mann-Whitney test over per-boot values")
    level = common_level(ctx.benchmarks)
    label = next((c.interval_label for c in comparisons
                  if math.isclose(c.interval_level, level)), f"{100 * level:g}% interval")
    sizes = [max(m.comparison.family_size for m in bench.metrics) for bench in ctx.benchmarks
             if bench.metrics]
    # One family per benchmark run (a campaign): say so, not "across the reply".
    families = (f"across the {sizes[0]} metrics of the run" if len(sizes) == 1 else
                "within each benchmark run's metrics (" + ", ".join(map(str, sizes)) + ") at "
                f"{ctx.policy.alpha:.3g} each, so that the whole reply is held at "
                f"{ctx.policy.alpha * len(sizes):.2g}")
    text = (
        "change is patched against base in the metric's own unit (+ means larger), estimated "
        f"by {first.estimate_method}, with its {label}; *marked* changes are "
        f"significant by {test}, after controlling the false discovery rate {families}; "
        "delta is the metric's smallest change of "
        "interest, below which lorelab calls no change; rCV% is the robust coefficient of "
        "variation, 1.4826 MAD / median."
    )
    blocks: list[Block] = [Prose(text)]
    if units := _units(ctx):
        blocks.append(Prose("Units: " + "; ".join(units) + "."))
    outliers = _outlier_lines(ctx)
    if outliers:
        head = "Outliers (modified z-score over 3.5; kept in the comparison): "
        blocks.append(Prose(head + "; ".join(outliers) + "."))
    return blocks


def _units(ctx: BenchmarkReplyContext) -> list[str]:
    """E.g. "readtwice.throughput in MiB/s, higher is better; reclaim counters in pages
    (allocstall*: stalls), no better direction": the metrics with rows, grouped by unit."""
    groups: dict[str, list[str]] = {}
    counter_units: set[str] = set()
    for _, metric in ctx.all_metrics():
        if metric.secondary and metric.comparison.identical:
            continue  # a value in a list, not a row with a unit to read
        if counter_source(metric) is not None:
            counter_units.add(metric.unit)
            continue
        unit = f"in {metric.unit}, {metric.direction}" if metric.unit else metric.direction
        names = groups.setdefault(unit, [])
        if metric.name not in names:
            names.append(metric.name)
    found = [f"{', '.join(names)} {unit}" for unit, names in groups.items()]
    if counter_units:
        stalls = " (allocstall*: stalls)" if "stalls" in counter_units else ""
        found.append(f"reclaim counters in pages{stalls}, no better direction")
    return found


def _outlier_lines(ctx: BenchmarkReplyContext) -> list[str]:
    """Outliers of the primary metrics, with their place among the measured runs (a warm-up
    pair is not counted: it is not measured)."""
    varying = varying_parameters(ctx.benchmarks)
    found = []
    for bench, metric in ctx.all_metrics():
        c = metric.comparison
        if metric.secondary:
            continue
        slots = sorted({*(c.base.positions or ()), *(c.patched.positions or ())})
        for side, summary in (("base", c.base), ("patched", c.patched)):
            values = ", ".join(
                fmt_exact(o.value)
                + (f" (run {slots.index(o.position) + 1} of {len(slots)})"
                   if o.position is not None and o.position in slots else "")
                for o in summary.outliers[:MAX_OUTLIERS_SHOWN]
            )
            if len(summary.outliers) > MAX_OUTLIERS_SHOWN:
                values += f" and {len(summary.outliers) - MAX_OUTLIERS_SHOWN} more"
            if values:
                found.append(f"{bench.metric_label(metric, varying)} {side} {values}")
    return found


def _setup(ctx: BenchmarkReplyContext) -> list[Block]:
    build = ctx.build
    config = f"{build.config_name} (sha256 {build.config_hash[:12]})"
    if build.config_url:
        config += f", {build.config_url}"
    lru = (f"LRU: {ctx.machine.lru}",) if ctx.machine.lru else ()
    resolution = (f"Resolution: {text}",) if (text := describe_resolution(ctx.benchmarks)) else ()
    items = (
        f"Test machine: {describe_machine(ctx.machine)}", *lru, *resolution,
        f"Kernel config: {config}",
        f"Compiler: {build.compiler}",
        f"Benchmark: {describe_parameters(ctx.benchmarks)}",
        f"Runs: {describe_runs(ctx.policy, booted=ctx.machine.runner != 'local')}",
    )
    return [Fields(items)]


def describe_machine(machine: Machine) -> str:
    """E.g. "QEMU guest under TCG (emulated CPU, no KVM), 2 vCPUs, 256 MiB memory, 1 NUMA
    node, kernel 6.1.0; on lab host vm1: AMD EPYC 7B13, 2 cores, a virtual machine (kvm)."."""
    guest = machine.runner == "qemu"
    cores = f"{machine.cores} vCPUs" if guest else f"{machine.cores} cores"
    if machine.threads and machine.threads != machine.cores:
        cores += f" ({machine.threads} threads)"
    sizes = (("L1d", machine.l1d), ("L1i", machine.l1i), ("L2", machine.l2), ("L3", machine.l3))
    caches = [] if guest else [f"{name} {size}" for name, size in sizes if size]
    nodes = "NUMA node" if machine.numa_nodes == 1 else "NUMA nodes"
    parts = [machine.boot, *([] if guest else [machine.cpu]), cores, *caches]
    if machine.memory:
        parts.append(f"{machine.memory} memory")
    parts.append(f"{machine.numa_nodes} {nodes}")
    if machine.kernel:
        parts.append(f"kernel {machine.kernel}")
    text = ", ".join(glue(part) if len(part) < 20 else part for part in parts)
    if machine.host_machine:
        text += f"; on lab host {machine.host}: {machine.host_machine}"
    elif machine.host:
        text += f"; lab host {machine.host}"
    if machine.runner == "local":
        text += (f". Both kernels' programs ran on this host's own kernel "
                 f"{machine.kernel or '(unknown)'}: a userspace comparison, no kernel was "
                 "booted")
    return text + "."


def describe_resolution(benchmarks: tuple[BenchmarkResult, ...]) -> str:
    """What this lab could tell apart with these runs: half of each main metric's interval,
    and the median of the counters' ("readtwice.throughput +-14.8%, counters +-1.6% (median)").
    A reader of "could not tell" needs it: on a noisy lab only large changes are called."""
    mains, counters = [], []
    varying = varying_parameters(benchmarks)
    for bench in benchmarks:
        for metric in bench.metrics:
            c = metric.comparison
            if c.scale != "log" or c.identical:
                continue
            half = (c.ci_high_pct - c.ci_low_pct) / 2
            if not math.isfinite(half):
                continue
            if not metric.secondary:
                mains.append(f"{bench.metric_label(metric, varying)} +-{half:.1f}%")
            elif counter_source(metric) is not None:
                counters.append(half)
    if counters:
        counters.sort()
        mains.append(f"reclaim counters +-{counters[len(counters) // 2]:.1f}% (median)")
    if not mains:
        return ""
    return (", ".join(dict.fromkeys(mains)) + ": half the width of each interval with these "
            "runs; a smaller change cannot be told from noise on this lab.")


def describe_parameters(benchmarks: tuple[BenchmarkResult, ...]) -> str:
    """E.g. "hackbench mode=process loops=3000, groups=125, 130, 135"."""
    varying = varying_parameters(benchmarks)
    parts = []
    for name in dict.fromkeys(bench.name for bench in benchmarks):
        runs = [bench for bench in benchmarks if bench.name == name]
        fixed = [f"{k}={v}" for k, v in runs[0].parameters if k not in varying]
        text = " ".join([name, *fixed])
        for key in varying:
            values = [dict(b.parameters).get(key) for b in runs]
            values = list(dict.fromkeys(v for v in values if v is not None))
            if values:
                text += f", {key}={', '.join(values)}"
        parts.append(text)
    return "; ".join(parts) + "."


def describe_runs(policy: RunPolicy, booted: bool = True) -> str:
    """E.g. "8 boots of each kernel per parameter set, randomized pairs; ..."; `booted` False
    for runs on a running kernel (the local runner), which boot nothing."""
    each = "boots of each kernel" if booted else "runs of each side"
    head = f"{policy.runs_per_kernel} {each} per parameter set, {policy.order}"
    if policy.iterations:
        head += f"; {policy.iterations}"
    if policy.sequential:
        rule = (
            f"pairs were added until the sequential rule decided ({policy.k_min} to "
            f"{policy.k_max} pairs, false-discovery level {policy.alpha:.3g} per benchmark run; "
            "each metric's smallest change of interest is its delta in the tables)"
        )
    else:
        rule = (
            f"a fixed number of runs judged at level {policy.alpha:g} (each metric's "
            "smallest change of interest is its delta in the tables)"
        )
    return f"{head}; {rule}."
