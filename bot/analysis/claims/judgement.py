"""What a claim's own data supports, as reported: the judgement of one claim, and of each table
column against the base kernel's, with the "judgement" part of the JSON shape documented in
`bot.analysis.claims`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.analysis.claims.judge_measurement import MeasurementJudgement, significant
from bot.analysis.claims.model import Claim
from bot.analysis.verdict import Comparison


@dataclass(frozen=True)
class ColumnJudgement:
    """One table column of a non-base kernel judged against the base kernel's same column."""

    label: str  # e.g. "this patch 125"
    base: str  # e.g. "2.6.28-rc6 125"
    patched: str
    comparison: Comparison
    direction_known: bool  # False: judged as if higher were better, words say increase/decrease
    notes: tuple[str, ...]
    alone: Comparison | None = None  # the column judged on its own, before the table's BH

    @property
    def demoted(self) -> bool:
        """Significant on its own, but not once the table's columns are held together."""
        return self.alone is not None and self.alone.changed and not self.comparison.changed

    @property
    def words(self) -> str:
        return _neutral(self.comparison.words, self.direction_known)

    @property
    def description(self) -> str:
        """E.g. "-2.93% [-5.47%, -0.29%] p=0.043 improvement (may be < 1%)"."""
        return _neutral(self.comparison.describe(), self.direction_known)

    @property
    def line(self) -> str:
        """E.g. "this patch 125: -2.93% [-5.47%, -0.29%] p=0.043 improvement (may be < 1%)"."""
        return f"{self.label}: {self.description}"

    def to_dict(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "label": self.label,
            "base": self.base,
            "patched": self.patched,
            "n_base": c.base.n,
            "n_patched": c.patched.n,
            "mean_pct": round(c.mean_change_pct, 4),
            "median_pct": round(c.median_change_pct, 4),
            "hl_pct": round(c.change_pct, 4),
            "ci_pct": [_finite(c.ci_low_pct), _finite(c.ci_high_pct)],
            "p_value": significant(c.pvalue),
            "verdict": self.words,
            "verdict_kind": c.verdict.value,
            "verdict_alone": _neutral((self.alone or c).words, self.direction_known),
            "fdr_demoted": self.demoted,
            "outliers_base": [o.value for o in c.base.outliers],
            "outliers_patched": [o.value for o in c.patched.outliers],
            "notes": list(self.notes),
            "line": self.line,
        }


@dataclass(frozen=True)
class Judgement:
    status: str  # "judged", "needs-spread", "no-data", "see-table" or "no-comparison"
    summary: str
    cv_threshold_pct: float | None = None
    comparisons: tuple[ColumnJudgement, ...] = ()
    notes: tuple[str, ...] = ()
    measurements: tuple[MeasurementJudgement, ...] = ()  # one per claim.measurements entry

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "summary": self.summary,
            "cv_threshold_pct": (
                round(self.cv_threshold_pct, 3) if self.cv_threshold_pct is not None else None
            ),
            "comparisons": [c.to_dict() for c in self.comparisons],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class JudgedClaim:
    claim: Claim
    judgement: Judgement

    def to_dict(self) -> dict[str, Any]:
        data = {**self.claim.to_dict(), "judgement": self.judgement.to_dict()}
        for entry, judged in zip(data["measurements"], self.judgement.measurements, strict=False):
            entry["judgement"] = judged.to_dict()
        return data


def level_pct(alpha: float) -> str:
    """A significance level as judgements write it: 0.05 -> "5%"."""
    return f"{100 * alpha:g}%"


def _neutral(text: str, direction_known: bool) -> str:
    if direction_known:
        return text
    return text.replace("improvement", "increase").replace("regression", "decrease")


def _finite(value: float) -> float | None:
    return None if value != value or value in (float("inf"), float("-inf")) else round(value, 4)
