"""Metrics whose numbers moved but that the author's words do not mention.

A result table often carries more than the headline: kernbench's user time rising 15% beside
the elapsed time falling 22% the author wrote about. Every measurement that its numbers show
changed (or, when they cannot be judged, moved by 5% or more) and that has a known direction is
listed when no sentence of the message names it. Monitors' counters (neutral direction) are left
out: lkp prints dozens of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.analysis.claims.judgement import JudgedClaim
from bot.analysis.claims.text import message_blocks, sentences

# A change this large (percent) is worth listing even when the numbers cannot judge it.
UNJUDGED_MOVE_PCT = 5.0
_CHANGED = {"improvement", "regression", "increase", "decrease"}
_GENERIC = {"time", "mean", "avg", "average", "total", "per", "the", "ops", "sec", "secs", "value"}


@dataclass(frozen=True)
class Unmentioned:
    claim: int  # the index of the claim holding the measurement
    metric: str
    change_pct: float
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "metric": self.metric,
            "change_pct": round(self.change_pct, 4),
            "verdict": self.verdict,
        }


def _words(name: str) -> set[str]:
    words = re.split(r"[^a-z0-9]+", name.lower())
    return {w for w in words if len(w) >= 3 and re.search("[a-z]", w)} - _GENERIC


def find_unmentioned(
    judged: Sequence[JudgedClaim], body: str, sender: str = ""
) -> list[Unmentioned]:
    """Measurements that moved, of a known direction, named in no sentence of the message."""
    tables = {
        line.number
        for item in judged
        if item.claim.kind in ("table", "summary")
        for line in item.claim.lines
    }
    prose = " ".join(
        s.text.lower()
        for block in message_blocks(body, sender)
        for s in sentences(block, skip=tables)
    )
    prose_words = set(re.split(r"[^a-z0-9]+", prose))
    found = []
    for item in judged:
        pairs = zip(item.claim.measurements, item.judgement.measurements, strict=False)
        for m, j in pairs:
            change = m.change_pct
            if change is None or m.higher_is_better is None:
                continue
            if item.claim.layout == "side blocks" and m.stated_pct is not None:
                continue  # its change is in the author's words: "After: (-54.7% sys time)"
            moved = j.verdict in _CHANGED or (
                j.status != "judged" and abs(change) >= UNJUDGED_MOVE_PCT
            )
            words = _words(m.metric)
            if moved and words and not words & prose_words:
                found.append(Unmentioned(item.claim.index, m.metric, change, j.verdict))
    return found
