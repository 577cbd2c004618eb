"""The decision rule: did the patch change a metric? (docs/statistics.md, steps 1-8).

Three entry points, all pure:
- `compare` judges a fixed number of runs at a fixed alpha (tables posted by authors, or a
  campaign that does not stop early).
- `decide_after_pair` is called by the bench stage after every interleaved A/B pair; it uses the
  calibrated per-look alpha' and says whether to stop (`Comparison.stopped`).
- `judge_metrics` applies Benjamini-Hochberg across the metrics of one run before any of them is
  called changed.

The verdict never rests on the mean or median change (printed for readers); it rests on the
Mann-Whitney p and the Hodges-Lehmann interval of the log ratio, against the smallest change of
interest delta, in the metric's direction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np

from bot.analysis.calibration import sequential_alpha
from bot.analysis.fdr import benjamini_hochberg
from bot.analysis.ranks import ShiftEstimate, log_to_percent, log_values, shift_estimate
from bot.analysis.robust import SideSummary, TailFinding, summarize_side, tail_finding

DEFAULT_DELTA = 0.01
DEFAULT_ALPHA = 0.05
DEFAULT_K_MIN = 5
DEFAULT_K_MAX = 30


class Verdict(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no change"  # the interval lies inside +-delta
    RUN_ANOTHER_PAIR = "run another pair"  # sequential only: undecided, pairs remain
    INCONCLUSIVE = "inconclusive"  # undecided and no pairs remain


@dataclass(frozen=True)
class Comparison:
    """The judgement of one metric, base (A) against patched (B), with everything to render it.

    Percent changes are B against A in the metric's own unit (+3.3%: B's values are 3.3% larger),
    whatever the direction; the verdict words carry the direction.
    """

    verdict: Verdict
    # For REGRESSION/IMPROVEMENT: True when the whole interval lies beyond +-delta ("(>= 1%)"),
    # False when it does not ("(may be < 1%)"); None for other verdicts.
    beyond_delta: bool | None
    delta: float
    higher_is_better: bool
    alpha: float  # the level p was held to: alpha' per look, or the fixed alpha
    shift: ShiftEstimate  # log scale
    mean_change_pct: float  # 100 (mean B / mean A - 1): for readers only
    median_change_pct: float  # 100 (median B / median A - 1): for readers only
    base: SideSummary
    patched: SideSummary
    tail: TailFinding
    pairs: int  # min(n A, n B)
    k_min: int | None = None  # None: fixed-n comparison
    k_max: int | None = None
    fdr_demoted: bool = False  # p <= alpha alone, but not after Benjamini-Hochberg across metrics

    @property
    def change_pct(self) -> float:
        """Hodges-Lehmann estimate of the change, in percent."""
        return log_to_percent(self.shift.estimate)

    @property
    def ci_low_pct(self) -> float:
        return log_to_percent(self.shift.ci_low)

    @property
    def ci_high_pct(self) -> float:
        return log_to_percent(self.shift.ci_high)

    @property
    def pvalue(self) -> float:
        return self.shift.pvalue

    @property
    def sequential(self) -> bool:
        return self.k_max is not None

    @property
    def changed(self) -> bool:
        return self.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT)

    @property
    def stopped(self) -> bool:
        """False only when the bench stage should run another pair."""
        return self.verdict is not Verdict.RUN_ANOTHER_PAIR

    @property
    def early_stop(self) -> bool:
        """A sequential comparison that found a change before k_max: its estimate runs high
        (at a true +1.5%, stopped runs reported about +2.2% in simulation)."""
        return self.sequential and self.changed and self.pairs < (self.k_max or 0)

    @property
    def words(self) -> str:
        """The verdict as the reply prints it, e.g. "improvement (may be < 1%)"."""
        label = _percent_label(self.delta)
        if self.changed:
            qualifier = f">= {label}" if self.beyond_delta else f"may be < {label}"
            return f"{self.verdict.value} ({qualifier})"
        if self.verdict is Verdict.NO_CHANGE:
            return f"no change of {label} or more"
        return self.verdict.value

    @property
    def findings(self) -> tuple[str, ...]:
        """Separate findings beside the verdict: outliers on the worse side, a tail change."""
        return self.tail.describe()

    def summary(self) -> str:
        """Verdict words and findings, e.g. "inconclusive; 1 outlier in B (93.414)"."""
        return "; ".join((self.words, *self.findings))

    def describe(self) -> str:
        """One line, e.g. "+3.31% [-0.41%, +6.63%] p=0.089 inconclusive"."""
        line = (
            f"{_format_pct(self.change_pct)} "
            f"[{_format_pct(self.ci_low_pct)}, {_format_pct(self.ci_high_pct)}] "
            f"p={_format_p(self.pvalue)} {self.words}"
        )
        if self.early_stop:
            line += " (early stop: estimate inflated)"
        return line

    def notes(self) -> tuple[str, ...]:
        """Sentences that explain the verdict to a reader of the reply."""
        notes = []
        level = f"{100 * self.shift.confidence:g}%"
        if self.verdict is Verdict.INCONCLUSIVE:
            notes.append(f"{self._ruled_out()} ({level} interval); more runs would narrow it.")
        elif self.verdict is Verdict.NO_CHANGE:
            notes.append(
                f"The data rule out a change of {_percent_label(self.delta)} or more "
                f"({level} interval {self._interval_text()})."
            )
        elif self.verdict is Verdict.RUN_ANOTHER_PAIR:
            notes.append(f"Undecided after {self.pairs} of up to {self.k_max} pairs.")
        if self.fdr_demoted:
            notes.append(
                f"p={_format_p(self.pvalue)} is below {self.alpha:.3g} on its own, but not after "
                "controlling the false discovery rate across this run's metrics."
            )
        if self.early_stop:
            notes.append(
                f"Stopped early, after {self.pairs} of up to {self.k_max} pairs: an early stop "
                "overstates the size of the change, so read the estimate as an upper figure."
            )
        return tuple(notes)

    def _interval_text(self) -> str:
        return f"[{_format_pct(self.ci_low_pct)}, {_format_pct(self.ci_high_pct)}]"

    def _ruled_out(self) -> str:
        low, high = self.shift.ci_low, self.shift.ci_high
        if math.isinf(low) and math.isinf(high):
            return "Too few runs to rule out any change"
        parts = []
        if not math.isinf(low):
            parts.append(f"below {_format_pct(self.ci_low_pct)}")
        if not math.isinf(high):
            parts.append(f"above {_format_pct(self.ci_high_pct)}")
        return "The data rule out a change " + " or ".join(parts)


def compare(
    base: Sequence[float],
    patched: Sequence[float],
    *,
    higher_is_better: bool,
    delta: float = DEFAULT_DELTA,
    alpha: float = DEFAULT_ALPHA,
    base_positions: Sequence[int] | None = None,
    patched_positions: Sequence[int] | None = None,
) -> Comparison:
    """Judge a fixed set of runs at level `alpha`, with no correction for repeated looks.

    base and patched are the per-boot values (> 0) in run order; positions, when given, are each
    run's slot in the session's run order and are kept with the outliers.
    """
    return _judge(
        base,
        patched,
        higher_is_better=higher_is_better,
        delta=delta,
        alpha=alpha,
        k_min=None,
        k_max=None,
        base_positions=base_positions,
        patched_positions=patched_positions,
    )


def decide_after_pair(
    base: Sequence[float],
    patched: Sequence[float],
    *,
    higher_is_better: bool,
    delta: float = DEFAULT_DELTA,
    k_min: int = DEFAULT_K_MIN,
    k_max: int = DEFAULT_K_MAX,
    base_positions: Sequence[int] | None = None,
    patched_positions: Sequence[int] | None = None,
) -> Comparison:
    """The sequential rule, after each pair: RUN_ANOTHER_PAIR until k_min pairs, then stop at the
    first look where p <= alpha' (a change) or the interval lies inside +-delta (no change);
    INCONCLUSIVE once k_max pairs have run without either. alpha' comes from
    `bot.analysis.calibration.sequential_alpha(k_min, k_max)`.
    """
    return _judge(
        base,
        patched,
        higher_is_better=higher_is_better,
        delta=delta,
        alpha=sequential_alpha(k_min, k_max),
        k_min=k_min,
        k_max=k_max,
        base_positions=base_positions,
        patched_positions=patched_positions,
    )


def judge_metrics(
    comparisons: Mapping[str, Comparison], q: float | None = None
) -> dict[str, Comparison]:
    """Control the false discovery rate across the metrics of one run (Benjamini-Hochberg).

    q defaults to the comparisons' own alpha, so that one metric alone is judged exactly as
    before. A metric whose p passes its own alpha but not the procedure is re-decided as if
    not significant (no change, run another pair or inconclusive) and marked `fdr_demoted`.
    """
    if not comparisons:
        return {}
    names = list(comparisons)
    if q is None:
        levels = {comparisons[name].alpha for name in names}
        if len(levels) != 1:
            raise ValueError("comparisons were judged at different alphas; pass q")
        q = levels.pop()
    keep = benjamini_hochberg([comparisons[name].pvalue for name in names], q=q)
    judged = {}
    for name, passes in zip(names, keep, strict=True):
        comparison = comparisons[name]
        if comparison.changed and not passes:
            verdict, beyond = _decide(
                comparison.shift,
                significant=False,
                delta=comparison.delta,
                higher_is_better=comparison.higher_is_better,
                pairs=comparison.pairs,
                k_min=comparison.k_min,
                k_max=comparison.k_max,
            )
            comparison = replace(comparison, verdict=verdict, beyond_delta=beyond, fdr_demoted=True)
        judged[name] = comparison
    return judged


def _judge(
    base: Sequence[float],
    patched: Sequence[float],
    *,
    higher_is_better: bool,
    delta: float,
    alpha: float,
    k_min: int | None,
    k_max: int | None,
    base_positions: Sequence[int] | None,
    patched_positions: Sequence[int] | None,
) -> Comparison:
    if delta <= 0:
        raise ValueError(f"delta must be > 0, got {delta}")
    x = log_values(base)
    y = log_values(patched)
    shift = shift_estimate(x, y, alpha)
    pairs = min(x.size, y.size)
    verdict, beyond = _decide(
        shift,
        significant=shift.pvalue <= alpha,
        delta=delta,
        higher_is_better=higher_is_better,
        pairs=pairs,
        k_min=k_min,
        k_max=k_max,
    )
    base_summary = summarize_side(base, base_positions)
    patched_summary = summarize_side(patched, patched_positions)
    base_raw = np.asarray(base, dtype=float)
    patched_raw = np.asarray(patched, dtype=float)
    return Comparison(
        verdict=verdict,
        beyond_delta=beyond,
        delta=delta,
        higher_is_better=higher_is_better,
        alpha=alpha,
        shift=shift,
        mean_change_pct=100.0 * (patched_raw.mean() / base_raw.mean() - 1.0),
        median_change_pct=100.0 * (np.median(patched_raw) / np.median(base_raw) - 1.0),
        base=base_summary,
        patched=patched_summary,
        tail=tail_finding(base_summary, patched_summary, higher_is_better=higher_is_better),
        pairs=pairs,
        k_min=k_min,
        k_max=k_max,
    )


def _decide(
    shift: ShiftEstimate,
    *,
    significant: bool,
    delta: float,
    higher_is_better: bool,
    pairs: int,
    k_min: int | None,
    k_max: int | None,
) -> tuple[Verdict, bool | None]:
    if k_min is not None and pairs < k_min:
        return Verdict.RUN_ANOTHER_PAIR, None
    # +-ln(1 + delta) on the log scale: symmetric, so sec/op and ops/sec get the same words.
    bound = math.log1p(delta)
    if significant:
        # The direction of the test statistic (p <= alpha implies U != mn / 2).
        patched_larger = shift.u > shift.m * shift.n / 2
        better = patched_larger == higher_is_better
        beyond = shift.ci_low >= bound if patched_larger else shift.ci_high <= -bound
        return (Verdict.IMPROVEMENT if better else Verdict.REGRESSION), beyond
    if -bound <= shift.ci_low and shift.ci_high <= bound:
        return Verdict.NO_CHANGE, None
    if k_max is not None and pairs < k_max:
        return Verdict.RUN_ANOTHER_PAIR, None
    return Verdict.INCONCLUSIVE, None


def _percent_label(delta: float) -> str:
    return f"{100 * delta:g}%"


def _format_pct(value: float) -> str:
    if math.isinf(value):
        return "+inf%" if value > 0 else "-inf%"
    return f"{value:+.2f}%"


def _format_p(pvalue: float) -> str:
    return f"{pvalue:.3f}" if pvalue >= 0.001 else f"{pvalue:.1e}"
