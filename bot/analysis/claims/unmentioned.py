"""Metrics whose numbers moved but that the author's words do not mention.

A result table often carries more than the headline: kernbench's user time rising 15% beside
the elapsed time falling 22% the author wrote about. Every measurement that its numbers show
changed (or, when they cannot be judged, moved by 5% or more) and that has a known direction is
listed when no sentence of the message names it, beside a metric of the same claim that one
does. Monitors' counters (neutral direction) are left out: lkp prints dozens of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.analysis.claims.judgement import JudgedClaim
from bot.analysis.claims.measurement import Measurement
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
    # The figures a sentence states: "reduces system CPU usage by 69.16%" names mmtests'
    # syst-256 row by its change, though not by its name.
    stated = [c.change.low_pct for c in (item.claim for item in judged)
              if c.kind == "percentage" and c.change is not None
              and c.change.low_pct == c.change.high_pct]  # fmt: skip
    found = []
    for item in judged:
        # Beside what the author wrote about: a table none of whose metrics the words name is
        # what the author shows as a whole ("The overall impact on latencies is" over mmtests'
        # fault-both-3 ... fault-both-32), not a change kept quiet.
        said = [_named(m, item.claim.layout, prose_words, stated)
                for m in item.claim.measurements]  # fmt: skip
        if not any(said):
            continue
        pairs = zip(item.claim.measurements, item.judgement.measurements, said, strict=False)
        for m, j, named in pairs:
            change = m.change_pct
            if change is None or m.higher_is_better is None or named:
                continue
            moved = j.verdict in _CHANGED or (
                j.status != "judged" and abs(change) >= UNJUDGED_MOVE_PCT
            )
            if moved and _words(m.metric):
                found.append(Unmentioned(item.claim.index, m.metric, change, j.verdict))
    return found


def _named(
    m: Measurement, layout: str | None, prose_words: set[str], stated: Sequence[float]
) -> bool:
    """Whether the author's words name the measurement: in a sentence, by the figure of its
    change a sentence states, or as a change a side block's heading states ("After: (-54.7% sys
    time)", a line of the block's own claim)."""
    return (
        bool(_words(m.metric) & prose_words)
        or any(_gives(m, pct) for pct in stated)
        or (layout == "side blocks" and m.stated_pct is not None)
    )


def _gives(m: Measurement, pct: float) -> bool:
    """Whether a stated percentage is the measurement's change: the same figure to 1%, or, for a
    factor ("nine times faster", +800%), the ratio of its values to 10%."""
    change = m.change_pct
    if change is None:
        return False
    if abs(abs(change) - abs(pct)) <= max(0.05, 0.01 * abs(pct)):
        return True
    if pct < 100 or not m.base or not m.patched:
        return False
    ratio, factor = max(m.patched / m.base, m.base / m.patched), 1.0 + pct / 100.0
    return abs(ratio - factor) <= 0.1 * factor
