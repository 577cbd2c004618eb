"""What one measurement's own numbers can carry (docs/claims.md, "Judging").

- per-run samples on both sides: the table's rank comparison (`judge_table`), given in;
- means with a per-run spread and a run count: Welch's t-test on the means, with its interval of
  the relative change; an interval or p-value the author stated is checked against it;
- a spread but no run count (lkp, mmtests tables): the fewest runs per side at which the change
  would be significant (Student's t), and what the tool itself marked;
- a run count but no spread: the largest per-run CV at which the change would hold (t);
- one number per side: it cannot be told from noise, and the judgement says what it would need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from scipy import stats

from bot.analysis.claim_spread import max_cv_for_significance, min_runs_for_significance
from bot.analysis.claims.arithmetic import arithmetic_checks
from bot.analysis.claims.measurement import Measurement
from bot.analysis.verdict import DEFAULT_ALPHA, DEFAULT_DELTA

# Runs per side a reader is told about when a claim has one number a side.
REFERENCE_RUNS = 5


@dataclass(frozen=True)
class MeasurementJudgement:
    status: str  # "judged", "needs-runs", "needs-spread", "no-data"
    verdict: str  # "improvement", "regression", "increase", "decrease", "no change",
    # "inconclusive", or the status when nothing could be judged
    summary: str
    method: str | None = None  # "rank test on the runs", "Welch t on mean ± sd"
    estimate_pct: float | None = None
    ci_pct: tuple[float, float] | None = None
    p_value: float | None = None
    checks: tuple[str, ...] = field(default_factory=tuple)  # arithmetic and stated CI/p

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "verdict": self.verdict,
            "summary": self.summary,
            "method": self.method,
            "estimate_pct": None if self.estimate_pct is None else round(self.estimate_pct, 4),
            "ci_pct": [round(v, 4) for v in self.ci_pct] if self.ci_pct else None,
            "p_value": significant(self.p_value),
            "checks": list(self.checks),
        }


def significant(p: float | None, digits: int = 3) -> float | None:
    """A p-value in significant digits: 7.4e-07 stays 7.4e-07, never 1e-06 or 0.0."""
    if p is None or p != p:
        return None
    return float(f"{p:.{digits}g}")


def direction_verdict(change: float, higher: bool | None) -> str:
    if higher is None:
        return "increase" if change > 0 else "decrease"
    return "improvement" if (change > 0) == higher else "regression"


def judge_measurement(
    m: Measurement, *, delta: float = DEFAULT_DELTA, alpha: float = DEFAULT_ALPHA
) -> MeasurementJudgement:
    """What the measurement's numbers can carry, without per-run samples."""
    checks = tuple(arithmetic_checks(m))
    change = m.change_pct
    if change is None or m.base is None or m.patched is None or m.base <= 0 or m.patched <= 0:
        return MeasurementJudgement(
            "no-data", "no-data", "No pair of positive values to compare.", checks=checks
        )
    level = f"{100 * alpha:g}%"
    cv_b, cv_p, bounded = _side_cvs(m)
    n_base, n_patched = m.n_base, m.n_patched
    if (cv_b is not None or cv_p is not None) and n_base and n_patched and min(
        n_base, n_patched
    ) >= 2:
        return _welch(m, change, n_base, n_patched, delta, alpha, checks)
    if cv_b is not None or cv_p is not None:
        cv = max(c for c in (cv_b, cv_p) if c is not None)
        blank = m.cv_base_pct is None and m.cv_patched_pct is None
        at = f"of at most {_pct(cv)}% ({_BLANK})" if bounded and blank else f"of {_pct(cv)}%"
        runs = min_runs_for_significance(change, cv, alpha)
        need = (
            f"with a per-run CV {at} it would be significant at {level} with {runs} or more "
            "runs per side (Student's t)"
            if runs
            else f"with a per-run CV {at} no run count up to 10,000 would make it significant"
        )
        marked = ""
        if m.marked_significant is not None:
            marked = " mmtests marked it " + (
                "significant (*x%*)." if m.marked_significant else "not significant ((x%))."
            )
        return MeasurementJudgement(
            "needs-runs",
            "needs-runs",
            f"{change:+.2f}%, runs not given: {need}.{marked}",
            checks=checks,
        )
    runs = min(n_base or 0, n_patched or 0)
    status = "needs-spread" if runs >= 2 else "no-data"
    what = f"{runs} runs per side" if runs >= 2 else "one number per side"
    if m.base == m.patched:
        missing = "spread" if runs >= 2 else "run count"
        return MeasurementJudgement(
            status, status,
            f"{change:+.2f}% from {what}: the two are equal, which no {missing} would make "
            "significant.", checks=checks)  # fmt: skip
    if runs >= 2:
        cv_max = 100.0 * max_cv_for_significance(m.base, m.patched, runs, alpha)
        return MeasurementJudgement(
            status,
            status,
            f"{change:+.2f}% from {what}, with no spread given: "
            f"cannot be judged. It is significant at {level} only if the per-run CV is below "
            f"{_cv(cv_max)}% (Student's t).",
            checks=checks,
        )
    cv_max = 100.0 * max_cv_for_significance(m.base, m.patched, REFERENCE_RUNS, alpha)
    return MeasurementJudgement(
        status,
        status,
        f"{change:+.2f}% from {what}: cannot be told from noise. With "
        f"{REFERENCE_RUNS} runs per side it would hold at {level} if the per-run CV were below "
        f"{_cv(cv_max)}%.",
        checks=checks,
    )


_BLANK = "what a blank %stddev stands for"


def _side_cvs(m: Measurement) -> tuple[float | None, float | None, bool]:
    """Each side's per-run CV, a blank side of a tool that leaves small spreads blank taken at
    the largest such a blank stands for; and whether a side was so taken."""
    bound = m.cv_blank_max_pct
    if bound is None:
        return m.cv_base_pct, m.cv_patched_pct, False
    cv_b = m.cv_base_pct if m.cv_base_pct is not None else bound
    cv_p = m.cv_patched_pct if m.cv_patched_pct is not None else bound
    return cv_b, cv_p, None in (m.cv_base_pct, m.cv_patched_pct)


def _pct(value: float) -> str:
    """A CV as printed in a sentence: two significant digits, whole above 100 (173, not 1.7e+02)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.2g}"


def _cv(pct: float) -> str:
    """A CV bound as a reader can use it: 0.013, not a 0.0 that says "never"."""
    return f"{pct:.1f}" if pct >= 0.1 else f"{pct:.2g}"


def _welch(
    m: Measurement,
    change: float,
    n_base: int,
    n_patched: int,
    delta: float,
    alpha: float,
    checks: tuple[str, ...],
) -> MeasurementJudgement:
    assert m.base is not None and m.patched is not None
    # A side without its own spread is taken to have the other side's CV, unless the tool's blank
    # bounds it (lkp: 2% or less; taken at the bound, which only widens the interval).
    cv_b, cv_p, bounded = _side_cvs(m)
    cv_b = cv_b if cv_b is not None else cv_p
    cv_p = cv_p if cv_p is not None else cv_b
    assert cv_b is not None and cv_p is not None
    var_b = (cv_b / 100.0 * m.base) ** 2 / n_base
    var_p = (cv_p / 100.0 * m.patched) ** 2 / n_patched
    se = math.sqrt(var_b + var_p)
    diff = m.patched - m.base
    if se == 0:
        p, df, lo, hi = (0.0 if diff else 1.0), float(n_base + n_patched - 2), diff, diff
    else:
        df = (var_b + var_p) ** 2 / (
            var_b**2 / max(n_base - 1, 1) + var_p**2 / max(n_patched - 1, 1)
        )
        p = float(2.0 * stats.t.sf(abs(diff) / se, df))
        t = float(stats.t.ppf(1.0 - alpha / 2.0, df))
        lo, hi = diff - t * se, diff + t * se
    ci = (100.0 * lo / m.base, 100.0 * hi / m.base)
    size = ""
    if p <= alpha:
        verdict = direction_verdict(change, m.higher_is_better)
        size = f" ({_size_of_change(ci, delta)})"
    elif -100 * delta < ci[0] and ci[1] < 100 * delta:
        verdict = "no change"
    else:
        verdict = "inconclusive"
    extra = list(checks) + _stated_checks(m, ci, p, alpha)
    summary = (
        f"{change:+.2f}% [{ci[0]:+.2f}%, {ci[1]:+.2f}%] Welch t p={significant(p, 2):g} "
        f"(n {n_base}/{n_patched}, CV {_side_cv(m.cv_base_pct, cv_b, bounded)}%/"
        f"{_side_cv(m.cv_patched_pct, cv_p, bounded)}%): {verdict}{size}"
    )
    return MeasurementJudgement(
        "judged", verdict, summary, "Welch t on mean ± sd", change, ci, p, tuple(extra)
    )


def _size_of_change(ci: tuple[float, float], delta: float) -> str:
    """How a real change compares with the smallest change of interest, in the words the run
    tables use (`Comparison.words`): Nhat Pham's -0.54% [-0.98%, -0.10%] is real but small."""
    label = f"{100 * delta:g}%"
    if -100 * delta < ci[0] and ci[1] < 100 * delta:
        return f"real, but below the {label} of interest"
    if ci[0] >= 100 * delta or ci[1] <= -100 * delta:
        return f">= {label}"
    return f"may be < {label}"


def _side_cv(printed: float | None, used: float, bounded: bool) -> str:
    """A side's CV in the summary: "<=2" for a blank a tool's bound stands in for."""
    return f"<={_pct(used)}" if bounded and printed is None else _pct(used)


def _stated_checks(m: Measurement, ci: tuple[float, float], p: float, alpha: float) -> list[str]:
    notes = []
    if m.stated_ci_pct is not None:
        lo, hi = m.stated_ci_pct
        width = max(ci[1] - ci[0], 0.1)
        agrees = abs(lo - ci[0]) <= 0.25 * width + 0.1 and abs(hi - ci[1]) <= 0.25 * width + 0.1
        notes.append(
            f"The stated interval [{lo:+g}%, {hi:+g}%] "
            + ("agrees with" if agrees else "does not agree with")
            + f" the data shown ([{ci[0]:+.2f}%, {ci[1]:+.2f}%])."
        )
    if m.stated_p is not None:
        same_side = (m.stated_p <= alpha) == (p <= alpha)
        notes.append(
            f"The stated p={m.stated_p:g} "
            + ("agrees with" if same_side else "does not agree with")
            + f" the data shown (Welch p={significant(p, 2):g})."
        )
    return notes
