"""Simulate the verdict rule against the rules other kernel bots use (docs/statistics.md).

Each trial draws up to k_max boots per kernel with log-normal noise (CV 2% by default), of which
5% are slowed by a factor uniform in 1.2..2.5 (a slow boot, a noisy neighbour), and the patched
kernel's values multiplied by 1 + effect (a time: larger is a regression). For no effect, +1.5%
and +5% it reports, on the same simulated data:
- lorelab's sequential rule (bot.analysis.verdict.decide_after_pair, called after every pair
  from k_min on, exactly as the bench stage calls it);
- the same rank test at a fixed 10 runs and alpha 0.05 (bot.analysis.verdict.compare);
- the lkp-tests rule at 10 runs (lib/stats.rb, lib/changed_stat.rb: trim size >> 5 samples at each
  end, at most 3; "mean" is the middle sorted value; changed when min_b > median_a and
  median_b > max_a, or the mirror, and the ratio of the medians exceeds 1.01);
- Welch's t-test at 10 runs, p <= 0.05 on the raw values.

Run: .venv/bin/python bench/verdicts.py [--trials 1000] [--seed N]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from machine import describe
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.analysis.calibration import sequential_alpha  # noqa: E402
from bot.analysis.verdict import Verdict, compare, decide_after_pair  # noqa: E402

FIXED_RUNS = 10
EFFECTS = (0.0, 0.015, 0.05)


@dataclass(frozen=True)
class Noise:
    cv: float = 0.02
    slow_share: float = 0.05
    slow_low: float = 1.2
    slow_high: float = 2.5


@dataclass(frozen=True)
class Outcome:
    """Per-trial results of one method on one scenario."""

    regression: np.ndarray  # bool: declared the patched kernel slower
    improvement: np.ndarray  # bool: declared it faster
    pairs: np.ndarray  # pairs used
    estimate_pct: np.ndarray  # reported change in percent
    verdicts: np.ndarray | None = None  # lorelab's Verdict per trial, for the rank-based rules


def simulate_times(
    rng: np.random.Generator, trials: int, runs: int, effect: float, noise: Noise
) -> tuple[np.ndarray, np.ndarray]:
    """(base, patched) run times, each trials x runs, in run order."""
    sigma = np.sqrt(np.log1p(noise.cv**2))  # log-normal with the requested CV

    def one_kernel(scale: float) -> np.ndarray:
        values = scale * np.exp(rng.normal(0.0, sigma, size=(trials, runs)))
        slow = rng.random((trials, runs)) < noise.slow_share
        factors = rng.uniform(noise.slow_low, noise.slow_high, size=(trials, runs))
        return np.where(slow, values * factors, values)

    return one_kernel(1.0), one_kernel(1.0 + effect)


def sequential_rule(
    base: np.ndarray, patched: np.ndarray, k_min: int, k_max: int, delta: float
) -> Outcome:
    trials = base.shape[0]
    verdicts = np.empty(trials, dtype=object)
    pairs = np.empty(trials, dtype=int)
    estimates = np.empty(trials)
    for t in range(trials):
        for k in range(k_min, k_max + 1):
            result = decide_after_pair(
                base[t, :k],
                patched[t, :k],
                higher_is_better=False,
                delta=delta,
                k_min=k_min,
                k_max=k_max,
            )
            if result.stopped:
                break
        verdicts[t], pairs[t], estimates[t] = result.verdict, k, result.change_pct
    return Outcome(
        regression=verdicts == Verdict.REGRESSION,
        improvement=verdicts == Verdict.IMPROVEMENT,
        pairs=pairs,
        estimate_pct=estimates,
        verdicts=verdicts,
    )


def fixed_rank_test(base: np.ndarray, patched: np.ndarray, delta: float) -> Outcome:
    results = [
        compare(a[:FIXED_RUNS], b[:FIXED_RUNS], higher_is_better=False, delta=delta)
        for a, b in zip(base, patched, strict=True)
    ]
    verdicts = np.array([r.verdict for r in results], dtype=object)
    return Outcome(
        regression=verdicts == Verdict.REGRESSION,
        improvement=verdicts == Verdict.IMPROVEMENT,
        pairs=np.full(len(results), FIXED_RUNS),
        estimate_pct=np.array([r.change_pct for r in results]),
        verdicts=verdicts,
    )


def lkp_rule(base: np.ndarray, patched: np.ndarray) -> Outcome:
    """lkp-tests' range rule, vectorised over trials (see the module docstring)."""
    a = np.sort(base[:, :FIXED_RUNS], axis=1)
    b = np.sort(patched[:, :FIXED_RUNS], axis=1)
    margin = min(FIXED_RUNS >> 5, 3)  # sort_remove_margin with max_margin 3 for perf stats
    a, b = a[:, margin : FIXED_RUNS - margin], b[:, margin : FIXED_RUNS - margin]
    size = a.shape[1]
    min_a, mid_a, max_a = a[:, 0], a[:, size // 2], a[:, -1]
    min_b, mid_b, max_b = b[:, 0], b[:, size // 2], b[:, -1]
    ratio = np.maximum(mid_a, mid_b) / np.minimum(mid_a, mid_b)
    big_enough = ratio > 1.01
    higher_b = (min_b > mid_a) & (mid_b > max_a) & big_enough
    higher_a = (min_a > mid_b) & (mid_a > max_b) & big_enough
    return Outcome(
        regression=higher_b,
        improvement=higher_a,
        pairs=np.full(base.shape[0], FIXED_RUNS),
        estimate_pct=100.0 * (mid_b / mid_a - 1.0),
    )


def welch_t_test(base: np.ndarray, patched: np.ndarray, alpha: float = 0.05) -> Outcome:
    a, b = base[:, :FIXED_RUNS], patched[:, :FIXED_RUNS]
    result = stats.ttest_ind(b, a, axis=1, equal_var=False)
    significant = result.pvalue <= alpha
    return Outcome(
        regression=significant & (result.statistic > 0),
        improvement=significant & (result.statistic < 0),
        pairs=np.full(base.shape[0], FIXED_RUNS),
        estimate_pct=100.0 * (b.mean(axis=1) / a.mean(axis=1) - 1.0),
    )


def _pct(share: float) -> str:
    return f"{100 * share:5.1f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--k-min", type=int, default=5)
    parser.add_argument("--k-max", type=int, default=30)
    parser.add_argument("--delta", type=float, default=0.01)
    parser.add_argument("--cv", type=float, default=0.02)
    args = parser.parse_args(argv)
    noise = Noise(cv=args.cv)
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)

    methods = (
        f"lorelab sequential (k {args.k_min}..{args.k_max})",
        "rank test, fixed 10 runs, alpha 0.05",
        "lkp-tests range rule, 10 runs",
        "Welch t-test, 10 runs",
    )
    outcomes: dict[str, dict[float, Outcome]] = {name: {} for name in methods}
    for effect in EFFECTS:
        base, patched = simulate_times(rng, args.trials, args.k_max, effect, noise)
        outcomes[methods[0]][effect] = sequential_rule(
            base, patched, args.k_min, args.k_max, args.delta
        )
        outcomes[methods[1]][effect] = fixed_rank_test(base, patched, args.delta)
        outcomes[methods[2]][effect] = lkp_rule(base, patched)
        outcomes[methods[3]][effect] = welch_t_test(base, patched)
    elapsed = time.perf_counter() - started

    print(f"machine: {describe()}, numpy {np.__version__}")
    print(
        f"{args.trials} trials per scenario, seed {args.seed}; noise: log-normal CV "
        f"{100 * noise.cv:g}%, {100 * noise.slow_share:g}% of runs slowed x"
        f"{noise.slow_low:g}-{noise.slow_high:g}; delta {100 * args.delta:g}%; "
        f"alpha' per look {sequential_alpha(args.k_min, args.k_max):.5f}"
    )
    print()
    header = (
        f"{'method':<38} {'false pos.':>10} {'det. +1.5%':>10} {'det. +5%':>9} "
        f"{'pairs (0/1.5/5%)':>18} {'est. when found +1.5/+5%':>25}"
    )
    print(header)
    print("-" * len(header))
    for name in methods:
        null, small, large = (outcomes[name][e] for e in EFFECTS)
        false_positive = np.mean(null.regression | null.improvement)
        pairs = "/".join(f"{o.pairs.mean():.1f}" for o in (null, small, large))
        found = []
        for outcome in (small, large):
            hits = outcome.regression
            found.append(f"{outcome.estimate_pct[hits].mean():+.2f}%" if hits.any() else "n/a")
        print(
            f"{name:<38} {_pct(false_positive):>10} {_pct(small.regression.mean()):>10} "
            f"{_pct(large.regression.mean()):>9} {pairs:>18} {' / '.join(found):>25}"
        )
    print()
    sequential = outcomes[methods[0]]
    null, large = sequential[0.0], sequential[0.05]
    se = np.sqrt(0.05 * 0.95 / args.trials)
    checks = [
        (
            "false positives <= 5%",
            np.mean(null.regression | null.improvement) <= 0.05,
            f"{_pct(np.mean(null.regression | null.improvement))} (MC s.e. {100 * se:.1f} pts)",
        ),
        (
            "5% effect detected in >= 95%",
            large.regression.mean() >= 0.95,
            _pct(large.regression.mean()),
        ),
        (
            "5% effect: <= 8 pairs on average",
            large.pairs.mean() <= 8,
            f"{large.pairs.mean():.2f} pairs",
        ),
    ]
    for label, ok, figure in checks:
        print(f"target {label:<34} {'met' if ok else 'MISSED':<7} {figure}")
    counts = []
    for verdict in (Verdict.NO_CHANGE, Verdict.INCONCLUSIVE, Verdict.IMPROVEMENT):
        per_effect = "/".join(str(int(np.sum(o.verdicts == verdict))) for o in sequential.values())
        counts.append(f"{verdict.value} {per_effect}")
    print("sequential verdict counts (no effect/+1.5%/+5%): " + "; ".join(counts))
    print(f"run time: {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
