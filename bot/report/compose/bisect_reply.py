"""The bisect reply: which patch of the series brings the change its review found.

A follow-up of the review (kind "bisect", bot/runs/bisection.py, workers/lab/bisect_step.py),
one more reply on the thread, in this order:
1. what was bisected: the change the review reported, in which series, on which base;
2. the finding: "The change comes with 3/4 "subject"", or why it could not be found (the
   boot budget ran out at a step whose campaign could not tell; the prefixes that would decide
   it did not build), with the patches it may still be;
3. one line per prefix tested, each against the base (change, interval, verdict words), and the
   review's own line for the whole series;
4. what it cost: the boots (runs, for a local host), the steps, the budget per step;
5. the machine and how the runs were made;
6. how to reproduce the decisive prefix, without lorelab;
7. the series page.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from bot.report.compose import kinds
from bot.report.compose.benchmark_reply import describe_machine
from bot.report.compose.inputs import ParentMessage, ReplyOptions, SeriesInfo, TreeInfo
from bot.report.compose.message import ComposedReply, compose_reply
from bot.report.compose.results import Machine
from bot.report.compose.tables import fmt_interval, fmt_pct
from bot.report.compose.text import (
    TABLE_WIDTH,
    Block,
    Fields,
    Preformatted,
    Prose,
    glue,
    indent,
)
from bot.runs.bisection import Ended
from bot.runs.records import BisectRecord, MetricFinding

KIND = kinds.BISECT


@dataclass(frozen=True)
class BisectReplyContext:
    parent: ParentMessage
    series: SeriesInfo
    tree: TreeInfo
    subjects: tuple[str, ...]  # the patches' subjects, patch 1 first
    bisection: BisectRecord
    machine: Machine | None  # None when no step ran (no prefix to test built)
    warmup_pairs: int = 1
    iterations: int = 1  # benchmark runs per boot, their median the boot's value
    reproduce: tuple[str, ...] = ()

    @property
    def boots(self) -> str:
        """What one side's turn is called: a boot, or a run on a local host (boots nothing)."""
        return "runs" if self.machine is not None and self.machine.runner == "local" else "boots"


def compose_bisect_reply(ctx: BisectReplyContext, options: ReplyOptions) -> ComposedReply:
    return compose_reply(
        kind=KIND,
        parent=ctx.parent,
        author=ctx.parent.sender,
        options=options,
        blocks=bisect_body(ctx),
        series_version_id=ctx.series.series_version_id,
        version=ctx.series.version,
        run_id=ctx.series.run_id,
        anchor=ctx.series.anchor_msgid or ctx.parent.msgid,
    )


def bisect_body(ctx: BisectReplyContext) -> list[Block]:
    record = ctx.bisection
    blocks: list[Block] = [_bisected(ctx), Prose(finding(ctx))]
    blocks.append(Preformatted(indent(prefix_lines(ctx))))
    blocks.append(Prose(
        f"Prefix i/{record.patches} is the base with patches 1 to i applied; each line "
        "compares it with the base: the change of the metric (+ means larger), its interval "
        "and the verdict, by the same sequential rule as the review's."))
    blocks.append(Prose(_cost(ctx)))
    blocks.extend(_setup(ctx))
    if ctx.reproduce:
        blocks.append(Prose("To reproduce the decisive prefix without lorelab:"))
        blocks.append(Preformatted(indent(ctx.reproduce)))
    if ctx.series.status_url:
        blocks.append(Prose(f"Series page: {ctx.series.status_url}"))
    return blocks


def _bisected(ctx: BisectReplyContext) -> Prose:
    verdicts = sorted({m.verdict for m in ctx.bisection.review})
    what = " and ".join(verdicts) or "change"
    return Prose(
        f"lorelab looked for the patch that brings the {what} its review found in "
        f"{ctx.series.describe()}, applied to {ctx.tree.tree} {ctx.tree.branch} at "
        f"{glue('base ' + ctx.tree.short_base)}.")


def patch_name(ctx: BisectReplyContext, index: int) -> str:
    """E.g. '3/4 "mm/vmscan: pace reclaim"'."""
    subject = ctx.subjects[index - 1] if 0 < index <= len(ctx.subjects) else ""
    return f'{index}/{ctx.bisection.patches} "{subject}"' if subject else \
        f"{index}/{ctx.bisection.patches}"


def finding(ctx: BisectReplyContext) -> str:
    """The bisection's result in one paragraph: the patch, or what is known and why no more."""
    record = ctx.bisection
    n = record.patches
    suspects = _suspects(ctx)
    if record.ended == Ended.FOUND and record.found is not None:
        before = ("the base does not" if record.good == 0
                  else f"prefix {record.good}/{n} was shown not to")
        return (f"The change comes with {patch_name(ctx, record.found)}: prefix "
                f"{record.found}/{n} carries it and {before}.")
    if record.ended == Ended.BUDGET:
        budget = "boot budget" if ctx.boots == "boots" else "budget"
        return (f"The {budget} ran out before the patch was found: at prefix "
                f"{record.stopped_at}/{n}, {record.boots_per_step} {ctx.boots} per step "
                f"([follow_ups] bisect_boots, at most {record.pairs_max} measured pairs) could "
                f"not tell whether it carries the change. What is known: the change comes with "
                f"{suspects}.")
    if record.ended == Ended.NOT_BUILT:
        failed = ", ".join(f"{p}/{n}" for p in record.not_built)
        return (f"The patch could not be pinned down: {_prefixes(record.not_built)} {failed} "
                f"did not build, and the change comes with {suspects}.")
    return f"The bisection did not end ({record.ended or 'no state'})."


def _suspects(ctx: BisectReplyContext) -> str:
    record = ctx.bisection
    names = [patch_name(ctx, i) for i in range(record.good + 1, record.bad + 1)]
    if len(names) == 1:
        return names[0]
    return "one of " + ", ".join(names[:-1]) + " and " + names[-1]


def _prefixes(items: Sequence[int]) -> str:
    return "prefix" if len(items) == 1 else "prefixes"


def prefix_lines(ctx: BisectReplyContext) -> tuple[str, ...]:
    """One row per metric of each prefix tested, in prefix order, then the review's rows for
    the whole series: "prefix 3/4  reclaim-sim.throughput  -61.20% [-66.1%, -55.0%]  ..."."""
    record = ctx.bisection
    n = record.patches
    rows: list[tuple[str, str, str, str, str]] = []
    for probe in sorted(record.probes, key=lambda p: p.prefix):
        for m in probe.metrics:
            rows.append((f"prefix {probe.prefix}/{n}", *_cells(m)))
    for m in record.review:
        rows.append((f"series {n}/{n}", *_cells(m)[:3], f"{m.words} (the review)"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)] if rows else []
    lines: list[str] = []
    for label, name, change, interval, words in rows:
        head = f"{label:<{widths[0]}}  {name:<{widths[1]}}  {change:>{widths[2]}} " \
               f"{interval:<{widths[3]}}  "
        if len(head) + len(words) <= TABLE_WIDTH - 2:  # the block is indented by two
            lines.append(head + words)
        else:  # the verdict words under the numbers, as the benchmark reply's verdict lines
            lines.append(head.rstrip())
            lines.extend(textwrap.wrap(words, TABLE_WIDTH - 2, initial_indent=" " * 4,
                                       subsequent_indent=" " * 6))
    return tuple(lines)


def _cells(m: MetricFinding) -> tuple[str, str, str, str]:
    low, high = _finite(m.ci_low_pct), _finite(m.ci_high_pct)
    interval = fmt_interval(low, high) if low is not None and high is not None else \
        "[unbounded]"
    change = _finite(m.change_pct)
    return m.metric, "?" if change is None else fmt_pct(change), interval, m.words


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _cost(ctx: BisectReplyContext) -> str:
    record = ctx.bisection
    steps = len(record.probes)
    noun = "step" if steps == 1 else "steps"
    each = (f", each the median of {ctx.iterations} runs of the benchmark"
            if ctx.iterations > 1 else "")
    return (f"It took {record.boots} {ctx.boots} in {steps} {noun} (the base against one "
            f"prefix each, warm-up pairs included{each}), at most {record.boots_per_step} "
            f"{ctx.boots} per step.")


def _setup(ctx: BisectReplyContext) -> list[Block]:
    if ctx.machine is None:
        return []
    record = ctx.bisection
    booted = ctx.machine.runner != "local"
    each = "boots of each kernel" if booted else "runs of each side"
    warmup = "pair" if ctx.warmup_pairs == 1 else "pairs"
    return [Fields((
        f"Test machine: {describe_machine(ctx.machine)}",
        f"Runs: per step, randomized pairs (AB or BA, seeded) after {ctx.warmup_pairs} "
        f"warm-up {warmup}, added until the sequential rule decided or {record.pairs_max} "
        f"pairs ({record.pairs_max} {each} at most).",
    ))]
