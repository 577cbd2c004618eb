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

from collections import Counter

from bot.report.compose.claim_view import claim_support
from bot.report.compose.inputs import ReplyOptions
from bot.report.compose.message import ComposedReply, compose_reply
from bot.report.compose.results import BenchmarkReplyContext, BenchmarkResult, Machine, RunPolicy
from bot.report.compose.tables import benchmark_tables, varying_parameters, verdict_lines
from bot.report.compose.text import Block, Fields, Preformatted, Prose, Quote, glue, indent

KIND = "benchmark"


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


def benchmark_body(ctx: BenchmarkReplyContext) -> list[Block]:
    blocks: list[Block] = [_tested(ctx), *_verdicts(ctx)]
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
        f"{glue('base ' + tree.short_base)}{head}."
    )


def _verdicts(ctx: BenchmarkReplyContext) -> list[Block]:
    blocks: list[Block] = []
    lines = verdict_lines(ctx.benchmarks)
    if lines:
        blocks.append(Preformatted(lines))
    metrics = ctx.all_metrics()
    unchanged = [metric for _, metric in metrics if not metric.comparison.changed]
    if unchanged:
        kinds = Counter(metric.words for metric in unchanged)
        parts = ", ".join(f"{count} {words}" for words, count in sorted(kinds.items()))
        other = "other " if len(unchanged) < len(metrics) else ""
        noun = "metric" if len(unchanged) == 1 else "metrics"
        count = f"{len(unchanged)} {other}{noun}"
        blocks.append(Prose(f"No significant change in the {count}: {parts}."))
    varying = varying_parameters(ctx.benchmarks)
    for bench, metric in metrics:
        if metric.secondary and not metric.notable:
            continue
        for note in metric.comparison.notes():
            blocks.append(Prose(f"{bench.metric_label(metric, varying)}: {note}"))
    return blocks


def _legend(ctx: BenchmarkReplyContext) -> list[Block]:
    alphas = sorted({m.comparison.alpha for _, m in ctx.all_metrics()})
    level = " or ".join(f"{100 * a:.3g}%" for a in alphas)
    per_look = " per look" if ctx.policy.sequential else ""
    text = (
        "change is the Hodges-Lehmann estimate of patched against base in the metric's own "
        "unit (+ means larger), with its confidence interval and the two-sided Mann-Whitney p "
        f"over per-boot values; *marked* changes are significant at {level}{per_look} after "
        "controlling the false discovery rate across the metrics of a run; rCV% is the robust "
        "coefficient of variation, 1.4826 MAD / median."
    )
    units = []
    for _, metric in ctx.all_metrics():
        entry = f"{metric.name} in {metric.unit}, {metric.direction}"
        if not metric.secondary and entry not in units:
            units.append(entry)
    blocks: list[Block] = [Prose(text)]
    if units:
        blocks.append(Prose("Units: " + "; ".join(units) + "."))
    varying = varying_parameters(ctx.benchmarks)
    skipped = [
        " ".join([name, *(f"{k}={v}" for k, v in bench.parameters if k in varying)])
        for bench in ctx.benchmarks
        for name in bench.not_compared
    ]
    if skipped:
        blocks.append(Prose("Not compared, being 0 in some runs: " + ", ".join(skipped) + "."))
    outliers = _outlier_lines(ctx)
    if outliers:
        head = "Outliers (modified z-score over 3.5; kept in the comparison): "
        blocks.append(Prose(head + "; ".join(outliers) + "."))
    return blocks


def _outlier_lines(ctx: BenchmarkReplyContext) -> list[str]:
    """Outliers of the primary metrics, with their place in the session's run order."""
    varying = varying_parameters(ctx.benchmarks)
    found = []
    for bench, metric in ctx.all_metrics():
        c = metric.comparison
        if metric.secondary:
            continue
        runs = c.base.n + c.patched.n
        for side, summary in (("base", c.base), ("patched", c.patched)):
            values = ", ".join(
                f"{o.value:g}"
                + (f" (run {o.position + 1} of {runs})" if o.position is not None else "")
                for o in summary.outliers
            )
            if values:
                found.append(f"{bench.metric_label(metric, varying)} {side} {values}")
    return found


def _setup(ctx: BenchmarkReplyContext) -> list[Block]:
    build = ctx.build
    config = f"{build.config_name} (sha256 {build.config_hash[:12]})"
    if build.config_url:
        config += f", {build.config_url}"
    items = (
        f"Test machine: {describe_machine(ctx.machine)}",
        f"Kernel config: {config}",
        f"Compiler: {build.compiler}",
        f"Benchmark: {describe_parameters(ctx.benchmarks)}",
        f"Runs: {describe_runs(ctx.policy)}",
    )
    return [Fields(items)]


def describe_machine(machine: Machine) -> str:
    cores = f"{machine.cores} cores"
    if machine.threads and machine.threads != machine.cores:
        cores += f" ({machine.threads} threads)"
    sizes = (("L1d", machine.l1d), ("L1i", machine.l1i), ("L2", machine.l2), ("L3", machine.l3))
    caches = [f"{name} {size}" for name, size in sizes if size]
    nodes = "NUMA node" if machine.numa_nodes == 1 else "NUMA nodes"
    parts = [machine.boot, machine.cpu, cores, *caches]
    if machine.memory:
        parts.append(f"{machine.memory} memory")
    parts.append(f"{machine.numa_nodes} {nodes}")
    if machine.host:
        parts.append(f"host {machine.host}")
    return ", ".join(glue(part) if len(part) < 20 else part for part in parts) + "."


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


def describe_runs(policy: RunPolicy) -> str:
    head = f"{policy.runs_per_kernel} boots of each kernel per parameter set, {policy.order}"
    if policy.iterations:
        head += f"; {policy.iterations}"
    delta = f"{100 * policy.delta:g}%"
    if policy.sequential:
        rule = (
            f"pairs were added until the sequential rule decided ({policy.k_min} to "
            f"{policy.k_max} pairs, overall level {policy.alpha:g}, smallest change of "
            f"interest {delta})"
        )
    else:
        rule = (
            f"a fixed number of runs judged at level {policy.alpha:g}, smallest change of "
            f"interest {delta}"
        )
    return f"{head}; {rule}."
