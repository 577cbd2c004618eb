"""Per-look levels for sequential comparisons of pairs (docs/statistics.md, "Sequential looks").

A campaign looks at its pairs after every pair from k_min to k_max. Looking many times at a
nominal 5% would give far more than 5% false alarms, so each look uses a per-look level alpha'
chosen so that, under "no change", P(min over the looks of the signed-rank p <= alpha') is at
most the family level. Under the null the signs of the within-pair differences are fair coins
given their ranks, so a simulation with any continuous symmetric noise holds for all of them.

`SHIPPED` holds, per (k_min, k_max), the two-sided per-look level at several family levels, by
Monte Carlo (`calibrate`): 0.05 serves one metric and the interval; the smaller ones serve the
false discovery rate control across a reply's metrics, whose step-up thresholds are q r w / m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bot.analysis.signed_rank import null_cdf_signed_rank

CALIBRATION_TRIALS = 200_000
CALIBRATION_SEED = 20_240_601
FAMILY_LEVELS = (0.05, 0.02, 0.01, 0.005, 0.002, 0.001)


@dataclass(frozen=True)
class Calibration:
    """Per-look levels for looks k_min..k_max."""

    two_sided: dict[float, float]  # family level -> alpha' per look


# calibrate(k_min, k_max, trials=CALIBRATION_TRIALS, seed=CALIBRATION_SEED) for each entry.
# The null distribution of min p is discrete, so each level is one of its atoms.
SHIPPED: dict[tuple[int, int], Calibration] = {
    (5, 10): Calibration(
        {0.05: 0.02734375, 0.02: 0.01171875, 0.01: 0.005859375, 0.005: 0.001953125,
         0.002: 0.0, 0.001: 0.0},
    ),
    (5, 20): Calibration(
        {0.05: 0.01507568359375, 0.02: 0.0055999755859375, 0.01: 0.0029296875,
         0.005: 0.00146484375, 0.002: 0.0005855560302734375, 0.001: 0.00030517578125},
    ),
    (5, 30): Calibration(
        {0.05: 0.01068878173828125, 0.02: 0.00400543212890625, 0.01: 0.001953125,
         0.005: 0.0009758472442626953, 0.002: 0.0004079751670360565,
         0.001: 0.00020912662148475647},
    ),
    (5, 40): Calibration(
        {0.05: 0.008705463260412216, 0.02: 0.003394925268366933, 0.01: 0.0016727447509765625,
         0.005: 0.0008381715742871165, 0.002: 0.0002899169921875,
         0.001: 0.0001450907438993454},
    ),
    (5, 60): Calibration(
        {0.05: 0.007341237628562425, 0.02: 0.0025649620220065117, 0.01: 0.001235703558341683,
         0.005: 0.0006074905395507812, 0.002: 0.00024147424755938118,
         0.001: 0.00011675505083985627},
    ),
}

# Trials per chunk: bounds memory at chunk * k_max^2 * 2 bytes for the int16 cumulative sums.
_CHUNK = 2_000


def min_pvalues_over_looks(
    k_min: int, k_max: int, trials: int, rng: np.random.Generator
) -> np.ndarray:
    """For `trials` simulated null campaigns, the smallest exact two-sided signed-rank p over the
    looks after k_min, ..., k_max pairs."""
    if not 1 <= k_min <= k_max:
        raise ValueError(f"need 1 <= k_min <= k_max, got {k_min}, {k_max}")
    if k_max * (k_max + 1) // 2 > np.iinfo(np.int16).max:
        raise ValueError("k_max too large for the int16 rank counts (k_max <= 255)")
    cdfs = {k: null_cdf_signed_rank(k) for k in range(k_min, k_max + 1)}
    upper = np.triu(np.ones((k_max, k_max), dtype=bool))
    result = np.empty(trials)
    for start in range(0, trials, _CHUNK):
        count = min(_CHUNK, trials - start)
        d = rng.standard_normal((count, k_max))
        # positive[t, i, j] = the Walsh average (d_i + d_j) / 2 > 0, for i <= j; its 2-D prefix
        # sums give T+ (the number of positive Walsh averages) at every look at once.
        positive = ((d[:, :, np.newaxis] + d[:, np.newaxis, :]) > 0) & upper
        prefix = positive.astype(np.int16).cumsum(axis=1, dtype=np.int16).cumsum(
            axis=2, dtype=np.int16)
        smallest = np.ones(count)
        for k in range(k_min, k_max + 1):
            t = prefix[:, k - 1, k - 1].astype(np.int64)
            total = k * (k + 1) // 2
            p = np.minimum(1.0, 2.0 * cdfs[k][np.minimum(t, total - t)])
            np.minimum(smallest, p, out=smallest)
        result[start : start + count] = smallest
    return result


def largest_level(smallest: np.ndarray, family: float) -> float:
    """The largest observed value a with share(smallest <= a) <= family (ties counted in full);
    0.0 when none is (too few pairs for that level: nothing can be called at it)."""
    ordered = np.sort(smallest)
    share = np.searchsorted(ordered, ordered, side="right") / ordered.size
    allowed = ordered[share <= family]
    return float(allowed[-1]) if allowed.size else 0.0


def calibrate(k_min: int, k_max: int, trials: int, seed: int) -> Calibration:
    """The per-look levels, from `trials` seeded null campaigns (reproducible).

    200,000 trials take about 0.3 s at k_max = 10 and 4 s at k_max = 60 on one core.
    """
    if trials < 1:
        raise ValueError("trials must be >= 1")
    smallest = min_pvalues_over_looks(k_min, k_max, trials, np.random.default_rng(seed))
    return Calibration({level: largest_level(smallest, level) for level in FAMILY_LEVELS})


def calibration(k_min: int, k_max: int) -> Calibration:
    """The shipped table's entry, or one calibrated on first use (20,000 trials, seconds)."""
    shipped = SHIPPED.get((k_min, k_max))
    return shipped if shipped is not None else _calibrated_on_demand(k_min, k_max)


def sequential_alpha(k_min: int, k_max: int, family: float = 0.05) -> float:
    """The two-sided per-look level that holds the chance of any false call over the looks at
    `family`. Between calibrated levels it is interpolated on log scales; below the smallest,
    Bonferroni over the looks stands in (conservative)."""
    table = calibration(k_min, k_max).two_sided
    levels = sorted(table)
    if family >= levels[-1]:
        return table[levels[-1]] if family == levels[-1] else _interpolate(
            family, levels[-2], levels[-1], table)
    if family < levels[0]:
        return min(table[levels[0]], family / (k_max - k_min + 1))
    for low, high in zip(levels, levels[1:], strict=False):
        if low <= family <= high:
            return _interpolate(family, low, high, table)
    raise AssertionError("unreachable: levels cover the range")


def _interpolate(level: float, low: float, high: float, table: dict[float, float]) -> float:
    if level > high:  # above the table (family > 0.05): no extrapolation upward
        return table[high]
    if table[low] == 0.0:  # the lower level is out of reach: stay conservative
        return 0.0
    span = math.log(high) - math.log(low)
    weight = (math.log(level) - math.log(low)) / span
    return math.exp(
        (1 - weight) * math.log(table[low]) + weight * math.log(table[high])
    )


@lru_cache(maxsize=32)
def _calibrated_on_demand(k_min: int, k_max: int) -> Calibration:
    return calibrate(k_min, k_max, trials=20_000, seed=CALIBRATION_SEED)
