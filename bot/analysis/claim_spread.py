"""What spread an author's claim needs to be significant, when the claim gives none, and how many
runs a claim that gives a spread but no run count would need.

Authors often write "Before: 44017.78 After: 44687.08 Ops/sec (+1.5%), 18 runs" with no variance.
Whether that is a change or noise depends on the run-to-run spread, so the bot says which
per-run CV would make the claim hold (docs/claims.md: +1.5% over 18 runs per side holds at 5%
only if the CV is below about 2.2%).

Algebra: the two-sample t-test of means on the log scale, with the same CV on both sides and CV
taken as the standard deviation of ln(x) (exact for log-normal noise to first order). The
difference of mean logs, d = ln(after / before), has standard error CV * sqrt(2 / n); it is
significant at two-sided level alpha when |d| >= t_{1-alpha/2, 2n-2} CV sqrt(2/n), so the largest
such CV is |d| / (t_{1-alpha/2, 2n-2} sqrt(2/n)). Student's t, not the normal z: with the few runs
authors post, z would promise significance at spreads that t (the test a reader would run on
the same numbers) rejects. A rank test is about as sensitive (asymptotic relative efficiency
0.955 against the t-test).
"""

from __future__ import annotations

import math

from scipy import stats


def max_cv_for_significance(
    before: float, after: float, runs_per_side: int, alpha: float = 0.05
) -> float:
    """The largest per-run CV (as a fraction: 0.022 = 2.2%) at which a change from `before` to
    `after`, each the mean of `runs_per_side` runs, would be significant at two-sided `alpha`
    by Student's t with 2n - 2 degrees of freedom."""
    if before <= 0 or after <= 0:
        raise ValueError("before and after must be > 0")
    if runs_per_side < 2:
        raise ValueError("a spread needs at least 2 runs per side")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    log_change = abs(math.log(after / before))
    t = float(stats.t.ppf(1.0 - alpha / 2.0, 2 * runs_per_side - 2))
    return log_change / (t * math.sqrt(2.0 / runs_per_side))


def min_runs_for_significance(
    change_pct: float, cv_pct: float, alpha: float = 0.05, most: int = 10_000
) -> int | None:
    """The fewest runs per side at which a change of `change_pct` with per-run CV `cv_pct` (both
    in percent, the same CV on both sides) would be significant at `alpha` by Student's t; None
    when no count up to `most` would do (no change, or no spread to judge it by)."""
    if cv_pct <= 0 or change_pct <= -100 or change_pct == 0:
        return None
    log_change = abs(math.log1p(change_pct / 100.0))
    cv = cv_pct / 100.0
    n = 2
    while n <= most:
        t = float(stats.t.ppf(1.0 - alpha / 2.0, 2 * n - 2))
        if log_change >= t * cv * math.sqrt(2.0 / n):
            return n
        n = n + 1 if n < 100 else int(n * 1.25)
    return None
