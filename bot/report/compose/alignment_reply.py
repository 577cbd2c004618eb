"""The alignment reply: whether the change a review found survives forced function alignment.

A follow-up of the review (run kind "align", bot/runs/alignment.py), one more reply on the
thread, in this order (docs/replies.md, "Follow-ups: is it alignment"):
1. what was done: the series' base and patched trees built again with every function aligned,
   and how (the kernel's option, or KCFLAGS when the tree has none);
2. "Result:": survives forced alignment, does not (likely a code-alignment effect), or could
   not tell;
3. per metric the review found changed: the review's figure and the aligned kernels' figure,
   each with its interval and verdict words, then the verdict sentence;
4. the machine and the runs;
5. how to reproduce, with the alignment option;
6. the series page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bot.report.compose import kinds
from bot.report.compose.benchmark_reply import describe_machine, describe_runs
from bot.report.compose.inputs import ParentMessage, ReplyOptions, SeriesInfo, TreeInfo
from bot.report.compose.message import ComposedReply, compose_reply
from bot.report.compose.results import Machine, RunPolicy
from bot.report.compose.tables import fmt_interval, fmt_pct
from bot.report.compose.text import Block, Fields, Preformatted, Prose, glue, indent
from bot.runs.alignment import AlignmentVerdict, MetricAlignment, overall
from bot.runs.findings import Headline

KIND = kinds.ALIGNMENT


@dataclass(frozen=True)
class AlignmentReplyContext:
    parent: ParentMessage
    series: SeriesInfo
    tree: TreeInfo
    # How both kernels were aligned, as the build recorded it (workers/kernel/alignment.py):
    # "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y" or "KCFLAGS=-falign-functions=64".
    alignment: str
    metrics: tuple[MetricAlignment, ...]  # the review's changed metrics, judged
    machine: Machine
    policy: RunPolicy  # how the align run's (first) campaign was run and judged
    interval_label: str = "95% interval"
    reproduce: tuple[str, ...] = ()


def compose_alignment_reply(ctx: AlignmentReplyContext, options: ReplyOptions) -> ComposedReply:
    return compose_reply(
        kind=KIND,
        parent=ctx.parent,
        author=ctx.parent.sender,
        options=options,
        blocks=alignment_body(ctx),
        series_version_id=ctx.series.series_version_id,
        version=ctx.series.version,
        run_id=ctx.series.run_id,
        anchor=ctx.series.anchor_msgid or ctx.parent.msgid,
    )


# The result in the reply's words, by the verdict every metric shares.
RESULT_WORDS = {
    AlignmentVerdict.SURVIVES: "the change survives forced alignment: the aligned kernels show "
                               "it too.",
    AlignmentVerdict.ALIGNMENT_EFFECT: "the change does not survive forced alignment: likely a "
                                       "code-alignment effect.",
    AlignmentVerdict.COULD_NOT_TELL: "could not tell whether the change survives forced "
                                     "alignment (each metric below says why).",
}


def alignment_body(ctx: AlignmentReplyContext) -> list[Block]:
    shared = overall(ctx.metrics)
    result = RESULT_WORDS[shared] if shared is not None else (
        "the metrics differ; each is judged below.")
    blocks: list[Block] = [_done(ctx), Prose(f"Result: {result}")]
    for judged in ctx.metrics:
        blocks.append(Preformatted(metric_lines(judged)))
        blocks.append(Prose(f"{judged.review.metric}: {verdict_sentence(judged)}"))
    blocks.append(Prose(
        "\"review\" is the review's kernels (the compiler's own function alignment), "
        "\"aligned\" the same trees with forced alignment. Each change is patched against "
        f"base in the metric's own unit (+ means larger), with its {ctx.interval_label}; "
        "both were judged by the same sequential rule."))
    blocks.append(_setup(ctx))
    if ctx.reproduce:
        blocks.append(Prose("To reproduce without lorelab (base and patched, each built this "
                            "way):"))
        blocks.append(Preformatted(indent(ctx.reproduce)))
    if ctx.series.status_url:
        blocks.append(Prose(f"Series page: {ctx.series.status_url}"))
    return blocks


def _done(ctx: AlignmentReplyContext) -> Prose:
    tree = ctx.tree
    return Prose(
        f"Its review reported a change for {ctx.series.describe()} applied to {tree.tree} "
        f"{tree.branch} at {glue('base ' + tree.short_base)}. A change of code layout alone "
        "can move a benchmark by several percent, so lorelab built the base and the patched "
        f"tree again with {alignment_words(ctx.alignment)}, and ran the same benchmarks on "
        "them.")


def alignment_words(shown: str) -> str:
    """How the kernels were aligned, in words, naming the option or the flags exactly."""
    size = re.search(r"(\d+)B?=y$|=(\d+)$", shown)
    nbytes = next((g for g in size.groups() if g), "") if size else ""
    if shown.startswith("CONFIG_"):
        return (f"every function aligned to {nbytes} bytes ({shown}, and CONFIG_EXPERT=y, "
                "which it depends on)")
    return (f"every C function aligned to {nbytes} bytes ({shown}: this tree has no "
            "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B option)")


def metric_lines(judged: MetricAlignment) -> tuple[str, ...]:
    """The metric, then the review's figure and the aligned kernels' figure, e.g.
    "  review   -38.20% [-45.10%, -30.20%]  regression (>= 1%)"."""
    rows = [("review", judged.review)]
    if judged.aligned is not None:
        rows.append(("aligned", judged.aligned))
    width = max(len(label) for label, _ in rows)
    figures = [(_pct(h.change_pct), _interval(h)) for _, h in rows]
    pct_width = max(len(p) for p, _ in figures)
    ci_width = max(len(c) for _, c in figures)
    lines = [f"{judged.review.metric} ({judged.review.benchmark})"]
    for (label, h), (pct, ci) in zip(rows, figures, strict=True):
        lines.append(f"  {label:<{width}}  {pct:>{pct_width}} {ci:<{ci_width}}  {h.words}")
    if judged.aligned is None:
        lines.append("  aligned: not measured")
    return tuple(line.rstrip() for line in lines)


def verdict_sentence(judged: MetricAlignment) -> str:
    """E.g. "likely a code-alignment effect: the aligned kernels show no change of 1% or
    more." or "survives forced alignment: the aligned kernels show the same improvement."."""
    if judged.verdict is AlignmentVerdict.ALIGNMENT_EFFECT:
        head = f"does not survive forced alignment, {judged.verdict.value}"
    elif judged.verdict is AlignmentVerdict.COULD_NOT_TELL:
        head = "could not tell whether it survives forced alignment"
    else:
        head = judged.verdict.value
    return f"{head}: {judged.why}."


def _setup(ctx: AlignmentReplyContext) -> Fields:
    return Fields((
        f"Test machine: {describe_machine(ctx.machine)}",
        f"Kernels: the review's base and patched trees, {alignment_words(ctx.alignment)}.",
        f"Runs: {describe_runs(ctx.policy, booted=ctx.machine.runner != 'local')}",
    ))


def _pct(value: float) -> str:
    return fmt_pct(value) if math.isfinite(value) else "?"


def _interval(h: Headline) -> str:
    low, high = h.ci_pct
    return fmt_interval(low, high) if math.isfinite(low) and math.isfinite(high) \
        else "[unbounded]"
