"""The per-look significance level alpha' for sequential comparisons (docs/statistics.md, step 6).

A comparison looks at the data after every pair from k_min to k_max and stops at the first look
with p <= alpha'. Looking many times at a nominal 5% would give far more than 5% false alarms, so
alpha' is the constant that keeps P(min over looks of p <= alpha') at `family_alpha` under the
null. Under the null the ranks of the 2k values are exchangeable, so the calibration can simulate
uniform noise and holds for any distribution of the data.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from bot.analysis.ranks import null_cdf

# alpha' per (k_min, k_max) at family_alpha 0.05, from
# calibrate_alpha(k_min, k_max, trials=CALIBRATION_TRIALS, seed=CALIBRATION_SEED).
# The null distribution of min p is discrete, so alpha' is one of its atoms: a recomputation with
# another seed lands on the same atom or a neighbouring one. docs/statistics.md found 0.0207,
# 0.00866 and 0.00674 for k_max 10, 30 and 60 from 20,000 trials: the same within Monte Carlo error.
CALIBRATION_TRIALS = 200_000
CALIBRATION_SEED = 20_240_601
SEQUENTIAL_ALPHA: dict[tuple[int, int], float] = {
    (5, 10): 0.020668220668220667,
    (5, 20): 0.011717457920434528,
    (5, 30): 0.008651038711951742,
    (5, 40): 0.00792504242338346,
    (5, 60): 0.0067083613588612215,
}

# Trials per chunk: bounds memory at chunk * k_max^2 * 2 bytes for the two int16 cumulative sums.
_CHUNK = 2_000


def min_pvalues_over_looks(
    k_min: int, k_max: int, trials: int, rng: np.random.Generator
) -> np.ndarray:
    """For `trials` simulated null experiments, the smallest exact two-sided Mann-Whitney p over
    the looks after k_min, k_min + 1, ..., k_max pairs (k values per side at look k)."""
    if not 1 <= k_min <= k_max:
        raise ValueError(f"need 1 <= k_min <= k_max, got {k_min}, {k_max}")
    if k_max * k_max > np.iinfo(np.int16).max:
        raise ValueError("k_max too large for the int16 rank counts (k_max <= 181)")
    cdfs = {k: null_cdf(k, k) for k in range(k_min, k_max + 1)}
    result = np.empty(trials)
    for start in range(0, trials, _CHUNK):
        count = min(_CHUNK, trials - start)
        base = rng.random((count, k_max))
        patched = rng.random((count, k_max))
        # wins[t, i, j] = patched_j > base_i; its 2-D prefix sums give U at every look at once.
        wins = (patched[:, np.newaxis, :] > base[:, :, np.newaxis]).astype(np.int16)
        prefix = wins.cumsum(axis=1, dtype=np.int16).cumsum(axis=2, dtype=np.int16)
        smallest = np.ones(count)
        for k in range(k_min, k_max + 1):
            u = prefix[:, k - 1, k - 1].astype(np.int64)
            lower_tail = np.minimum(u, k * k - u)
            p = np.minimum(1.0, 2.0 * cdfs[k][lower_tail])
            np.minimum(smallest, p, out=smallest)
        result[start : start + count] = smallest
    return result


def calibrate_alpha(
    k_min: int, k_max: int, trials: int, seed: int, family_alpha: float = 0.05
) -> float:
    """The largest alpha' with P(min p over the looks <= alpha') <= family_alpha, estimated from
    `trials` simulated null experiments (seeded, so the result is reproducible).

    20,000 trials take about 0.05 s at k_max = 10 and 1.5 s at k_max = 60 on one core.
    """
    if trials < 1:
        raise ValueError("trials must be >= 1")
    rng = np.random.default_rng(seed)
    smallest = np.sort(min_pvalues_over_looks(k_min, k_max, trials, rng))
    # Share of experiments with min p <= each observed value (ties counted in full).
    share = np.searchsorted(smallest, smallest, side="right") / trials
    allowed = smallest[share <= family_alpha]
    if allowed.size == 0:
        raise ValueError("too few trials to reach that family_alpha; raise trials")
    return float(allowed[-1])


def sequential_alpha(k_min: int, k_max: int) -> float:
    """alpha' for looks k_min..k_max at a 5% family-wise rate: from the shipped table, or
    calibrated on first use (20,000 trials, a few seconds) for a pair not in it."""
    shipped = SEQUENTIAL_ALPHA.get((k_min, k_max))
    if shipped is not None:
        return shipped
    return _calibrated_on_demand(k_min, k_max)


@lru_cache(maxsize=32)
def _calibrated_on_demand(k_min: int, k_max: int) -> float:
    return calibrate_alpha(k_min, k_max, trials=20_000, seed=CALIBRATION_SEED)
