"""The reply to a reviewer's alternative (a compare run, docs/replies.md "Follow-ups: the
reviewer's alternative"): what their diff measured against the base and the series.

It answers the reviewer's message, not the series: "base -> series +1.4% [+0.6, +2.1];
base -> alternative +1.6% [+0.9, +2.4]; alternative vs series +0.2% [-0.5, +0.9], no
difference of 1% or more" for each main metric, the last clause being the verdict the
alternative against the series earned ("could not tell" when it earned none). When the diff
does not apply (a reply written only when the reviewer asked by mail), it says where it was
tried and the files and lines git could not apply it at. Pure: the reader is
workers/follow_up_replies/alternative.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.analysis.triples import ALTERNATIVE_SERIES, COMPARISONS
from bot.analysis.verdict import Comparison, Verdict
from bot.report.compose.benchmark_reply import describe_machine
from bot.report.compose.inputs import ParentMessage, ReplyOptions, SeriesInfo
from bot.report.compose.kinds import ALTERNATIVE
from bot.report.compose.message import ComposedReply, compose_reply
from bot.report.compose.results import BenchmarkResult, Machine
from bot.report.compose.text import Block, Fields, Preformatted, Prose, glue, indent


@dataclass(frozen=True)
class Placement:
    """Where the reviewer's diff went, or was tried."""

    where: str  # "in place of 2/3", "on top of the series"
    answers: int | None  # the patch it replaces; None on top of the series
    patches: int
    base: str  # the base commit the series was applied on
    commit: str = ""  # the alternative's commit


@dataclass(frozen=True)
class TriplesCampaign:
    """One benchmark's three comparisons (bot.analysis.triples keys "AB", "AC", "BC")."""

    label: str  # "reclaim-sim ops=3000000"
    comparisons: dict[str, BenchmarkResult]
    triples: int
    warmups: int
    k_min: int
    k_max: int
    alpha: float


@dataclass(frozen=True)
class AlternativeReplyContext:
    parent: ParentMessage  # the reviewer's message
    series: SeriesInfo
    placement: Placement
    outcome: str  # the run's outcome: the alternative against the series
    campaigns: tuple[TriplesCampaign, ...]
    machine: Machine
    reproduce: tuple[str, ...]


@dataclass(frozen=True)
class NotAppliedContext:
    parent: ParentMessage
    series: SeriesInfo
    placement: Placement
    tried: tuple[str, ...]  # "in place of 2/3", "on top of the series"
    failed_at: tuple[str, ...]  # "mm/vmscan.c:42"
    conflicts: tuple[str, ...]  # files
    failed_patch: str | None  # a patch of the series that does not apply after the diff


def compose_alternative_reply(ctx: AlternativeReplyContext,
                              options: ReplyOptions) -> ComposedReply:
    return _compose(ctx.parent, ctx.series, alternative_body(ctx), options)


def compose_alternative_not_applied(ctx: NotAppliedContext,
                                    options: ReplyOptions) -> ComposedReply:
    return _compose(ctx.parent, ctx.series, not_applied_body(ctx), options)


def _compose(parent: ParentMessage, series: SeriesInfo, blocks: list[Block],
             options: ReplyOptions) -> ComposedReply:
    return compose_reply(kind=ALTERNATIVE, parent=parent, author=parent.sender, options=options,
                         blocks=blocks, series_version_id=series.series_version_id,
                         anchor=series.anchor_msgid, version=series.version,
                         run_id=series.run_id)


def alternative_body(ctx: AlternativeReplyContext) -> list[Block]:
    place = ctx.placement
    blocks: list[Block] = [
        Prose(f"lorelab measured the diff in your message against {ctx.series.describe()}: "
              f"the series with your diff {place.where} (commit {place.commit[:12]}, on base "
              f"{place.base[:12]}), built and run beside the base and the series in "
              "randomized triples on the same machine."),
        Prose(f"Result, the alternative against the series: {ctx.outcome}."),
    ]
    for campaign in ctx.campaigns:
        series = campaign.comparisons[ALTERNATIVE_SERIES.key]
        for metric in series.metrics:
            if metric.secondary:
                continue
            parts = []
            for comparison in COMPARISONS:
                judged = next(m for m in campaign.comparisons[comparison.key].metrics
                              if m.name == metric.name).comparison
                parts.append(glue(f"{comparison.label} {_figures(judged)}"))
            blocks.append(Prose(f"{metric.name} ({campaign.label}): " + "; ".join(parts)
                                + f", {_clause(metric.comparison)}."))
    blocks.append(Fields((
        f"Test machine: {_machine(ctx.machine)}",
        *(f"Runs: {_runs(c)}" for c in ctx.campaigns),
    )))
    blocks.append(Prose("The figures are each change's estimate and its interval, in percent "
                        "of the first kernel named (the series, for the alternative against "
                        "it); the three comparisons of every metric were judged together as "
                        "one family (docs/statistics.md)."))
    if ctx.reproduce:
        blocks.append(Preformatted(("To reproduce without lorelab:", *indent(ctx.reproduce))))
    return blocks


def not_applied_body(ctx: NotAppliedContext) -> list[Block]:
    place = ctx.placement
    tried = " nor ".join(ctx.tried) or "anywhere"
    blocks: list[Block] = [
        Prose(f"You asked lorelab to test the diff in your message against "
              f"{ctx.series.describe()}. "
              + (f"The series does not apply with it {ctx.tried[-1]}" if ctx.failed_patch
                 and ctx.tried else f"It does not apply {tried}")
              + f", with the series on base {place.base[:12]}, so nothing was built or "
              "measured."),
    ]
    items = []
    if ctx.failed_patch and ctx.tried:  # the last placement tried took the diff itself
        items.append(f"Your diff applies {ctx.tried[-1]}, but patch {ctx.failed_patch} of the "
                     "series does not apply after it.")
    if ctx.failed_at:
        items.append(f"Does not apply at: {', '.join(ctx.failed_at)}")
    if ctx.conflicts:
        items.append(f"Conflicts in: {', '.join(ctx.conflicts)}")
    if items:
        blocks.append(Fields(tuple(items)))
    blocks.append(Prose("A diff against the tree before the patch it answers is tried in "
                        "place of that patch; one against the whole series applied, on top of "
                        "it."))
    return blocks


def _percent(value: float) -> str:
    return f"{value:+.1f}"


def _figures(c: Comparison) -> str:
    return f"{_percent(c.change_pct)}% [{_percent(c.ci_low_pct)}, {_percent(c.ci_high_pct)}]"


def _clause(c: Comparison) -> str:
    """The verdict of the alternative against the series, in words that say only what it
    earned."""
    delta = f"{100 * c.delta:g}%"
    if c.verdict is Verdict.NO_CHANGE:
        if c.identical:
            return f"no difference (identical in all {c.base.n + c.patched.n} runs)"
        return f"no difference of {delta} or more"
    if c.changed:
        better = "does better" if c.verdict is Verdict.IMPROVEMENT else "does worse"
        size = (f"by {delta} or more" if c.beyond_delta else f"by less than {delta}"
                if c.below_delta else f"perhaps by less than {delta}")
        return f"the alternative {better}, {size}"
    return "could not tell"


def _machine(machine: Machine) -> str:
    # describe_machine speaks of a pair of kernels; a compare run has three.
    return describe_machine(machine).replace("Both kernels' programs", "The three programs")


def _runs(campaign: TriplesCampaign) -> str:
    warmups = (f", after {campaign.warmups} warm-up triple{'s' if campaign.warmups != 1 else ''}"
               " not counted") if campaign.warmups else ""
    ended = ("every comparison of every main metric was decided"
             if campaign.triples < campaign.k_max else f"the most, {campaign.k_max}, had run")
    return (f"{campaign.label}: {campaign.triples} triples, each running the base, the series "
            f"and the alternative once in a random order (drawn from a recorded seed){warmups}; "
            f"triples were added from {campaign.k_min} on until {ended} (false-discovery "
            f"level {campaign.alpha:.3g} over the family).")
