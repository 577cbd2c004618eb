"""Robust per-side summaries and the "tail" finding (docs/statistics.md, step 7).

A kernel's runs are summarised by n, median and a robust CV (1.4826 * MAD / median, which a
single 193 s run among 80 s runs does not inflate), with outliers flagged by the modified
z-score of Iglewicz and Hoaglin, |0.6745 (x - median) / MAD| > 3.5. The z-scores are taken on
the log scale so that the same runs are flagged for sec/op and ops/sec.

Outliers are not removed from the comparison (the rank statistics are already robust to them);
they are reported separately. The tail finding looks only at outliers on the *worse* side of
each kernel (slow runs when lower is better): a user feels those, while an unusually fast run
is not a tail anybody suffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

MAD_TO_SIGMA = 1.4826  # MAD * 1.4826 estimates the standard deviation of normal data
MODIFIED_Z_FACTOR = 0.6745  # = 1 / 1.4826
MODIFIED_Z_LIMIT = 3.5
# Worse-side outliers one kernel needs (and more than the other kernel has) before its tail is
# called worse: one slow boot in ten happens to any kernel (at 5% slow runs, 40% of series of
# ten have one), two or more is a pattern worth a reader's attention.
TAIL_MIN_OUTLIERS = 2


@dataclass(frozen=True)
class Outlier:
    """One run flagged by its modified z-score."""

    value: float
    index: int  # 0-based index in the samples as given
    position: int | None  # the run's slot in the session's run order, when the caller gave it
    z: float  # modified z-score on the log scale; > 0: above the side's median


@dataclass(frozen=True)
class SideSummary:
    """What a reader needs to know about one kernel's runs."""

    n: int
    median: float
    robust_cv: float  # 1.4826 * MAD / median, on the raw values
    outliers: tuple[Outlier, ...]  # both directions, in run order
    positions: tuple[int, ...] | None  # run-order slot of every sample, when known

    def worse_outliers(self, higher_is_better: bool) -> tuple[Outlier, ...]:
        """The outliers on the side a user suffers: low values when higher is better."""
        return tuple(o for o in self.outliers if (o.z < 0) == higher_is_better)


class TailKind(StrEnum):
    TAIL_REGRESSION = "tail regression"
    TAIL_IMPROVEMENT = "tail improvement"


@dataclass(frozen=True)
class TailFinding:
    """Worse-side outliers of each kernel, and whether the patch changed the tail."""

    base: tuple[Outlier, ...]
    patched: tuple[Outlier, ...]
    kind: TailKind | None

    def describe(self) -> tuple[str, ...]:
        """E.g. ("2 outliers in B (193.382, 103.189): tail regression",); A is the base."""
        lines = []
        for label, outliers, owns_kind in (
            ("A", self.base, self.kind is TailKind.TAIL_IMPROVEMENT),
            ("B", self.patched, self.kind is TailKind.TAIL_REGRESSION),
        ):
            if not outliers:
                continue
            noun = "outlier" if len(outliers) == 1 else "outliers"
            values = ", ".join(_format_value(o.value) for o in outliers)
            line = f"{len(outliers)} {noun} in {label} ({values})"
            if owns_kind and self.kind is not None:
                line += f": {self.kind.value}"
            lines.append(line)
        return tuple(lines)


def modified_z_scores(values: Sequence[float], log: bool = True) -> np.ndarray:
    """0.6745 (ln x - median) / MAD of ln x, for each value (all > 0); on the values themselves
    when `log` is False (counts that are zero in some runs).

    When more than half the values are equal (MAD = 0) the mean absolute deviation stands in,
    scaled to the same normal sigma (0.7979 = sqrt(2/pi)); when that is 0 too, all scores are 0.
    """
    array = np.asarray(values, dtype=float)
    logs = np.log(array) if log else array
    centre = np.median(logs)
    deviations = logs - centre
    mad = float(np.median(np.abs(deviations)))
    if mad > 0:
        return MODIFIED_Z_FACTOR * deviations / mad
    mean_ad = float(np.mean(np.abs(deviations)))
    if mean_ad > 0:
        return 0.7979 * deviations / mean_ad
    return np.zeros_like(logs)


def robust_cv(values: Sequence[float]) -> float:
    """1.4826 * MAD / median of the raw values (0 for a single value or no spread; +inf for
    a spread around a median of 0)."""
    array = np.asarray(values, dtype=float)
    median = float(np.median(array))
    mad = float(np.median(np.abs(array - median)))
    if mad == 0:
        return 0.0
    return MAD_TO_SIGMA * mad / median if median else float("inf")


def summarize_side(
    values: Sequence[float], positions: Sequence[int] | None = None, log: bool = True
) -> SideSummary:
    """n, median, robust CV and outliers of one kernel's runs (in run order; values > 0, or
    >= 0 with `log` False: outliers are then found on the values themselves)."""
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        raise ValueError("no samples")
    if positions is not None and len(positions) != array.size:
        raise ValueError(f"{len(positions)} positions for {array.size} samples")
    scores = modified_z_scores(array, log=log)
    outliers = tuple(
        Outlier(
            value=float(array[i]),
            index=int(i),
            position=None if positions is None else int(positions[i]),
            z=float(scores[i]),
        )
        for i in np.flatnonzero(np.abs(scores) > MODIFIED_Z_LIMIT)
    )
    return SideSummary(
        n=int(array.size),
        median=float(np.median(array)),
        robust_cv=robust_cv(array),
        outliers=outliers,
        positions=None if positions is None else tuple(int(p) for p in positions),
    )


def tail_finding(base: SideSummary, patched: SideSummary, *, higher_is_better: bool) -> TailFinding:
    """Compare the worse-side outliers of the two kernels (see TAIL_MIN_OUTLIERS)."""
    worse_base = base.worse_outliers(higher_is_better)
    worse_patched = patched.worse_outliers(higher_is_better)
    kind = None
    if len(worse_patched) >= TAIL_MIN_OUTLIERS and len(worse_patched) > len(worse_base):
        kind = TailKind.TAIL_REGRESSION
    elif len(worse_base) >= TAIL_MIN_OUTLIERS and len(worse_base) > len(worse_patched):
        kind = TailKind.TAIL_IMPROVEMENT
    return TailFinding(base=worse_base, patched=worse_patched, kind=kind)


def _format_value(value: float) -> str:
    # Shortest text that reads back as the same float: the number as the author wrote it.
    return repr(float(value))
