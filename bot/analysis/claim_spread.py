"""What spread an author's claim needs to be significant, when the claim gives none.

Authors often write "Before: 44017.78 After: 44687.08 Ops/sec (+1.5%), 18 runs" with no variance.
Whether that is a change or noise depends on the run-to-run spread, so the bot says which
per-run CV would make the claim hold (docs/statistics.md: +1.5% over 18 runs per side holds at
5% only if the CV is below about 2.3%).

Algebra: the normal approximation to the two-sample test of means on the log scale, with the same
CV on both sides and CV taken as the standard deviation of ln(x) (exact for log-normal noise to
first order). The difference of mean logs, d = ln(after / before), has standard error
CV * sqrt(2 / n); it is significant at two-sided level alpha when |d| >= z_{1-alpha/2} CV sqrt(2/n),
so the largest such CV is |d| / (z_{1-alpha/2} sqrt(2/n)). A t-test would use t_{2n-2} instead of
z and give a slightly smaller bound (2.2% instead of 2.3% for the seed claim); a rank test is
about as sensitive (asymptotic relative efficiency 0.955 against the t-test).
"""

from __future__ import annotations

import math
from statistics import NormalDist


def max_cv_for_significance(
    before: float, after: float, runs_per_side: int, alpha: float = 0.05
) -> float:
    """The largest per-run CV (as a fraction: 0.023 = 2.3%) at which a change from `before` to
    `after`, each the mean of `runs_per_side` runs, would be significant at two-sided `alpha`."""
    if before <= 0 or after <= 0:
        raise ValueError("before and after must be > 0")
    if runs_per_side < 2:
        raise ValueError("a spread needs at least 2 runs per side")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    log_change = abs(math.log(after / before))
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    return log_change / (z * math.sqrt(2.0 / runs_per_side))
