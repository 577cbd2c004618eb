"""Per-look levels for sequential comparisons of pairs (docs/statistics.md, "Sequential looks").

A campaign looks at its pairs after every pair from k_min to k_max. Looking many times at a
nominal 5% would give far more than 5% false alarms, so each look uses a per-look level alpha'
chosen so that, under "no change", P(min over the looks of the signed-rank p <= alpha') is at
most the family level. Under the null the signs of the within-pair differences are fair coins
given their ranks, so a simulation with any continuous symmetric noise holds for all of them.

`SHIPPED` holds, per (k_min, k_max), the two-sided per-look level at several family levels, by
Monte Carlo (`calibrate`): 0.05 serves one metric and the interval; the smaller ones serve the
false discovery rate control across a reply's metrics, whose step-up thresholds are q r w / m.
A level is taken only where the simulated rate stays at or below the family level by a margin of
MARGIN_Z standard errors: the largest atom whose share merely came out <= 5% in 200,000 trials
(alpha' 0.01069 for 5..30) gave 5.04-5.08% false alarms on fresh null campaigns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bot.analysis.signed_rank import null_cdf_signed_rank

CALIBRATION_TRIALS = 1_000_000
MARGIN_Z = 3.0  # one-sided: the rate exceeds the family level with chance about 0.1%
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
        {0.05: 0.0149993896484375, 0.02: 0.0055694580078125, 0.01: 0.0028076171875,
         0.005: 0.0014324188232421875, 0.002: 0.000579833984375, 0.001: 0.0002899169921875},
    ),
    (5, 30): Calibration(
        {0.05: 0.010406494140625, 0.02: 0.0039006471633911133, 0.01: 0.00193023681640625,
         0.005: 0.0009758472442626953, 0.002: 0.00037276744842529297,
         0.001: 0.00018143653869628906},
    ),
    (5, 40): Calibration(
        {0.05: 0.00856206679600291, 0.02: 0.0033502401784062386, 0.01: 0.001587800681591034,
         0.005: 0.0007638119859620929, 0.002: 0.00028705596923828125,
         0.001: 0.0001353248953819275},
    ),
    (5, 60): Calibration(
        {0.05: 0.0071425457938930435, 0.02: 0.002501751380962647, 0.01: 0.0011793698577093892,
         0.005: 0.0005517005920410156, 0.002: 0.00021209293636881288,
         0.001: 9.822472929954529e-05},
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
    """The largest observed value a whose share(smallest <= a) (ties counted in full), plus
    MARGIN_Z of its standard errors, is <= family; 0.0 when none is (too few pairs for that
    level: nothing can be called at it)."""
    ordered = np.sort(smallest)
    share = np.searchsorted(ordered, ordered, side="right") / ordered.size
    upper = share + MARGIN_Z * np.sqrt(share * (1 - share) / ordered.size)
    allowed = ordered[upper <= family]
    return float(allowed[-1]) if allowed.size else 0.0


def calibrate(k_min: int, k_max: int, trials: int, seed: int) -> Calibration:
    """The per-look levels, from `trials` seeded null campaigns (reproducible).

    1,000,000 trials take about 1.5 s at k_max = 10 and 20 s at k_max = 60 on one idle core.
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
