"""Rank statistics of a shift between two samples: Mann-Whitney p, Hodges-Lehmann, and its CI.

Everything here works on the log scale (x = ln a, y = ln b) so that a shift is a ratio and the
result is the same for sec/op and ops/sec. D is the set of all m*n differences y_j - x_i:
- U = #(D > 0) + 0.5 #(D = 0); the two-sided p comes from the exact null distribution of U
  (docs/statistics.md, step 3) when the pooled sample has no ties and m*n is small enough, and
  from the normal approximation with tie and continuity corrections otherwise (the same
  formula as scipy.stats.mannwhitneyu(method="asymptotic")).
- The Hodges-Lehmann estimate is median(D).
- The confidence interval at level 1 - alpha is [D_(c+1), D_(mn-c)] (1-indexed, sorted), with
  c = max{u : P(U <= u) <= alpha/2}. Without ties it excludes 0 exactly when p <= alpha. With
  differences equal to 0 (ties across the samples) it can touch 0 while p <= alpha: the interval
  is then the conservative one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

# Largest m*n for which the exact null distribution is computed (about 0.2 s at 100 x 100, then
# cached); beyond it the normal approximation is accurate to well under 1e-3 in p.
EXACT_MAX_PRODUCT = 10_000


@dataclass(frozen=True)
class ShiftEstimate:
    """The shift of y against x on the log scale, with its test and interval."""

    estimate: float  # Hodges-Lehmann: median of all y_j - x_i
    ci_low: float  # -inf when the samples are too small for the level
    ci_high: float  # +inf likewise
    confidence: float  # 1 - alpha of the interval
    u: float  # Mann-Whitney U of y against x: #(y > x) + 0.5 #(y == x)
    pvalue: float  # two-sided
    exact: bool  # exact null distribution (False: normal approximation)
    m: int  # size of x (pairs, when paired)
    n: int  # size of y (pairs, when paired)
    # True: the signed-rank statistic of within-pair differences (bot.analysis.signed_rank);
    # u is then its T+ scaled to [0, m n].
    paired: bool = False

    @property
    def larger(self) -> bool:
        """The test statistic says y is larger than x (as the test decided, not the estimate)."""
        return self.u > self.m * self.n / 2


def null_pmf(m: int, n: int) -> np.ndarray:
    """Exact null distribution of U for sample sizes m and n: P(U = u) for u = 0..m*n.

    The recursion of docs/statistics.md: P_{m,n}(u) = m/(m+n) P_{m-1,n}(u) + n/(m+n)
    P_{m,n-1}(u-m), where U counts the pairs in which the second sample's value is larger
    (the largest of all m+n values is from the first sample with probability m/(m+n) and then
    adds nothing, or from the second and then exceeds all m values).
    """
    if m < 0 or n < 0:
        raise ValueError("sample sizes must be >= 0")
    # The distribution is symmetric in (m, n); cache one orientation.
    return _null_pmf(min(m, n), max(m, n)).copy()


@lru_cache(maxsize=128)
def _null_pmf(m: int, n: int) -> np.ndarray:
    # Row by row over i = 0..m, keeping P_{i-1, j} for every j (previous row) and P_{i, j-1}.
    previous = [np.ones(1) for _ in range(n + 1)]  # i = 0: U is always 0
    for i in range(1, m + 1):
        current = [np.ones(1)]  # j = 0: U is always 0
        for j in range(1, n + 1):
            pmf = np.zeros(i * j + 1)
            upper = previous[j]
            pmf[: upper.size] += (i / (i + j)) * upper
            left = current[j - 1]
            pmf[i : i + left.size] += (j / (i + j)) * left
            current.append(pmf)
        previous = current
    return previous[n]


def null_cdf(m: int, n: int) -> np.ndarray:
    """P(U <= u) for u = 0..m*n under the null, exactly (see `null_pmf`)."""
    return _null_cdf(min(m, n), max(m, n))


@lru_cache(maxsize=128)
def _null_cdf(m: int, n: int) -> np.ndarray:
    cdf = np.cumsum(_null_pmf(m, n))
    cdf.setflags(write=False)
    return cdf


def log_differences(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """All m*n differences y_j - x_i, sorted."""
    return np.sort((y[np.newaxis, :] - x[:, np.newaxis]).ravel())


def shift_estimate(x: Sequence[float], y: Sequence[float], alpha: float) -> ShiftEstimate:
    """Hodges-Lehmann shift of y against x, Mann-Whitney p and the (1 - alpha) interval.

    x and y are already on the log scale (see `log_values`).
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    m, n = xs.size, ys.size
    if m == 0 or n == 0:
        raise ValueError("each sample needs at least one value")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    diffs = log_differences(xs, ys)
    mn = m * n
    u = float(np.count_nonzero(diffs > 0) + 0.5 * np.count_nonzero(diffs == 0))
    pooled = np.concatenate([xs, ys])
    tied = np.unique(pooled).size < pooled.size
    exact = not tied and mn <= EXACT_MAX_PRODUCT
    if exact:
        pvalue, c = _exact_p_and_c(m, n, int(u), alpha)
    else:
        pvalue, c = _normal_p_and_c(m, n, u, pooled, alpha)
    if c < 0:
        low, high = -math.inf, math.inf
    else:
        low, high = float(diffs[c]), float(diffs[mn - c - 1])
    return ShiftEstimate(
        estimate=float(np.median(diffs)),
        ci_low=low,
        ci_high=high,
        confidence=1.0 - alpha,
        u=u,
        pvalue=pvalue,
        exact=exact,
        m=m,
        n=n,
    )


def _exact_p_and_c(m: int, n: int, u: int, alpha: float) -> tuple[float, int]:
    cdf = null_cdf(m, n)
    # Symmetric null: P(U <= k) = P(U >= mn - k); doubling is exact in floating point, so the
    # comparisons below agree with p <= alpha to the last bit.
    pvalue = min(1.0, 2.0 * float(cdf[min(u, m * n - u)]))
    c = int(np.searchsorted(cdf, alpha / 2.0, side="right")) - 1  # max{u: cdf[u] <= alpha/2}
    return pvalue, c


def _normal_p_and_c(
    m: int, n: int, u: float, pooled: np.ndarray, alpha: float
) -> tuple[float, int]:
    total = m + n
    mean = m * n / 2.0
    _, counts = np.unique(pooled, return_counts=True)
    tie_term = float(np.sum(counts.astype(float) ** 3 - counts)) / (total * (total - 1))
    variance = m * n / 12.0 * ((total + 1) - tie_term)
    if variance <= 0.0:  # every value equal: nothing to tell the samples apart
        return 1.0, -1
    sigma = math.sqrt(variance)
    z = (abs(u - mean) - 0.5) / sigma  # continuity correction, as scipy's default
    pvalue = min(1.0, math.erfc(z / math.sqrt(2.0)))
    # Largest integer c whose own p would be <= alpha: (mean - c - 0.5) / sigma >= z_{1-alpha/2}.
    z_crit = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    c = math.floor(mean - 0.5 - z_crit * sigma)
    return pvalue, min(c, (m * n - 1) // 2)


def log_values(values: Sequence[float]) -> np.ndarray:
    """Natural logs of strictly positive, finite measurements."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError("samples must be one-dimensional")
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError("samples must be finite and > 0 (the comparison works on logs)")
    return np.log(array)


def log_to_percent(shift: float) -> float:
    """A log-scale shift as a percent change: 100 (e^shift - 1)."""
    return 100.0 * math.expm1(shift)
