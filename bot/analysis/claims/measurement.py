"""One metric as a message reports it for two kernels: the normalized record every layout reads
into, whatever tool printed it.

A `Measurement` holds the base and patched values (means, or the tool's summary such as mmtests'
Hmean), runs per side when known, the per-run spread as a coefficient of variation in percent
(converted from whatever the tool printed: lkp's %stddev is already one, mmtests' Stddev row is
divided by its mean, perf stat's "+- x%" is a standard error of the mean, times sqrt(runs)), whether
higher is better, and what the author or tool stated beside the numbers (a change, a mark of
significance, an interval, a p-value). `bench/claims.py` scores extraction on the tuple
(metric, base, patched, n, spread, direction).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.analysis.claims.text import BodyLine


def cv_pct(samples: Sequence[float]) -> float | None:
    """Sample standard deviation over the mean, in percent; None below two runs."""
    if len(samples) < 2:
        return None
    mean = sum(samples) / len(samples)
    if mean == 0:
        return None
    var = sum((x - mean) ** 2 for x in samples) / (len(samples) - 1)
    return 100.0 * math.sqrt(var) / abs(mean)


def direction_word(higher: bool | None) -> str | None:
    return None if higher is None else ("higher" if higher else "lower")


@dataclass(frozen=True)
class Measurement:
    metric: str
    base: float | None
    patched: float | None
    unit: str | None = None
    n_base: int | None = None
    n_patched: int | None = None
    cv_base_pct: float | None = None  # per-run relative standard deviation, percent
    cv_patched_pct: float | None = None
    spread_source: str | None = None  # what the tool printed: "samples", "lkp %stddev", ...
    # A tool that prints no spread when it is small (lkp: 2% or less) leaves a side's CV blank;
    # this is the largest CV such a blank can stand for.
    cv_blank_max_pct: float | None = None
    higher_is_better: bool | None = None
    stated_pct: float | None = None  # the change printed beside the numbers
    stated_kind: str | None = None  # "relative", "points" (lkp on % metrics), "gain" (mmtests)
    marked_significant: bool | None = None  # mmtests' *x%*; None when the tool marks nothing
    stated_ci_pct: tuple[float, float] | None = None  # an interval the author gave
    stated_p: float | None = None
    samples_base: tuple[float, ...] = ()
    samples_patched: tuple[float, ...] = ()
    base_label: str = "base"
    patched_label: str = "patched"
    line: BodyLine | None = None

    @property
    def n(self) -> int | None:
        """Runs per side as one number: the smaller side's count when both are known."""
        known = [k for k in (self.n_base, self.n_patched) if k is not None]
        return min(known) if known else None

    @property
    def change_pct(self) -> float | None:
        """100 (patched / base - 1): the relative change of the values shown."""
        if self.base is None or self.patched is None or self.base == 0:
            return None
        return 100.0 * (self.patched / self.base - 1.0)

    @property
    def has_spread(self) -> bool:
        return self.cv_base_pct is not None or self.cv_patched_pct is not None

    def to_dict(self) -> dict[str, Any]:
        change = self.change_pct
        return {
            "metric": self.metric,
            "unit": self.unit,
            "base_label": self.base_label,
            "patched_label": self.patched_label,
            "base": self.base,
            "patched": self.patched,
            "change_pct": None if change is None else round(change, 4),
            "n_base": self.n_base,
            "n_patched": self.n_patched,
            "cv_pct": [_rounded(self.cv_base_pct), _rounded(self.cv_patched_pct)],
            "spread_source": self.spread_source,
            "cv_blank_max_pct": self.cv_blank_max_pct,
            "direction": direction_word(self.higher_is_better),
            "stated_pct": self.stated_pct,
            "stated_kind": self.stated_kind,
            "marked_significant": self.marked_significant,
            "stated_ci_pct": list(self.stated_ci_pct) if self.stated_ci_pct else None,
            "stated_p": self.stated_p,
            "samples_base": list(self.samples_base),
            "samples_patched": list(self.samples_patched),
            "line": self.line.number if self.line else None,
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
