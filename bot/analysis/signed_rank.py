"""Paired rank statistics: the Wilcoxon signed-rank test on within-pair differences, with its
Hodges-Lehmann (Walsh average) estimate and interval (docs/statistics.md, "The statistic").

A lab campaign runs A and B in pairs, in random order; d_i = y_i - x_i is pair i's difference
(on logs: the within-pair log ratio). Under "no change" the random order makes every d_i
symmetric about 0, however the machine drifts, so the signs are fair coins given |d|: that
sign-flip distribution is the test's exact null.
- T+ = sum of the ranks of |d_i| over d_i > 0, plus half the ranks of d_i = 0 (Pratt: zeros keep
  their ranks, so the statistic has mean k(k+1)/4). Ties take mid-ranks. The two-sided p is exact:
  over the 2^k sign flips of the non-zero differences, given their ranks.
- The Walsh averages are the k(k+1)/2 values (d_i + d_j) / 2, i <= j. Their median is the
  Hodges-Lehmann estimate; without ties T+ is the number of positive Walsh averages.
- The interval at level 1 - alpha is [W_(c+1), W_(N-c)] (sorted, 1-indexed), c = max{t :
  P(T+ <= t) <= alpha/2} under the untied null. It is the set of shifts the test does not reject.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bot.analysis.ranks import ShiftEstimate


@dataclass(frozen=True)
class PairedLook:
    """The test and estimate at one look: cheap enough to compute after every pair."""

    k: int  # pairs
    estimate: float  # median of the Walsh averages
    t_plus: float
    pvalue: float  # two-sided
    walsh: np.ndarray  # sorted Walsh averages
    differences: np.ndarray  # d_i, in pair order

    def interval(self, alpha: float) -> tuple[float, float]:
        """The two-sided (1 - alpha) interval; (-inf, +inf) when k is too small for alpha."""
        c = critical_t_plus(self.k, alpha / 2.0)
        if c < 0:
            return -math.inf, math.inf
        return float(self.walsh[c]), float(self.walsh[self.walsh.size - c - 1])

    def shift(self, alpha: float) -> ShiftEstimate:
        """As a `ShiftEstimate` (m = n = k). u is T+ scaled to [0, k^2] (u = 2k T+ / (k + 1)),
        so that u > m n / 2 says "B larger" as it does for the unpaired statistic."""
        low, high = self.interval(alpha)
        return ShiftEstimate(
            estimate=self.estimate,
            ci_low=low,
            ci_high=high,
            confidence=1.0 - alpha,
            u=2.0 * self.k * self.t_plus / (self.k + 1),
            pvalue=self.pvalue,
            exact=True,
            m=self.k,
            n=self.k,
            paired=True,
        )


def paired_look(differences: Sequence[float]) -> PairedLook:
    """Signed-rank statistics of the differences d_i (finite)."""
    d = np.asarray(differences, dtype=float)
    k = d.size
    if k == 0:
        raise ValueError("no pairs")
    if not np.all(np.isfinite(d)):
        raise ValueError("differences must be finite")
    walsh = np.sort((d[:, np.newaxis] + d[np.newaxis, :])[np.triu_indices(k)] / 2.0)
    doubled = _doubled_ranks(np.abs(d))
    positive = d > 0
    zero = d == 0
    t_plus = (doubled[positive].sum() + 0.5 * doubled[zero].sum()) / 2.0
    pvalue = _two_sided_p(doubled[~zero], float(doubled[positive].sum()))
    middle = walsh.size // 2  # the median of the sorted Walsh averages
    estimate = walsh[middle] if walsh.size % 2 else (walsh[middle - 1] + walsh[middle]) / 2
    return PairedLook(k=k, estimate=float(estimate), t_plus=float(t_plus),
                      pvalue=pvalue, walsh=walsh, differences=d)


def null_cdf_signed_rank(k: int) -> np.ndarray:
    """P(T+ <= t), t = 0..k(k+1)/2, for k untied non-zero differences under the null."""
    return _null_cdf(k)


@lru_cache(maxsize=256)
def _null_cdf(k: int) -> np.ndarray:
    counts = _subset_sum_counts(tuple(range(1, k + 1)))
    cdf = np.cumsum(counts) / 2.0**k
    cdf.setflags(write=False)
    return cdf


def _subset_sum_counts(values: tuple[int, ...]) -> np.ndarray:
    """How many subsets of `values` (positive integers) have each sum 0..sum(values)."""
    counts = np.zeros(sum(values) + 1)
    counts[0] = 1.0
    reach = 0
    for v in values:
        counts[v : reach + v + 1] += counts[: reach + 1].copy()
        reach += v
    return counts


@lru_cache(maxsize=4096)
def critical_t_plus(k: int, tail: float) -> int:
    """max{t : P(T+ <= t) <= tail} under the untied null (-1 when none)."""
    return int(np.searchsorted(_null_cdf(k), tail, side="right")) - 1


def _doubled_ranks(values: np.ndarray) -> np.ndarray:
    """2 x the mid-ranks of `values` (integers even with ties)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    ranks[order] = np.arange(1, values.size + 1, dtype=float)
    sorted_values = values[order]
    if np.unique(sorted_values).size < values.size:
        starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
        ends = np.r_[starts[1:], values.size]
        for start, end in zip(starts, ends, strict=True):
            ranks[order[start:end]] = (start + 1 + end) / 2.0
    return 2.0 * ranks


def _two_sided_p(doubled_nonzero: np.ndarray, observed: float) -> float:
    """P(|S - E S| >= |s - E S|) over the sign flips, S = the sum of the positive ranks."""
    if doubled_nonzero.size == 0:
        return 1.0
    values = tuple(int(round(v)) for v in doubled_nonzero)
    total = sum(values)
    if values == tuple(range(2, 2 * len(values) + 1, 2)):  # untied: cached distribution
        cdf = _null_cdf(len(values))
        t = int(round(observed / 2.0))
        return min(1.0, 2.0 * float(cdf[min(t, total // 2 - t)]))
    counts = _subset_sum_counts(values) / 2.0 ** len(values)
    distance = abs(2.0 * observed - total)
    sums = np.arange(total + 1)
    # A small tolerance: both sides are integers, so it only protects from rounding.
    return min(1.0, float(counts[np.abs(2.0 * sums - total) >= distance - 1e-9].sum()))
