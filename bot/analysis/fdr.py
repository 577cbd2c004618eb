"""False-discovery-rate control across the metrics of one run (Benjamini-Hochberg, 1995).

A run reports dozens of metrics (throughput, latency, /proc/vmstat counters); testing each at
5% would flag one or two by chance in every run. The step-up procedure keeps the expected share
of false "changed" calls among the calls at q, and when nothing changed, the chance of any call
at q. The weighted form (Genovese, Roeder and Wasserman, 2006) gives the benchmark's main
metrics half of that chance, so that forty counters do not drown them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np


def benjamini_hochberg(pvalues: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which hypotheses to reject, in the input order: all with p <= p_(k), where k is the
    largest rank with p_(k) <= k q / m. With one p-value this is simply p <= q."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    if np.any(np.isnan(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    order = np.argsort(p, kind="stable")
    thresholds = q * np.arange(1, m + 1) / m
    passing = np.flatnonzero(p[order] <= thresholds)
    rejected = np.zeros(m, dtype=bool)
    if passing.size:
        rejected[order[: passing[-1] + 1]] = True
    return rejected.tolist()


def family_weights(main: Sequence[str], others: Sequence[str]) -> dict[str, float]:
    """Weights averaging 1: the main metrics share half the family, the others the other half
    (all 1 when one of the groups is empty)."""
    if not main or not others:
        return {name: 1.0 for name in (*main, *others)}
    half = (len(main) + len(others)) / 2
    return {**{n: half / len(main) for n in main}, **{n: half / len(others) for n in others}}


def weighted_step_up(
    pvalues: Mapping[str, float],
    weights: Mapping[str, float],
    q: float,
    level: Callable[[float], float] = lambda share: share,
) -> dict[str, float]:
    """Weighted Benjamini-Hochberg: the largest r such that at least r hypotheses have
    p <= level(q r w / m), and those hypotheses, each with the level it passed at. `level`
    maps a share of the family's error to the test's own level (identity for a single look;
    the calibrated per-look level when the p-values are looked at repeatedly)."""
    m = len(pvalues)
    for r in range(m, 0, -1):
        levels = {name: level(q * r * weights[name] / m) for name in pvalues}
        passing = {name: levels[name] for name, p in pvalues.items() if p <= levels[name]}
        if len(passing) >= r:
            return passing
    return {}
