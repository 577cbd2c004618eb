"""Before/after blocks: a line naming one kernel, the metrics measured on it under that line,
then a line naming the other kernel with the same metrics under it, read into measurements.

    Before:                                      SSD swap 10 runs average:
    Sys time: 73578.30, Real time: 864.05        With:
    ...                                          user    2929.064
    After: (-54.7% sys time, -49.3% real time)   system  1479.381 : 1376.89 1398.22 ...
    Sys time: 33314.76, Real time: 437.67        real    1441.324
                                                 Without:
                                                 user    2910.872 ...

A heading is a side's name alone on its line ("Before:", "Without:", "w/o patch:", "The old
scheme:", "== without async reclaim =="), with a remark after the colon that holds no value of
its own (the changes a remark states, "-54.7% sys time", are the author's for the metrics they
name), or with the side's metrics on that line ("Before: sys time: 6121.0s  64kB/swpout:
1638155"). Under a heading alone, each line holds `name: value` pairs (commas between them), one
`name  value` (`real  0m13.460s`, a time in minutes and seconds read as seconds), or a mean and
its spread over the runs (`real: mean: 125.1s, stdev: 0.12s`, `avg: 11.23s, stddev: 0.06`); a
value followed by `:` and more numbers, on that line and the lines after it, is given with its
runs. Two headings of opposite sides in one block make a pair, whichever comes first (several
"after" headings under one "before": `side_pairs`); a metric is compared when both sides name
it. Kairui Song's swap allocator cover letter (linux-mm, 2024) and Chris Li's mTHP swap series
were read as nothing but their stated percentages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.analysis.claims.benchmarks import metric_higher_is_better
from bot.analysis.claims.measurement import Measurement, cv_pct
from bot.analysis.claims.numbers import (
    NUMBER,
    Budget,
    minutes_seconds,
    normalize_text,
    to_float,
)
from bot.analysis.claims.side_pairs import Found, pair_sides, scan_sides
from bot.analysis.claims.statements import side_of_label
from bot.analysis.claims.text import Block, BodyLine

_HEADING = re.compile(r"^\s*(?P<label>[A-Za-z+/][\w+/ .-]{0,30}?)\s*:\s*(?P<rest>.*)$")
# "== without async reclaim ==": a heading between rules, no colon
_RULED = re.compile(
    r"^\s*(?P<rule>==+|--+|\*\*+)\s*(?P<label>[A-Za-z+/][\w+/ .-]{0,40}?)\s*(?P=rule)\s*$"
)
_NAME = r"[A-Za-z][\w/.-]*(?: [A-Za-z][\w/.-]*){0,3}"
_MINSEC = r"\d+m\d+(?:\.\d+)?s"
_VALUE = rf"(?P<value>{_MINSEC}|{NUMBER})\s*(?P<unit>[A-Za-z%][\w/%]*)?"
_PAIR = re.compile(rf"(?P<name>{_NAME})\s*:\s*{_VALUE}\s*(?:,|$)")
_SPACED = re.compile(rf"^\s*(?P<name>{_NAME})\s+{_VALUE}(?:\s*:\s*(?P<runs>[\d.\s]+))?\s*$")
_NUMBERS = re.compile(r"^\s*\d+(?:\.\d+)?(?:\s+\d+(?:\.\d+)?)*\s*$")
_STATED = re.compile(r"(?P<pct>[-+]?\d+(?:\.\d+)?)\s*%\s+(?P<name>[A-Za-z][\w ]*?)\s*(?=[,)]|$)")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
# One metric of several on a line: "sys time: 6121.0s", "swpout:449548", "sys time 5527.9s".
_INLINE = re.compile(
    rf"\s*(?P<name>[A-Za-z0-9][\w/.-]*(?: [A-Za-z][\w/.-]*)*?)\s*:?\s*{_VALUE}(?=[\s,;]|$)[\s,;]*"
)
# "real: mean: 125.1s, stdev: 0.12s"
_MEAN_SD = re.compile(
    rf"^\s*(?P<name>{_NAME})\s*:\s*mean\s*:?\s*{_VALUE}\s*,?\s*(?:stdev|stddev|std|sd)\s*:?\s*"
    rf"(?P<sd>{NUMBER})\s*[A-Za-z]*\s*$",
    re.IGNORECASE,
)
_LONGEST_LINE = 500  # a heading or metric line is short; longer ones are not read
_GAP_LINES = 12  # lines between a side's metrics and the other side's heading at most
_TIME_OUTPUT = {"real", "user", "sys", "system"}  # `time`'s lines: seconds


@dataclass(frozen=True)
class _Value:
    value: float
    unit: str | None
    runs: tuple[float, ...]
    sd: float | None = None  # "mean: 125.1s, stdev: 0.12s": the spread over the runs


@dataclass(frozen=True)
class _Side:
    side: str  # "before" or "after"
    label: str
    stated: dict[str, float]  # metric name (lower case) -> the change the heading's remark states
    values: dict[str, tuple[str, _Value, BodyLine]]  # lower-case name -> (name, value, line)
    lines: tuple[BodyLine, ...]
    start: int  # the heading's index in the block
    end: int  # the index after the side's metrics


def find_side_blocks(block: Block, budget: Budget) -> list[Found]:
    """(measurements, lines, (before, after) labels) for every pair of side blocks."""

    def read(lines: Sequence[BodyLine], i: int) -> tuple[_Side | None, int] | None:
        side = _heading(lines[i].text)
        if side is None:
            return None
        if side[3]:
            values, end = _inline(side[3], lines[i]), i + 1
        else:
            values, end = _metrics(lines, i + 1, budget)
        if not values:
            return None, end
        return _Side(side[0], side[1], side[2], values, tuple(lines[i:end]), i, end), end

    sides = scan_sides(block.lines, budget, read)
    return pair_sides(sides, _compare, lambda first, second: second.start - first.end
                      <= _GAP_LINES)  # fmt: skip


def _heading(text: str) -> tuple[str, str, dict[str, float], str] | None:
    """(side, label, stated changes, metrics on the line itself) of a line naming a kernel, or
    None."""
    text = normalize_text(text)
    if len(text) > _LONGEST_LINE:
        return None  # a wall of words: the metric patterns would cost its length squared
    ruled = _RULED.match(text)
    match = ruled or _HEADING.match(text)
    if match is None:
        return None
    label, rest = match.group("label").strip(), "" if ruled else match.group("rest").strip()
    side = side_of_label(_ARTICLE.sub("", label))  # "The old scheme:"
    if side is None:
        return None
    if rest and not rest.startswith(("(", "#")):
        # "Before: sys time: 6121.0s  64kB/swpout: 1638155": the metrics on the line
        covered = "".join(m.group(0) for m in _INLINE.finditer(rest))
        if not covered or re.sub(r"[\s,;]", "", covered) != re.sub(r"[\s,;]", "", rest):
            return None
        return side, label, {}, rest
    stated = {m.group("name").strip().lower(): float(m.group("pct"))
              for m in _STATED.finditer(rest)}  # fmt: skip
    return side, label, stated, ""


def _metrics(
    lines: Sequence[BodyLine], i: int, budget: Budget
) -> tuple[dict[str, tuple[str, _Value, BodyLine]], int]:
    """The metrics on the lines from `i` on, and the index of the first line after them."""
    values: dict[str, tuple[str, _Value, BodyLine]] = {}
    while i < len(lines):
        budget.charge()
        text = normalize_text(lines[i].text)
        if not text.strip() and i + 1 < len(lines) and _metric_line(lines[i + 1].text):
            i += 1  # one blank line between a side's metrics (Nhat Pham's) or under its heading
            continue
        if not text.strip() or len(text) > _LONGEST_LINE or _heading(text) is not None:
            break
        mean_sd = _MEAN_SD.match(text)
        if mean_sd is not None:
            value = _value(mean_sd.group("value"), mean_sd.group("unit"), [])
            sd = to_float(mean_sd.group("sd"))
            if value is not None:
                name = mean_sd.group("name").strip()
                values.setdefault(name.lower(), (name, _Value(value.value, value.unit, (), sd),
                                                 lines[i]))  # fmt: skip
            i += 1
            continue
        spaced = _SPACED.match(text)
        pairs = [] if spaced else list(_PAIR.finditer(text))
        if spaced is None and not pairs:
            break
        line_values = []
        for match in [spaced] if spaced else pairs:
            runs = match.group("runs") if spaced else None
            samples = [float(v) for v in runs.split()] if runs else []
            while runs is not None and i + 1 < len(lines) and _NUMBERS.match(lines[i + 1].text):
                i += 1  # the runs go on on the next line
                samples += [float(v) for v in lines[i].text.split()]
            line_values.append((match.group("name").strip(),
                                _value(match.group("value"), match.group("unit"), samples)))
        _add(values, line_values, lines[i])
        i += 1
    return values, i


# "avg: 11.23s, stddev: 0.06": the spread over the runs of the value before it on the line
_SPREAD_NAME = re.compile(r"^(?:stddev|stdev|std|sd|std ?dev|standard deviation)$", re.I)


def _add(
    values: dict[str, tuple[str, _Value, BodyLine]],
    line_values: Sequence[tuple[str, _Value | None]],
    line: BodyLine,
) -> None:
    """The (name, value) pairs of one line added to `values`, a spread to the value before it."""
    last: str | None = None
    for name, value in line_values:
        if value is None:
            continue
        if _SPREAD_NAME.match(name) and last is not None:
            named, measured, at = values[last]
            values[last] = (named, _Value(measured.value, measured.unit, measured.runs,
                                          value.value), at)  # fmt: skip
            last = None
            continue
        if name.lower() not in values:
            values[name.lower()] = (name, value, line)
            last = name.lower()


def _metric_line(text: str) -> bool:
    """Whether a line holds a side's metric as `_metrics` reads them."""
    text = normalize_text(text)
    if not text.strip() or len(text) > _LONGEST_LINE or _heading(text) is not None:
        return False
    return bool(_MEAN_SD.match(text) or _SPACED.match(text) or _PAIR.search(text))


def _inline(text: str, line: BodyLine) -> dict[str, tuple[str, _Value, BodyLine]]:
    """The metrics written on a heading's own line."""
    values: dict[str, tuple[str, _Value, BodyLine]] = {}
    _add(values, [(m.group("name").strip(), _value(m.group("value"), m.group("unit"), []))
                  for m in _INLINE.finditer(text)], line)  # fmt: skip
    return values


def _value(token: str, unit: str | None, samples: list[float]) -> _Value | None:
    seconds = minutes_seconds(token)
    if seconds is not None:
        return _Value(seconds, "s", ())
    number = to_float(token)
    return None if number is None else _Value(number, unit, tuple(samples))


def _cv(value: _Value) -> float | None:
    return 100.0 * value.sd / abs(value.value) if value.sd is not None and value.value else None


def _compare(before: _Side, after: _Side) -> list[Measurement]:
    measurements = []
    for key, (name, base, _) in before.values.items():
        if key not in after.values:
            continue
        _, patched, line = after.values[key]
        unit = patched.unit or base.unit or ("s" if key in _TIME_OUTPUT else None)
        runs = len(base.runs) >= 2 and len(patched.runs) >= 2
        spread = not runs and base.sd is not None and patched.sd is not None
        stated = next((pct for said, pct in after.stated.items() if said in key or key in said),
                      None)  # fmt: skip
        measurements.append(Measurement(
            metric=name, base=base.value, patched=patched.value, unit=unit,
            n_base=len(base.runs) if runs else None, n_patched=len(patched.runs) if runs else None,
            cv_base_pct=cv_pct(base.runs) if runs else _cv(base) if spread else None,
            cv_patched_pct=cv_pct(patched.runs) if runs else _cv(patched) if spread else None,
            spread_source="samples" if runs else "mean, stdev" if spread else None,
            higher_is_better=metric_higher_is_better(name, unit),
            stated_pct=stated, stated_kind="relative" if stated is not None else None,
            samples_base=base.runs if runs else (), samples_patched=patched.runs if runs else (),
            base_label=before.label, patched_label=after.label, line=line,
        ))  # fmt: skip
    return measurements
