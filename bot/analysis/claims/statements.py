"""Claims stated in words and lines rather than tables: run counts ("Average result of 18 test
runs"), before/after lines ("Before: 44017.78 Ops/sec" over "After: 44687.08 Ops/sec (+1.5%)"),
"from X to Y" changes, and percentages in sentences that speak of performance."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.analysis.claims.model import StatedChange
from bot.analysis.claims.text import Block, BodyLine, Sentence

# --------------------------------------------------------------------------------------------
# Run counts

_RUNS = [
    re.compile(
        r"\b(\d+)\s+(?:test\s+|benchmark\s+)?(?:runs|iterations|trials|repetitions|rounds)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:measured|mesured|run|ran|repeated|executed|tested)\s+(\d+)\s+times\b", re.IGNORECASE
    ),
    re.compile(r"\b(\d+)\s+times\s+(?:each|per\s+\w+)\b", re.IGNORECASE),
    re.compile(r"\baverag\w*\s+(?:of|over)\s+(\d+)\b", re.IGNORECASE),
    re.compile(r"\bn\s*=\s*(\d+)\b"),
]


@dataclass(frozen=True)
class RunCount:
    runs: int
    line: BodyLine


def find_run_counts(block: Block) -> list[RunCount]:
    """Every run count stated in the block, at most one a line."""
    found = []
    for line in block.lines:
        for pattern in _RUNS:
            match = pattern.search(line.text)
            if match and 2 <= int(match.group(1)) <= 10000:
                found.append(RunCount(int(match.group(1)), line))
                break
    return found


def runs_for(line_number: int, counts: Sequence[RunCount]) -> RunCount | None:
    """The run count stated nearest before the claim in its block, else the first after it."""
    before = [c for c in counts if c.line.number <= line_number]
    if before:
        return before[-1]
    return counts[0] if counts else None


# --------------------------------------------------------------------------------------------
# Before/after lines and "from X to Y"

_BEFORE_WORDS = {
    "before", "base", "baseline", "vanilla", "unpatched", "old", "orig", "original", "without",
    "w/o", "mainline", "upstream", "stock", "unmodified", "pre-patch", "prepatch", "default",
}  # fmt: skip
_AFTER_WORDS = {
    "after", "patched", "patch", "new", "with", "w/", "this", "post-patch", "postpatch",
    "modified", "series", "+patch", "optimized", "fixed",
}  # fmt: skip
NUMBER = r"\d[\d,]*(?:\.\d+)?"
_BA_LINE = re.compile(
    rf"^\s*[-*]?\s*(?P<label>w/o|w/|[A-Za-z][\w.+/-]*(?:[ \t]+(?:patch|kernel|the patch|"
    rf"\(.*?\)|[\w.+-]+))?)\s*(?::|=|\s)\s*(?P<value>{NUMBER})\s*(?P<unit>[A-Za-z][\w/.-]*)?"
    rf"(?P<rest>.*)$"
)
_PCT_IN_PARENS = re.compile(r"\(\s*([-+]?\d+(?:\.\d+)?)\s*%\s*\)|([-+]\d+(?:\.\d+)?)\s*%")
FROM_TO = re.compile(
    rf"\bfrom\s+(?P<a>{NUMBER})\s*(?P<ua>[A-Za-z][\w/.-]*)?\s+to\s+(?P<b>{NUMBER})\s*"
    rf"(?P<ub>[A-Za-z][\w/.-]*)?|(?P<a2>{NUMBER})\s*(?P<ua2>[A-Za-z][\w/.-]*)?\s*(?:->|→|=>)\s*"
    rf"(?P<b2>{NUMBER})\s*(?P<ub2>[A-Za-z][\w/.-]*)?"
)


@dataclass(frozen=True)
class LabelledValue:
    """One side of a before/after pair: "After:  44687.08 Ops/sec (+1.5%)"."""

    line: BodyLine
    side: str  # "before" or "after"
    label: str
    value: float
    unit: str | None
    stated_pct: float | None


def parse_number(text: str) -> float:
    """A number as written in a claim, thousands separators allowed ("44,017.78")."""
    return float(text.replace(",", ""))


def _labelled_value(line: BodyLine) -> LabelledValue | None:
    match = _BA_LINE.match(line.text)
    if not match:
        return None
    label = match.group("label").strip()
    first = label.lower().split()[0]
    side = "before" if first in _BEFORE_WORDS else "after" if first in _AFTER_WORDS else None
    if side is None:
        return None
    rest = match.group("rest") or ""
    # A sentence ("with 16 threads on ...") is not a result line.
    if len(re.findall(r"[A-Za-z]{3,}", rest)) > 3:
        return None
    pct = _PCT_IN_PARENS.search(rest)
    stated = None
    if pct:
        stated = float(pct.group(1) or pct.group(2))
    unit = match.group("unit")
    return LabelledValue(
        line, side, label.rstrip(":"), parse_number(match.group("value")), unit, stated
    )


def before_after_pairs(block: Block, skip: set[int]) -> list[tuple[LabelledValue, LabelledValue]]:
    """A "before" line followed within three lines by an "after" line in the same unit."""
    values = []
    for line in block.lines:
        if line.number in skip or not line.text.strip():
            continue
        values.append(_labelled_value(line))
    pairs = []
    i = 0
    while i < len(values) - 1:
        first, second = values[i], values[i + 1]
        if (
            first
            and second
            and first.side == "before"
            and second.side == "after"
            and second.line.number - first.line.number <= 3
            and (not first.unit or not second.unit or first.unit.lower() == second.unit.lower())
        ):
            pairs.append((first, second))
            i += 2
            continue
        i += 1
    return pairs


# --------------------------------------------------------------------------------------------
# Percentages in sentences

_PERCENT = re.compile(
    r"(?<![\w.])(?P<lo>[-+]?\d+(?:\.\d+)?)\s*%?\s*(?:-|–|~|to)\s*(?P<hi>\d+(?:\.\d+)?)\s*%"
    r"|(?<![\w.])(?P<one>[-+]?\d+(?:\.\d+)?)\s*%"
)
_IMPROVEMENT = re.compile(
    r"\b(?:improv\w*|gain\w*|faster|speed-?ups?|boost\w*|better|increas\w*|higher throughput)\b",
    re.IGNORECASE,
)
_REGRESSION = re.compile(
    r"\b(?:regress\w*|degrad\w*|degress\w*|slow(?:er|down|s down)|worse|loss|lose|lost|drops?|"
    r"dropped|overhead|penalty)\b",
    re.IGNORECASE,
)
PERFORMANCE = re.compile(
    r"\b(?:performance|throughput|latency|benchmark\w*|ops|runtime|run time|bandwidth|score|"
    r"speed|reduc\w*|decreas\w*)\b",
    re.IGNORECASE,
)


def _direction(text: str) -> str | None:
    better, worse = bool(_IMPROVEMENT.search(text)), bool(_REGRESSION.search(text))
    if better == worse:
        return None
    return "improvement" if better else "regression"


def percentages(sentence: Sentence) -> list[StatedChange]:
    """The percentages of a sentence that speaks of performance, with the direction its words
    give; none for a row of numbers that only looks like a sentence."""
    if not (
        _IMPROVEMENT.search(sentence.text)
        or _REGRESSION.search(sentence.text)
        or PERFORMANCE.search(sentence.text)
    ):
        return []
    # Rows of numbers (compare-kernels output and the like) are tables, not sentences.
    words = len(re.findall(r"[A-Za-z]{3,}", sentence.text))
    if len(re.findall(NUMBER, sentence.text)) > 4 and words < 4:
        return []
    direction = _direction(sentence.text)
    found = []
    for match in _PERCENT.finditer(sentence.text):
        if match.group("one") is not None:
            low = high = float(match.group("one"))
        else:
            low, high = float(match.group("lo")), float(match.group("hi"))
        found.append(StatedChange(min(low, high), max(low, high), direction))
    return found
