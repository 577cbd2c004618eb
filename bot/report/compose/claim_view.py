"""An author's claim beside what the bot measured (docs/replies.md, item 4).

`claim_from_judged` adapts a claim found by `bot.analysis.claims` into the plain `ClaimQuote`
the reply renders (the only place that knows that module's shapes). `claim_support` writes the
sentences that set the claim beside the bot's own results for the same benchmark: whether the
bot's interval supports the claimed change, contradicts it, or cannot tell.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.analysis.claims import JudgedClaim, split_body
from bot.analysis.verdict import Verdict
from bot.report.compose.results import BenchmarkResult, ClaimQuote, MetricResult
from bot.report.compose.tables import fmt_interval, fmt_pct, varying_parameters

# How far above the claimed numbers a stated run count ("Average result of 18 test runs:") is
# still quoted with everything between, so that the quote reads as the author wrote it.
RUNS_LINE_REACH = 3


def claim_from_judged(judged: JudgedClaim, body: str | None = None) -> ClaimQuote:
    """The quote and judgement of one claim found in a thread message.

    With the message `body` (the text the claim's line numbers refer to), the lines between the
    stated run count and the numbers are quoted as written; without it a "[...]" stands for them.
    """
    claim, judgement = judged.claim, judged.judgement
    quoted = [line.text for line in claim.lines]
    runs_line = claim.runs_line
    if runs_line is not None and runs_line.number < claim.first_line:
        gap = claim.first_line - runs_line.number
        if gap == 1:
            quoted.insert(0, runs_line.text)
        elif body is not None and gap <= RUNS_LINE_REACH:
            by_number = {line.number: line.text for line in split_body(body)}
            between = [by_number.get(n, "") for n in range(runs_line.number, claim.first_line)]
            quoted[:0] = between
        else:
            quoted[:0] = [runs_line.text, "[...]"]
    pair = claim.before_after
    change = pair.computed_pct if pair is not None else None
    higher = pair.higher_is_better if pair is not None else None
    stated = claim.change
    if (
        pair is None
        and stated is not None
        and stated.direction
        and (stated.low_pct == stated.high_pct)
    ):
        # "improved 17%" names no unit: read it as +17% of a higher-is-better quantity, which
        # claim_support turns into the measured metric's own unit.
        change = stated.low_pct if stated.direction == "improvement" else -stated.low_pct
        higher = True
    return ClaimQuote(
        author=claim.speaker.name or claim.speaker.email or "The author",
        lines=tuple(quoted),
        summary=judgement.summary,
        benchmarks=tuple(claim.benchmarks),
        change_pct=change,
        unit=pair.unit if pair is not None else None,
        higher_is_better=higher,
        runs=claim.runs,
    )


def matching_metrics(
    claim: ClaimQuote, benchmarks: Sequence[BenchmarkResult]
) -> list[tuple[BenchmarkResult, MetricResult]]:
    """The bot's primary metrics of the benchmarks the claim names."""
    names = {name.lower() for name in claim.benchmarks}
    return [
        (bench, metric)
        for bench in benchmarks
        if bench.name.lower() in names
        for metric in bench.metrics
        if not metric.secondary
    ]


def claim_support(claim: ClaimQuote, benchmarks: Sequence[BenchmarkResult]) -> str:
    """One paragraph: what the bot's data says about the claim, then what the claim's own
    numbers can support."""
    matches = matching_metrics(claim, benchmarks)
    if not matches:
        named = " or ".join(claim.benchmarks) if claim.benchmarks else "the claim's benchmark"
        measured = sorted({bench.name for bench in benchmarks})
        return (
            f"lorelab did not run {named} (it ran {', '.join(measured)}), so its results "
            f"neither support nor contradict this claim. From the message alone: {claim.summary}"
        )
    varying = varying_parameters(benchmarks)
    sentences = []
    for bench, metric in matches:
        sentences.append(_weigh(claim, bench.metric_label(metric, varying), metric))
    return " ".join([*sentences, f"From the message alone: {claim.summary}"])


def _claimed_in_metric_unit(claim: ClaimQuote, metric: MetricResult) -> float | None:
    """The claimed change in the metric's unit: +1.5% in ops/s is -1.48% in s/op."""
    if claim.change_pct is None:
        return None
    inverse = claim.higher_is_better is not None and (
        claim.higher_is_better != metric.comparison.higher_is_better
    )
    if not inverse:
        return claim.change_pct
    return 100.0 * (1.0 / (1.0 + claim.change_pct / 100.0) - 1.0)


def _weigh(claim: ClaimQuote, label: str, metric: MetricResult) -> str:
    c = metric.comparison
    measured = (
        f"lorelab measured {label} {fmt_pct(c.change_pct)} "
        f"{fmt_interval(c.ci_low_pct, c.ci_high_pct)} ({metric.words})"
    )
    claimed = _claimed_in_metric_unit(claim, metric)
    if claimed is None:
        return f"{measured}; the claim states no number to set beside it."
    inside = c.ci_low_pct <= claimed <= c.ci_high_pct
    said = f"the claimed {fmt_pct(claimed)}"
    if c.changed:
        if (claimed > 0) != (c.change_pct > 0):
            return f"{measured}: this contradicts {said}."
        if inside:
            return f"{measured}: this supports {said}."
        return f"{measured}: the direction agrees, but the interval excludes {said}."
    if c.verdict is Verdict.NO_CHANGE:
        if inside:
            return f"{measured}: {said} is inside the interval but below the change of interest."
        return f"{measured}: this does not support {said}."
    if inside:
        return f"{measured}: this cannot confirm {said}; the interval also includes no change."
    return f"{measured}: the interval excludes {said}."
