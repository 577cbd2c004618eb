"""An author's claim beside what the bot measured (docs/replies.md, item 4; docs/claims.md).

`claims_beside_measurements` is the pure core: the claims found in a thread and lorelab's own
`Comparison` per metric name in, one reply line per (claim, metric) pair out, e.g.
"hackbench.time: author -2.9% over 10 runs a side (rank test: improvement); lorelab -0.4%
[-0.6%, +1.3%], no change of 1% or more; the author's figure is outside lorelab's interval".
`claim_from_judged` adapts a claim found by `bot.analysis.claims` into the plain `ClaimQuote`
the reply renders (the only place that knows that module's shapes). `claim_support` writes the
sentences that set the claim beside the bot's own results for the same benchmark: whether the
bot's interval supports the claimed change, contradicts it, or cannot tell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from bot.analysis.claims import JudgedClaim, split_body
from bot.analysis.claims.measurement import Measurement
from bot.analysis.verdict import Comparison, Verdict
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
        measured = ", ".join(sorted({bench.name for bench in benchmarks}))
        if not claim.benchmarks:
            # Nothing says which benchmark the numbers came from: never assume it was ours.
            return (f"The claim does not name its benchmark, so lorelab's results ({measured}) "
                    f"are not set beside it. From the message alone: {claim.summary}")
        return (
            f"lorelab did not run {' or '.join(claim.benchmarks)} (it ran {measured}), so its "
            f"results neither support nor contradict this claim. From the message alone: "
            f"{claim.summary}"
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


# --------------------------------------------------------------------------------------------
# The author's figure beside lorelab's, per metric


def claims_beside_measurements(
    claims: Sequence[JudgedClaim], measured: Mapping[str, Comparison]
) -> list[str]:
    """One line per claimed figure that lorelab measured too: what the author's numbers say
    (change, runs, spread, and the judgement of them), what lorelab measured (estimate,
    interval, verdict), and whether the author's figure lies inside lorelab's interval.

    A claim matches a lorelab metric by the metric's name ("hackbench.time" matches a measurement
    named "time" or "hackbench.time"), else by the benchmark the claim names when the claim
    carries one figure. Changes are put in the lorelab metric's own direction: +1.5% of ops/s is
    -1.48% of s/op. Claims and metrics that do not meet give no line.
    """
    lines = []
    for judged in claims:
        for figure, basis in _figures(judged):
            for name, comparison in measured.items():
                if not _same_metric(name, figure, judged):
                    continue
                claimed = _in_direction(figure, comparison)
                if claimed is None:
                    continue
                inside = comparison.ci_low_pct <= claimed <= comparison.ci_high_pct
                label = f" ({figure.label})" if figure.label else ""
                lines.append(
                    f"{name}{label}: author {claimed:+.1f}% ({basis}); lorelab "
                    f"{comparison.change_pct:+.1f}% "
                    f"{fmt_interval(comparison.ci_low_pct, comparison.ci_high_pct)}, "
                    f"{comparison.words}; the author's figure is "
                    f"{'inside' if inside else 'outside'} lorelab's interval"
                )
    return lines


def _figures(judged: JudgedClaim) -> list[tuple[_Figure, str]]:
    claim = judged.claim
    if claim.measurements:
        several = len(claim.measurements) > 1
        return [
            (
                _Figure(
                    m.metric,
                    change,
                    m.higher_is_better,
                    claim.benchmarks,
                    m.patched_label if several else "",
                ),
                _basis(m, verdict),
            )  # fmt: skip
            for m, (verdict, change) in zip(claim.measurements, _judgements(judged), strict=True)
            if change is not None
        ]
    change = claim.change
    if change is None or change.low_pct != change.high_pct or change.direction is None:
        return []
    signed = change.low_pct if change.direction == "improvement" else -abs(change.low_pct)
    runs = f"over {claim.runs} runs, " if claim.runs else ""
    return [(_Figure("", signed, True, claim.benchmarks), f"{runs}no spread or values given")]


class _Figure:
    """A claimed change and what it is a change of."""

    def __init__(
        self,
        metric: str,
        change_pct: float | None,
        higher: bool | None,
        benchmarks: Sequence[str],
        label: str = "",
    ) -> None:
        self.label = label  # which of a claim's several figures: "this patch 125"
        self.metric = metric
        self.change_pct = change_pct
        self.higher_is_better = higher
        self.benchmarks = tuple(benchmarks)


def _judgements(judged: JudgedClaim) -> list[tuple[str, float | None]]:
    """Each figure's verdict and change: for runs shown, the Hodges-Lehmann estimate the
    verdict rests on (a mean moved by two slow runs would misstate the author's own data)."""
    found = []
    for i, m in enumerate(judged.claim.measurements):
        j = judged.judgement.measurements[i] if i < len(judged.judgement.measurements) else None
        if j is None:
            found.append(("no-data", m.change_pct))
        elif m.samples_base and j.estimate_pct is not None:
            found.append((j.verdict, j.estimate_pct))
        else:
            found.append((j.verdict, m.change_pct))
    return found


def _basis(m: Measurement, verdict: str) -> str:
    """How the author's figure was measured, as the reply says it: runs, spread, judgement."""
    runs = f"over {m.n} runs a side" if m.n and m.n > 1 else "from one number a side"
    spread = ""
    if m.samples_base:
        spread = ", runs shown"
    elif m.has_spread:
        cvs = [c for c in (m.cv_base_pct, m.cv_patched_pct) if c is not None]
        spread = f", CV {max(cvs):.1f}%"
    elif m.n and m.n > 1:
        spread = ", no spread"
    if not m.n and m.has_spread:
        runs = "runs not given"
    judged = f"; their numbers: {verdict}" if verdict in _VERDICTS else ""
    return f"{runs}{spread}{judged}"


_VERDICTS = {"improvement", "regression", "increase", "decrease", "no change", "inconclusive"}


def _same_metric(name: str, figure: _Figure, judged: JudgedClaim) -> bool:
    words = _normal(name)
    metric = _normal(figure.metric)
    if metric and (metric == words or words.endswith("." + metric) or metric.endswith(words)):
        return True
    # A claim about the benchmark as a whole ("hackbench", one figure per column) matches the
    # benchmark's metric when its figures are not named after other metrics of it.
    bench = name.split(".", 1)[0].lower()
    if bench not in {b.lower() for b in figure.benchmarks}:
        return False
    return len(judged.claim.measurements) <= 1 or judged.claim.kind == "table"


def _normal(name: str) -> str:
    return re.sub(r"[\s_-]+", "_", name.strip().lower())


def _in_direction(figure: _Figure, comparison: Comparison) -> float | None:
    """The claimed change as a change of lorelab's metric: the reciprocal when one is a rate
    and the other a time."""
    change = figure.change_pct
    if change is None or change <= -100:
        return None
    if figure.higher_is_better is None or figure.higher_is_better == comparison.higher_is_better:
        return change
    return 100.0 * (1.0 / (1.0 + change / 100.0) - 1.0)
