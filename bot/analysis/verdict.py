"""The decision rule: did the patch change a metric? (docs/statistics.md, steps 1-8).

`Comparison` is one metric's judgement with everything a reply needs to render it. Entry points,
all pure:
- `compare` judges two unpaired samples at a fixed alpha (tables posted by authors): the
  Mann-Whitney p and the Hodges-Lehmann interval of the log ratio.
- `decide_after_pair` judges one metric's pairs at one look of a sequential campaign: the
  signed-rank p and Walsh-average interval of the within-pair log ratios, at the calibrated
  per-look levels. A campaign's metrics are judged together, as one family, by
  `bot.analysis.family`, which builds its comparisons with `paired_comparison`.
- `judge_metrics` applies Benjamini-Hochberg across fixed-n comparisons of one run.

The verdict never rests on the mean or median change (printed for readers), always against the
smallest change of interest delta, in the metric's direction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np

from bot.analysis.calibration import sequential_alpha
from bot.analysis.early_stop import conditional_estimate
from bot.analysis.fdr import benjamini_hochberg, family_weights, weighted_step_up
from bot.analysis.ranks import ShiftEstimate, log_to_percent, log_values, shift_estimate
from bot.analysis.robust import SideSummary, TailFinding, summarize_side, tail_finding
from bot.analysis.signed_rank import PairedLook, paired_look

DEFAULT_DELTA = 0.01
DEFAULT_ALPHA = 0.05
DEFAULT_K_MIN = 5
DEFAULT_K_MAX = 30
FAMILY_ALPHA = 0.05  # the chance of any false "changed" in a whole reply


class Verdict(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no change"  # shown not to change by delta or more, or identical in every run
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
    # "log": the shift is of ln(value), shown in percent; "absolute": of the value itself, in
    # the metric's unit (a count that is zero in some runs cannot be a ratio).
    scale: str = "log"
    identical: bool = False  # every run of both kernels gave the same value
    rejected: tuple[str, ...] = ()  # values left out, each with its reason ("nan in B, pair 3")
    derived_from: str | None = None  # judged with this metric: an exact reciprocal or multiple
    family_size: int = 1  # metrics judged together (one family: the reply's false-alarm rate)
    # An early-stopped change's estimate with the early-stop bias reduced (log or absolute
    # scale like `shift`); None when not early-stopped (`estimate_method` says how).
    adjusted_estimate: float | None = None

    @property
    def change_pct(self) -> float:
        """The estimate of the change, in percent (the Hodges-Lehmann estimate, or the
        bias-reduced one after an early stop). On the absolute scale: against the base median
        (+inf when that is 0)."""
        return self._percent(self.estimate)

    @property
    def ci_low_pct(self) -> float:
        return self._percent(self.shift.ci_low)

    @property
    def ci_high_pct(self) -> float:
        return self._percent(self.shift.ci_high)

    @property
    def estimate(self) -> float:
        """The reported shift on the comparison's scale: bias-reduced after an early stop."""
        return self.shift.estimate if self.adjusted_estimate is None else self.adjusted_estimate

    @property
    def estimate_method(self) -> str:
        """How the reported estimate was made, for the reply's method section."""
        kind = "Walsh averages of the pairs" if self.shift.paired else "all pairwise differences"
        if self.adjusted_estimate is not None:
            return (f"Hodges-Lehmann ({kind}), corrected for the early stop by the conditional "
                    "bias of the stopping rule")
        return f"Hodges-Lehmann ({kind})"

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
        """A sequential comparison that found a change before k_max: its raw estimate runs high,
        so `change_pct` reports the bias-reduced one."""
        return self.sequential and self.changed and self.pairs < (self.k_max or 0)

    @property
    def patched_larger(self) -> bool:
        """The test's side: B's values are larger (for increase/decrease words)."""
        return self.shift.larger

    @property
    def interval_level(self) -> float:
        """The interval's nominal coverage, to print: 0.95 for a sequential comparison (its
        per-look level alpha' makes it hold over all looks at once), else 1 - alpha."""
        return 1.0 - FAMILY_ALPHA if self.sequential else 1.0 - self.alpha

    @property
    def interval_label(self) -> str:
        """E.g. "95% interval, adjusted for the sequential looks"."""
        label = f"{100 * self.interval_level:g}% interval"
        return label + ", adjusted for the sequential looks" if self.sequential else label

    @property
    def delta_pct(self) -> float:
        """The smallest change of interest, in percent (1.0 for 1%)."""
        return 100.0 * self.delta

    @property
    def below_delta(self) -> bool:
        """A real change whose whole interval lies inside +-delta: smaller than delta."""
        return (self.changed and self.scale == "log"
                and strictly_inside(self.shift.ci_low, self.shift.ci_high, self.delta))

    @property
    def verdict_word(self) -> str:
        """One word per outcome: improvement, regression, no change, inconclusive (or "run
        another pair" inside the pair loop)."""
        return self.verdict.value

    @property
    def words(self) -> str:
        """The verdict as the reply prints it, e.g. "improvement (>= 1%)", "no change of
        1% or more", "could not tell: between -3.10% and +4.20%"."""
        label = _percent_label(self.delta)
        if self.changed:
            if self.scale == "absolute":
                return f"{self.verdict.value} (absolute scale: zero in some runs)"
            if self.below_delta:
                qualifier = f"real, but below the {label} of interest"
            elif self.beyond_delta:
                qualifier = f">= {label}"
            else:
                qualifier = f"may be < {label}"
            return f"{self.verdict.value} ({qualifier})"
        if self.verdict is Verdict.NO_CHANGE:
            if self.identical:
                return f"no change (identical in all {self.base.n + self.patched.n} runs)"
            return f"no change of {label} or more"
        if self.verdict is Verdict.INCONCLUSIVE:
            return f"could not tell: between {self._interval_bounds()}"
        return self.verdict.value

    @property
    def findings(self) -> tuple[str, ...]:
        """Separate findings beside the verdict: outliers on the worse side, a tail change."""
        return self.tail.describe()

    def summary(self) -> str:
        """Verdict words and findings, e.g. "could not tell: ...; 1 outlier in B (93.414)"."""
        return "; ".join((self.words, *self.findings))

    def describe(self) -> str:
        """One line, e.g. "+3.31% [-0.41%, +6.63%] p=0.089 could not tell: ..."."""
        if self.identical:
            return self.words
        return (f"{self._format_change(self.estimate)} "
                f"[{self._format_change(self.shift.ci_low)}, "
                f"{self._format_change(self.shift.ci_high)}] "
                f"p={_format_p(self.pvalue)} {self.words}")

    def notes(self) -> tuple[str, ...]:
        """Sentences that explain the verdict to a reader of the reply."""
        notes = []
        label = _percent_label(self.delta)
        if self.verdict is Verdict.INCONCLUSIVE:
            notes.append(f"{self._ruled_out()} ({self.interval_label}); more runs would "
                         "narrow it.")
        elif self.verdict is Verdict.NO_CHANGE and not self.identical:
            notes.append(f"The data rule out a change of {label} or more "
                         f"({self.interval_label} {self._interval_text()}).")
        elif self.verdict is Verdict.RUN_ANOTHER_PAIR:
            notes.append(f"Undecided after {self.pairs} of up to {self.k_max} pairs.")
        if self.below_delta:
            notes.append(f"{self._format_change(self.estimate)} {self._interval_text()}: real "
                         f"but below the {label} of interest.")
        if self.scale == "absolute":
            notes.append("Zero in some runs, so compared on an absolute scale (in the "
                         "metric's unit), not as a ratio.")
        if self.derived_from is not None:
            notes.append(f"Judged with {self.derived_from}, of which it is an exact reciprocal "
                         "or multiple: not counted twice.")
        if self.rejected:
            notes.append("Left out: " + "; ".join(self.rejected) + ".")
        if self.fdr_demoted:
            notes.append(
                f"p={_format_p(self.pvalue)} is below {self.alpha:.3g} on its own, but not "
                f"after controlling the false alarms across this run's {self.family_size} "
                "metrics (false discovery rate)."
            )
        if self.early_stop:
            raw = self._format_change(self.shift.estimate)
            stopped = f"Stopped early, after {self.pairs} of up to {self.k_max} pairs: "
            if raw == self._format_change(self.estimate):
                # A change clear enough stops where it would whatever its size: nothing to
                # correct, and "corrected (uncorrected the same)" would read as a slip.
                notes.append(stopped + "an early stop can overstate a change, but the "
                             "correction for it leaves this estimate as it is.")
            else:
                notes.append(stopped + "an early stop overstates a change, so the estimate "
                             f"is corrected for it (uncorrected {raw}).")
        return tuple(notes)

    def _percent(self, shift: float) -> float:
        if self.scale == "log":
            return log_to_percent(shift)
        if self.base.median > 0:
            return 100.0 * shift / self.base.median
        return math.copysign(math.inf, shift) if shift else 0.0

    def _format_change(self, shift: float) -> str:
        if self.scale == "log":
            return _format_pct(log_to_percent(shift))
        if math.isinf(shift):
            return "+inf" if shift > 0 else "-inf"
        return f"{shift:+.6g}"

    def _interval_bounds(self) -> str:
        return (f"{self._format_change(self.shift.ci_low)} and "
                f"{self._format_change(self.shift.ci_high)}")

    def _interval_text(self) -> str:
        return (f"[{self._format_change(self.shift.ci_low)}, "
                f"{self._format_change(self.shift.ci_high)}]")

    def _ruled_out(self) -> str:
        low, high = self.shift.ci_low, self.shift.ci_high
        if math.isinf(low) and math.isinf(high):
            return "Too few runs to rule out any change"
        parts = []
        if not math.isinf(low):
            parts.append(f"below {self._format_change(low)}")
        if not math.isinf(high):
            parts.append(f"above {self._format_change(high)}")
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
    """Judge two unpaired samples of a fixed size at level `alpha` (no repeated looks).

    base and patched are the per-boot values (> 0) in run order; positions, when given, are each
    run's slot in the session's run order and are kept with the outliers.
    """
    _check_delta(delta)
    x = log_values(base)
    y = log_values(patched)
    shift = shift_estimate(x, y, alpha)
    identical = _identical(base, patched)
    verdict, beyond = _decide(
        shift,
        significant=shift.pvalue <= alpha,
        equivalent=strictly_inside(shift.ci_low, shift.ci_high, delta),
        identical=identical,
        higher_is_better=higher_is_better,
        undecided=Verdict.INCONCLUSIVE,
        delta=delta,
    )
    return _comparison(base, patched, shift, verdict, beyond, higher_is_better=higher_is_better,
                       delta=delta, alpha=alpha, base_positions=base_positions,
                       patched_positions=patched_positions, identical=identical)


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
    """One metric alone at one look of a sequential campaign; base[i] and patched[i] are pair i.

    RUN_ANOTHER_PAIR until k_min pairs; then a change when the signed-rank p <= alpha'
    (`sequential_alpha`), no change when the interval at that level lies strictly inside +-delta
    (`equivalent`) or every run is identical, RUN_ANOTHER_PAIR while pairs remain, INCONCLUSIVE
    at k_max. A campaign with several metrics is judged as one family by
    `bot.analysis.family` instead.
    """
    if len(base) != len(patched):
        raise ValueError(f"pairs need as many base as patched values ({len(base)}, "
                         f"{len(patched)})")
    k = len(base)
    look = paired_look(log_values(patched) - log_values(base))
    alpha = sequential_alpha(k_min, k_max)
    significant = k >= k_min and look.pvalue <= alpha
    return paired_comparison(
        base, patched, look, significant=significant, higher_is_better=higher_is_better,
        delta=delta, k_min=k_min, k_max=k_max, final=k >= k_max,
        base_positions=base_positions, patched_positions=patched_positions)


def paired_comparison(
    base: Sequence[float],
    patched: Sequence[float],
    look: PairedLook,
    *,
    significant: bool,
    higher_is_better: bool,
    delta: float,
    k_min: int,
    k_max: int,
    final: bool,
    scale: str = "log",
    base_positions: Sequence[int] | None = None,
    patched_positions: Sequence[int] | None = None,
    level: float | None = None,
    source: Comparison | None = None,
    **extra: object,
) -> Comparison:
    """The sequential judgement of one metric's pairs at one look, given whether its change is
    significant (decided by the caller: alone, or within the reply's family). `final`: no pair
    will follow, so an undecided metric is inconclusive. `level`: the per-look level a
    significant change passed at, when not the alpha' of a metric alone (a family's share; the
    early-stop correction simulates the rule at it). `source`: the judgement of the metric this
    one is an exact reciprocal or multiple of, whose corrected estimate it reports. `extra`
    sets Comparison's other fields (fdr_demoted, rejected, derived_from, family_size)."""
    _check_delta(delta)
    alpha = sequential_alpha(k_min, k_max)
    shift = look.shift(alpha)
    identical = _identical(base, patched)
    if look.k < k_min and not final:
        verdict, beyond = Verdict.RUN_ANOTHER_PAIR, None
    else:
        verdict, beyond = _decide(
            shift,
            significant=significant,
            equivalent=scale == "log" and equivalent(look, delta, k_min, k_max),
            identical=identical,
            higher_is_better=higher_is_better,
            undecided=Verdict.INCONCLUSIVE if final else Verdict.RUN_ANOTHER_PAIR,
            delta=delta if scale == "log" else math.inf,
        )
    comparison = _comparison(
        base, patched, shift, verdict, beyond, higher_is_better=higher_is_better, delta=delta,
        alpha=alpha, base_positions=base_positions, patched_positions=patched_positions,
        identical=identical, k_min=k_min, k_max=k_max, scale=scale, **extra)
    if comparison.early_stop:
        adjusted = (_as_source(comparison, source)
                    if source is not None and source.adjusted_estimate is not None
                    else conditional_estimate(look, alpha, k_min, k_max, level))
        comparison = replace(comparison, adjusted_estimate=adjusted)
    return comparison


def _as_source(comparison: Comparison, source: Comparison) -> float:
    """The source's corrected estimate (negated for a reciprocal), inside this metric's own
    interval. Corrected on its own, the rounding of one of the two (seconds to 3 digits beside
    ops/s) moved them apart: +56% against -40% for the same runs."""
    assert source.adjusted_estimate is not None
    sign = math.copysign(1.0, comparison.shift.estimate * source.shift.estimate)
    return min(max(sign * source.adjusted_estimate, comparison.shift.ci_low),
               comparison.shift.ci_high)


def equivalent(look: PairedLook, delta: float, k_min: int, k_max: int) -> bool:
    """Two one-sided signed-rank tests, each at alpha'/2 per look, reject both "shift <= -delta"
    and "shift >= +delta": the 95% interval (adjusted for the looks) lies strictly inside
    +-delta. Strict, so that a change of exactly delta is never "no change"."""
    return strictly_inside(*look.interval(sequential_alpha(k_min, k_max)), delta)


def strictly_inside(low: float, high: float, delta: float) -> bool:
    """[low, high] (log scale) lies strictly inside +-ln(1 + delta). Values measured in steps of
    delta put interval ends on the bound up to rounding: those count as on it."""
    bound = math.log1p(delta) * (1 - 1e-9)
    return -bound < low and high < bound


def judge_metrics(
    comparisons: Mapping[str, Comparison],
    q: float | None = None,
    main: Sequence[str] | None = None,
) -> dict[str, Comparison]:
    """Control the false discovery rate across the fixed-n comparisons of one run
    (Benjamini-Hochberg; weighted when `main` names the main metrics: they share half the
    family, the others the other half).

    q defaults to the comparisons' own alpha, so that one metric alone is judged exactly as
    before. A metric whose p passes its own alpha but not the procedure is re-decided as if
    not significant (no change or inconclusive) and marked `fdr_demoted`.
    """
    if not comparisons:
        return {}
    names = list(comparisons)
    if q is None:
        levels = {comparisons[name].alpha for name in names}
        if len(levels) != 1:
            raise ValueError("comparisons were judged at different alphas; pass q")
        q = levels.pop()
    if main is None:
        keep = benjamini_hochberg([comparisons[name].pvalue for name in names], q=q)
    else:
        weights = family_weights([n for n in names if n in main],
                                 [n for n in names if n not in main])
        passing = weighted_step_up({n: comparisons[n].pvalue for n in names}, weights, q)
        keep = [name in passing for name in names]
    judged = {}
    for name, passes in zip(names, keep, strict=True):
        comparison = comparisons[name]
        if comparison.changed and not passes:
            verdict, beyond = _decide(
                comparison.shift,
                significant=False,
                equivalent=strictly_inside(comparison.shift.ci_low, comparison.shift.ci_high,
                                           comparison.delta),
                identical=comparison.identical,
                higher_is_better=comparison.higher_is_better,
                undecided=Verdict.INCONCLUSIVE,
                delta=comparison.delta,
            )
            comparison = replace(comparison, verdict=verdict, beyond_delta=beyond,
                                 fdr_demoted=True)
        judged[name] = replace(comparison, family_size=len(names))
    return judged


def _comparison(
    base: Sequence[float],
    patched: Sequence[float],
    shift: ShiftEstimate,
    verdict: Verdict,
    beyond: bool | None,
    *,
    higher_is_better: bool,
    delta: float,
    alpha: float,
    base_positions: Sequence[int] | None,
    patched_positions: Sequence[int] | None,
    identical: bool,
    k_min: int | None = None,
    k_max: int | None = None,
    scale: str = "log",
    **extra: object,
) -> Comparison:
    base_raw = np.asarray(base, dtype=float)
    patched_raw = np.asarray(patched, dtype=float)
    log = scale == "log"
    base_summary = summarize_side(base_raw, base_positions, log=log)
    patched_summary = summarize_side(patched_raw, patched_positions, log=log)
    return Comparison(
        verdict=verdict,
        beyond_delta=beyond,
        delta=delta,
        higher_is_better=higher_is_better,
        alpha=alpha,
        shift=shift,
        mean_change_pct=_relative_pct(patched_raw.mean(), base_raw.mean()),
        median_change_pct=_relative_pct(np.median(patched_raw), np.median(base_raw)),
        base=base_summary,
        patched=patched_summary,
        tail=tail_finding(base_summary, patched_summary, higher_is_better=higher_is_better),
        pairs=min(base_raw.size, patched_raw.size),
        k_min=k_min,
        k_max=k_max,
        identical=identical,
        scale=scale,
        **extra,  # type: ignore[arg-type]
    )


def _decide(
    shift: ShiftEstimate,
    *,
    significant: bool,
    equivalent: bool,
    identical: bool,
    higher_is_better: bool,
    undecided: Verdict,
    delta: float,
) -> tuple[Verdict, bool | None]:
    if identical:
        return Verdict.NO_CHANGE, None
    if significant:
        # The side the test statistic falls on (p <= alpha implies it is off its centre). A
        # significant change inside +-delta stays a change: `below_delta` qualifies it.
        better = shift.larger == higher_is_better
        bound = math.log1p(delta) if math.isfinite(delta) else math.inf
        beyond = shift.ci_low >= bound if shift.larger else shift.ci_high <= -bound
        return (Verdict.IMPROVEMENT if better else Verdict.REGRESSION), beyond
    if equivalent:
        return Verdict.NO_CHANGE, None
    return undecided, None


def _identical(base: Sequence[float], patched: Sequence[float]) -> bool:
    values = np.concatenate([np.asarray(base, dtype=float), np.asarray(patched, dtype=float)])
    return bool(values.size) and bool(np.all(values == values[0]))


def _relative_pct(patched: float, base: float) -> float:
    if base == 0:
        return 0.0 if patched == 0 else math.copysign(math.inf, patched)
    return 100.0 * (patched / base - 1.0)


def _check_delta(delta: float) -> None:
    if delta <= 0:
        raise ValueError(f"delta must be > 0, got {delta}")


def _percent_label(delta: float) -> str:
    return f"{100 * delta:g}%"


def _format_pct(value: float) -> str:
    if math.isinf(value):
        return "+inf%" if value > 0 else "-inf%"
    return f"{value:+.2f}%"


def _format_p(pvalue: float) -> str:
    return f"{pvalue:.3f}" if pvalue >= 0.001 else f"{pvalue:.1e}"
