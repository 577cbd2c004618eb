"""The claims as written: what was claimed, where, by whom, over how many runs, and the numbers
given (a stated change, a before/after pair, or a table of per-run samples).

Frozen dataclasses; `to_dict()` gives the "claims" entries of the JSON shape documented in
`bot.analysis.claims`, without the judgement (`bot.analysis.claims.judgement` adds it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.analysis.claims.measurement import Measurement
from bot.analysis.claims.text import BodyLine, Speaker


def fmt_value(value: float) -> str:
    """A number as a claim's text and notes write it back: its digits, no float noise."""
    return f"{value:.10g}"


@dataclass(frozen=True)
class StatedChange:
    """A change as the author put it: numbers as written (a sign only where one was written;
    for before/after numbers, the signed change of the number), and the direction in words."""

    low_pct: float
    high_pct: float  # equal to low_pct unless a range ("4-5%") was given
    direction: str | None  # "improvement", "regression", or None when the words do not say

    def to_dict(self) -> dict[str, Any]:
        return {"low_pct": self.low_pct, "high_pct": self.high_pct, "direction": self.direction}

    def describe(self) -> str:
        if self.low_pct == self.high_pct:
            amount = f"{self.low_pct:g}%"
        else:
            amount = f"{self.low_pct:g}-{self.high_pct:g}%"
        return f"{amount} {self.direction}" if self.direction else amount


@dataclass(frozen=True)
class BeforeAfter:
    before_label: str
    before: float
    after_label: str
    after: float
    unit: str | None
    stated_pct: float | None  # the "(+1.5%)" written next to the numbers, if any
    higher_is_better: bool | None

    @property
    def computed_pct(self) -> float:
        return 100.0 * (self.after / self.before - 1.0) if self.before else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "before_label": self.before_label,
            "before": self.before,
            "after_label": self.after_label,
            "after": self.after,
            "unit": self.unit,
            "stated_pct": self.stated_pct,
            "computed_pct": round(self.computed_pct, 4),
            "higher_is_better": self.higher_is_better,
        }


@dataclass(frozen=True)
class TableColumn:
    kernel: str
    header: str
    samples: tuple[float, ...]
    summary: dict[str, float] = field(default_factory=dict)  # avg/std/min/max rows, as printed
    unit: str | None = None  # named by the column's own header ("lat(ms)"), else the table's
    higher_is_better: bool | None = None  # the column's own direction, None: the table's

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.header}".strip()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "header": self.header,
            "samples": list(self.samples),
            "summary": dict(self.summary),
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
        }


@dataclass(frozen=True)
class ResultTable:
    kernels: tuple[str, ...]  # in column order; the first is the base of every comparison
    columns: tuple[TableColumn, ...]
    unit: str | None
    higher_is_better: bool | None
    heading: tuple[BodyLine, ...] = ()  # kernel-name and column-header lines above the runs

    def pairs(self) -> list[tuple[TableColumn, TableColumn]]:
        """(base column, other kernel's column) for every column of a non-base kernel."""
        if len(self.kernels) < 2:
            return []
        base = [c for c in self.columns if c.kernel == self.kernels[0]]
        pairs = []
        for column in self.columns:
            if column.kernel == self.kernels[0]:
                continue
            same = [b for b in base if b.header == column.header]
            if same:
                pairs.append((same[0], column))
            elif len(base) == 1:
                pairs.append((base[0], column))
        return pairs

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernels": list(self.kernels),
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "columns": [c.to_dict() for c in self.columns],
        }


@dataclass(frozen=True)
class Claim:
    """One performance claim as written: what, where, by whom, over how many runs."""

    index: int
    kind: str  # "before-after", "percentage", "table" (per-run samples) or "summary" (per metric)
    text: str  # what was claimed, in one line
    speaker: Speaker
    lines: tuple[BodyLine, ...]
    runs: int | None
    runs_line: BodyLine | None
    benchmarks: tuple[str, ...]
    change: StatedChange | None = None
    before_after: BeforeAfter | None = None
    table: ResultTable | None = None
    refers_to: int | None = None  # a percentage that sums up the table claim with this index
    layout: str | None = None  # "lkp", "mmtests", "perf stat", "runs", "prose", ...
    measurements: tuple[Measurement, ...] = ()  # each metric's base and patched, normalized

    @property
    def first_line(self) -> int:
        return self.lines[0].number

    @property
    def last_line(self) -> int:
        return self.lines[-1].number

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": self.kind,
            "text": self.text,
            "speaker": self.speaker.to_dict(),
            "lines": [line.to_dict() for line in self.lines],
            "runs": self.runs,
            "runs_line": self.runs_line.to_dict() if self.runs_line else None,
            "benchmarks": list(self.benchmarks),
            "change": self.change.to_dict() if self.change else None,
            "before_after": self.before_after.to_dict() if self.before_after else None,
            "table": self.table.to_dict() if self.table else None,
            "refers_to": self.refers_to,
            "layout": self.layout,
            "measurements": [m.to_dict() for m in self.measurements],
        }
