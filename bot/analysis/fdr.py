"""False-discovery-rate control across the metrics of one run (Benjamini-Hochberg, 1995).

A run reports dozens of metrics (throughput, latency, /proc/vmstat counters); testing each at
5% would flag one or two by chance in every run. The step-up procedure keeps the expected share
of false "changed" calls among the calls at q.
"""

from __future__ import annotations

from collections.abc import Sequence

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
