"""Which pairs of a metric can be judged, on which scale, and which metrics repeat another
(docs/statistics.md, "Values that cannot be compared").

- A value that is NaN, infinite or negative is left out with its reason, and its pair with it
  (for that metric only): one bad sample does not stop the benchmark's judgement.
- A pair's difference is taken on logs (a ratio, the same for sec/op and ops/sec), unless the
  metric is zero in some valid run: then on the values themselves (a counter that goes from 0 to
  500 is news, not "not compared").
- A metric whose per-pair differences are exactly those of another metric, or their negatives
  (seconds beside MB/s of the same run), carries no new information: it is judged with that one
  (`derived_sources`) rather than counted twice in the family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

# Two metrics are one when their per-pair differences agree to this share of their spread
# (values printed to 4-5 significant digits still match; unrelated metrics do not), or to what
# printing their values can move them by: "seconds: %.3f" beside the ops/s a program computed
# from the unrounded time, whose 0.093 s carry half a percent of rounding. A metric printed so
# coarsely that rounding alone spans more than ROUNDING_LIMIT of the spread is not matched.
DERIVED_TOLERANCE = 0.01
ROUNDING_LIMIT = 0.1


class PairedValues(Protocol):
    name: str
    base: tuple[float | None, ...]
    patched: tuple[float | None, ...]
    main: bool
    base_positions: tuple[int, ...] | None
    patched_positions: tuple[int, ...] | None


@dataclass(frozen=True)
class Screened:
    """A metric's valid pairs among the first k."""

    name: str
    main: bool
    base: np.ndarray
    patched: np.ndarray
    base_positions: tuple[int, ...] | None
    patched_positions: tuple[int, ...] | None
    scale: str  # "log" or "absolute"
    differences: np.ndarray  # per valid pair, on `scale`
    rejected: tuple[str, ...]  # "nan in B, pair 3"; "no value in A, pair 4"

    def empty(self) -> Screened:
        """A placeholder with one zero pair, for a metric whose every pair was left out."""
        zero = np.zeros(1)
        return replace(self, base=zero + 1, patched=zero + 1, base_positions=None,
                       patched_positions=None, differences=zero)


def screen(metric: PairedValues, pairs: int) -> Screened:
    """The valid pairs among the metric's first `pairs`, with the reason for each left out."""
    base = metric.base[:pairs]
    patched = metric.patched[:pairs]
    keep = []
    rejected = []
    for index, (a, b) in enumerate(zip(base, patched, strict=True)):
        reasons = [r for r in (_problem(a, "A", index), _problem(b, "B", index)) if r]
        if reasons:
            rejected.extend(reasons)
        else:
            keep.append(index)
    a = np.array([base[i] for i in keep], dtype=float)
    b = np.array([patched[i] for i in keep], dtype=float)
    absolute = bool(a.size) and (np.any(a == 0) or np.any(b == 0))
    differences = b - a if absolute else np.log(b) - np.log(a) if a.size else np.empty(0)
    return Screened(
        name=metric.name,
        main=metric.main,
        base=a,
        patched=b,
        base_positions=_positions(metric.base_positions, keep),
        patched_positions=_positions(metric.patched_positions, keep),
        scale="absolute" if absolute else "log",
        differences=differences,
        rejected=tuple(rejected),
    )


def derived_sources(metrics: list[Screened]) -> dict[str, str]:
    """{metric: the metric it repeats}, for metrics whose per-pair differences equal another's
    or their negatives; main metrics are the sources when they can be."""
    ordered = sorted(metrics, key=lambda m: not m.main)
    rounding = {m.name: _rounding(m) for m in metrics if m.scale == "log"}
    sources: dict[str, str] = {}
    kept: list[Screened] = []
    for metric in ordered:
        source = next((k.name for k in kept if _repeats(metric, k, rounding)), None)
        if source is None:
            kept.append(metric)
        else:
            sources[metric.name] = source
    return sources


def _repeats(metric: Screened, other: Screened, rounding: dict[str, np.ndarray]) -> bool:
    if metric.scale != "log" or other.scale != "log" or metric.rejected != other.rejected:
        return False
    d, e = metric.differences, other.differences
    if d.size < 2 or d.size != e.size:
        return False
    spread = float(np.max(np.abs(e)))
    slack = np.maximum(DERIVED_TOLERANCE * spread, rounding[metric.name] + rounding[other.name])
    if (spread == 0 or min(abs(d[0] - e[0]), abs(d[0] + e[0])) > slack[0]
            or float(np.max(slack)) > ROUNDING_LIMIT * spread):
        return False
    return bool(np.all(np.abs(d - e) <= slack) or np.all(np.abs(d + e) <= slack))


def _rounding(metric: Screened) -> np.ndarray:
    """Per pair, how far printing the values can have moved the log difference: half the
    printed step of each value, relative to it (the step: the largest power of ten that every
    value is a multiple of; 0 when they carry a double's full precision)."""
    values = np.concatenate([metric.base, metric.patched])
    step = next((10.0 ** p for p in range(12, -10, -1) if _multiples(values, 10.0 ** p)), 0.0)
    return step / 2 * (1 / metric.base + 1 / metric.patched)


def _multiples(values: np.ndarray, step: float) -> bool:
    """Every (positive) value a nonzero whole multiple of `step`, to a double's precision."""
    scaled = values / step
    whole = np.round(scaled)
    return bool(np.all(whole > 0) and np.all(np.abs(scaled - whole) <= 1e-12 * scaled))


def _problem(value: float | None, kernel: str, index: int) -> str | None:
    where = f"in {kernel}, pair {index + 1}"
    if value is None:
        return f"no value {where}"
    if math.isnan(value):
        return f"nan {where}"
    if math.isinf(value):
        return f"{'+' if value > 0 else '-'}inf {where}"
    if value < 0:
        return f"negative value {value:g} {where}"
    return None


def _positions(positions: tuple[int, ...] | None, keep: list[int]) -> tuple[int, ...] | None:
    return None if positions is None else tuple(positions[i] for i in keep)
