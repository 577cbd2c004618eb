"""Comparison tables: one value a cell, a metric and a kernel for each, the two kernels named as
the sides of a change ("before", "after this set", "w/o patch", "base", "patched"), read into
measurements.

Authors put a before/after comparison in a table more often than in lines: a kernel a column
and a metric a row, or the other way round, in markdown, ASCII boxes or aligned columns:

    Test result: iops                            |            | before | after | change |
                                                 |------------|--------|-------|--------|
                      deadline   bfq             | randread   | 100k   | 120k  | +20%   |
    before this set   263k       124k            | randwrite  | 80k    | 95k   | +18.8% |
    after this set    475k       292k

Cells are split on `|` where a line has one, else on runs of two or more blanks (a label keeps
its single spaces). A value may carry a multiplier (`263k`, `1.2M`), a unit (`12.5ms`, `3.1
GB/s`) and the author's change (`475k (+80.6%)`); a column or row that names a change (`diff`,
`delta`, `change`, `%`, `gain`, `improvement`) gives that change for its metric. A table of
exactly one "before" and one "after" kernel is read; with a third kernel (`base`, `v1`, `v2`)
which is compared with which is the author's to say, and it stays unread. Read line by line,
such a table was one before/after pair of its last column (Yu Kuai's mq-deadline and bfq IOPS,
linux-block: bfq's +135% under the name "k", deadline's +81% lost), or nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.analysis.claims.benchmarks import UNIT_WORDS, higher_is_better, metric_higher_is_better
from bot.analysis.claims.measurement import Measurement, cv_pct
from bot.analysis.claims.numbers import (
    NUMBER,
    SCALE,
    Budget,
    minutes_seconds,
    normalize_text,
    to_float,
)
from bot.analysis.claims.statements import side_of_label
from bot.analysis.claims.tables import SUMMARY_LABEL
from bot.analysis.claims.text import Block, BodyLine

_GAP = re.compile(r"\s{2,}|\t")
_CELL_END = re.compile(r"\s{2,}|\t|(?<=%\))\s+")
_SEPARATOR = re.compile(r"^[\s|+:=~_-]*-[\s|+:=~_-]*$|^[\s|+=]*=[\s|+=]*$")
_VALUE = re.compile(
    rf"^~?\s*(?P<number>{NUMBER})\s*(?P<mult>[kKMG](?![a-zA-Z/]))?\s*(?P<unit>[a-zA-Z%][\w/%.]*)?"
    r"\s*(?:\(\s*(?P<pct>[-+]?\d+(?:\.\d+)?)\s*%\s*\))?$"
)
_CHANGE = re.compile(
    r"^(?:diff(?:erence)?|delta|change|chg|%|%\s*change|change\s*%|%\s*diff|gain|"
    r"improvement|impr\.?|regression|d%|Δ|\+/-)$",
    re.IGNORECASE,
)
_PERCENT = re.compile(r"^\s*\(?\s*(?P<pct>[-+]?\s?\d+(?:\.\d+)?)\s*%\s*\)?\s*$")  # "- 2%" too
_RUN = re.compile(r"^(?:#?\s*\d+|(?:run|iter[a-z]*|trial|round)[-_]?\s*#?\s*\d+):?$", re.I)
_RUN_WORD = re.compile(r"\b(?:runs?|rounds?|iter\w*|trials?)\b|^(?:#|no\.?)$", re.I)
_SPREAD = re.compile(r"std\.?\s*dev|stdev|stddev|deviation|variance|\bcv\b", re.I)
_PADDED = re.compile(r"\(\s*([-+]?\d+(?:\.\d+)?\s*%)\s*\)\s*")
_LABEL_UNIT = re.compile(r"[(\[]([^)\]]+)[)\]]\s*$")
_SECTION = re.compile(r"^\s*[A-Za-z][^|]{0,60}:\s*$")
_SIGNED_PERCENT = re.compile(r"^\s*[-+\u2212]\s?\d+(?:\.\d+)?\s*%\s*$")
_REMARK = re.compile(r"^\s+\([^()]*\)\s*$")
_QUOTED_LABEL = re.compile(r'^"\s*([^"]+?)\s*"\s+(\S.*)$')
_LONGEST_LINE = 500
_BLOAT_O_METER = ("function", "old", "new", "delta")  # scripts/bloat-o-meter's heading
_STARTS = 4  # lines of a run of table lines a table is looked for from


@dataclass(frozen=True)
class _Value:
    value: float
    unit: str | None
    stated_pct: float | None


@dataclass(frozen=True)
class _Row:
    line: BodyLine
    cells: tuple[str, ...]


def find_comparison_tables(
    block: Block, benchmarks: Sequence[str], budget: Budget
) -> list[tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, str]]]:
    """(measurements, lines, (before, after) kernel names) for every comparison table."""
    lines = list(block.lines)
    found = []
    i = tries = 0
    last = -1  # where the run of table lines tried last ends
    while i < len(lines):
        budget.charge()
        rows, after = _rows(lines, i, budget)
        read = _read(rows, lines, benchmarks) if len(rows) >= 2 else None
        if read is not None:
            found.append(read)
            i = after
            continue
        # A table's heading is among the first lines of its run ("Results:  iops" may lead
        # it): a few starts a line further, then past the run, so that a dump of ten thousand
        # two-column lines costs its length, not its square.
        tries = tries + 1 if after == last else 1
        last = after
        i = i + 1 if tries < _STARTS else max(after, i + 1)
    return found


def _cells(text: str) -> tuple[str, ...] | None:
    """A line's cells, or None when it is no line of a table (one cell, a separator, prose)."""
    text = normalize_text(text).strip()
    if not text or len(text) > _LONGEST_LINE or _SEPARATOR.match(text):
        return None
    quoted = _QUOTED_LABEL.match(text)
    if quoted:  # iozone -R: `"  Initial write " 1299639.75   1277621.03`
        cells = [quoted.group(1), *_CELL_END.split(quoted.group(2))]
    elif "|" in text:
        cells = [c.strip() for c in text.strip("|").split("|")]
    else:  # "52739.45 (    +0.00%) 2267500.33 (   -32.71%)": a change's padding splits no
        # cell, and a change in brackets ends one
        cells = _CELL_END.split(_PADDED.sub(r"(\1) ", text).strip())
        if len(cells) == 1:
            cells = _single_spaced(text)
    return tuple(cells) if len(cells) >= 2 else None


_HEADING_WORD = re.compile(r"^[A-Za-z][\w/%()+-]*$")


def _single_spaced(text: str) -> list[str]:
    """The cells of a short table written with single blanks (`type swap-in swap-out` over
    `base 863240 989945`, Joonsoo Kim): a word and values, or three to six words; else one
    cell, the line being prose."""
    words = text.split()
    if not 3 <= len(words) <= 6:
        return [text]
    if all(_VALUE.match(w) for w in words[1:]) and not _VALUE.match(words[0]):
        return words
    if all(_HEADING_WORD.match(w) for w in words):
        return words
    return [text]


def _rows(lines: Sequence[BodyLine], i: int, budget: Budget) -> tuple[list[_Row], int]:
    """The rows of one table from line `i` (separators skipped), and the line after them. A
    header over the values only (its label column blank) gets an empty first cell."""
    rows: list[_Row] = []
    j = i
    while j < len(lines):
        budget.charge()
        text = normalize_text(lines[j].text)
        if text.strip() and _SEPARATOR.match(text):
            j += 1
            continue
        cells = _cells(text)
        if cells is None and rows and _REMARK.match(text):
            j += 1  # "(= lru_note_cost_unlock_irq)" under a row says what it is
            continue
        if cells is None and rows and _SECTION.match(text) and j + 1 < len(lines):
            following = _cells(normalize_text(lines[j + 1].text))
            if following is not None and len(following) == len(rows[-1].cells):
                j += 1  # "With 64k mTHP:" between a table's rows names a group of them
                continue
        if cells is None:
            break
        if rows and len(cells) == len(rows[-1].cells) - 1:
            cells = _label_apart(cells)  # "workingset_refault+0x167 385.26 ms": one blank
            if len(cells) < len(rows[-1].cells) and _BRACKETED.match(rows[-1].cells[-1]):
                cells = _change_apart(cells)  # "4975.55 MB/s (+26.48%)" under "(-25.67%)"
        if rows and len(cells) != len(rows[-1].cells):
            if len(rows) == 1 and len(cells) == len(rows[0].cells) + 1:
                rows[0] = _Row(rows[0].line, ("", *rows[0].cells))
            elif len(rows) == 1 and len(cells) == len(rows[0].cells) + 2 and _percent(cells[-1]):
                # "origin  balancer" over "12 threads  5241.08  5375.59  +2.50%": the change
                # column has no heading
                rows[0] = _Row(rows[0].line, ("", *rows[0].cells, "change"))
            else:
                break
        rows.append(_Row(lines[j], cells))
        j += 1
    return rows, j


_LABEL_THEN_VALUE = re.compile(
    rf"^(?P<label>.*[A-Za-z].*?)\s(?P<value>~?{NUMBER}(?:\s?[A-Za-z/%]+)?)$"
)


_BRACKETED_PCT = r"\(\s*[-+]?\d+(?:\.\d+)?\s*%\s*\)"
_BRACKETED = re.compile(rf"^{_BRACKETED_PCT}$")
_VALUE_THEN_CHANGE = re.compile(rf"^(?P<value>.*?\S)\s+(?P<change>{_BRACKETED_PCT})$")


def _change_apart(cells: tuple[str, ...]) -> tuple[str, ...]:
    """A row whose last value a single blank parts from its change in brackets, split there
    when the row above has the change in a cell of its own (Kairui Song's usemem table)."""
    match = _VALUE_THEN_CHANGE.match(cells[-1])
    if match is None or _value(match.group("value")) is None:
        return cells
    return (*cells[:-1], match.group("value"), match.group("change"))


def _label_apart(cells: tuple[str, ...]) -> tuple[str, ...]:
    """A row whose label a single blank parts from its first value (a label as long as its
    column), split there: `1024 CPUS P8 VM 8476.74`."""
    match = _LABEL_THEN_VALUE.match(cells[0])
    if match is None or _value(match.group("value")) is None:
        return cells
    return (match.group("label"), match.group("value"), *cells[1:])


def _value(cell: str) -> _Value | None:
    seconds = minutes_seconds(cell)  # `time`'s "0m13.460s"
    if seconds is not None:
        return _Value(seconds, "s", None)
    match = _VALUE.match(cell.strip())
    if match is None:
        return None
    number = to_float(match.group("number"))
    if number is None:
        return None
    mult = match.group("mult")
    pct = match.group("pct")
    return _Value(number * SCALE[mult] if mult else number, match.group("unit"),
                  float(pct) if pct is not None else None)  # fmt: skip


_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
               "secs": 1.0, "seconds": 1.0}  # fmt: skip


def _in_unit_of(value: _Value, other: _Value) -> _Value | None:
    """`value` in `other`'s unit: "1.96 s" beside "917.71 ms" is 1960 ms (Usama Arif's lock
    waits); None when the two units are not one quantity's."""
    mine, theirs = (value.unit or "").lower(), (other.unit or "").lower()
    if not mine or not theirs or mine == theirs:
        return value
    if mine in _TIME_UNITS and theirs in _TIME_UNITS:
        return _Value(value.value * _TIME_UNITS[mine] / _TIME_UNITS[theirs], other.unit,
                      value.stated_pct)  # fmt: skip
    return None


def _change(cell: str, label: str) -> str:
    """A change cell with its `%` when only its label carries it (`change %` over `+0.56`)."""
    return f"{cell}%" if "%" in label and "%" not in cell else cell


def _percent(cell: str) -> float | None:
    match = _PERCENT.match(cell)
    return float(match.group("pct").replace(" ", "")) if match else None


def _unit_in(label: str) -> str | None:
    """A unit a label names at its end: "latency (us)", "Before [MB/s]"; not "hdd (write)"."""
    match = _LABEL_UNIT.search(label)
    word = match.group(1).strip() if match else None
    return word if word and (word == "%" or higher_is_better(word) is not None) else None


@dataclass(frozen=True)
class _Case:
    """One metric's cells: its name, the two kernels' values and the author's change."""

    metric: str
    base: str
    patched: str
    change: str | None
    unit: str | None  # the unit its row or column label names
    line: BodyLine


def _read(
    rows: list[_Row], lines: Sequence[BodyLine], benchmarks: Sequence[str]
) -> tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, str]] | None:
    """What a run of table lines compares, or None when it is no comparison of two kernels."""
    width = len(rows[-1].cells)
    # "5.6 vanilla" heads a column: a kernel's version before the side it names, no value
    headed = not any(_value(c) and not side_of_label(c) for c in rows[0].cells[1:])
    names = rows[0].cells if headed else ("",) * width
    body = rows[1:] if headed else rows
    if not body:
        return None
    top = next(k for k, ln in enumerate(lines) if ln is rows[0].line)
    # The label column's heading first ("Tail latency (number of requests)"), then the lines
    # above ("Test result: iops"); a table without a heading names no metric they could fit.
    above = [names[0], *(ln.text for ln in reversed(lines[max(0, top - 3) : top]))]
    unit_word = next((m.group(1) for text in above if (m := UNIT_WORDS.search(text))), None)
    unit_word = unit_word if headed else None
    if tuple(n.lower() for n in names) == _BLOAT_O_METER:
        return None  # code size, function by function: no performance claim
    if headed and len(body) >= 2 and not any(_value(c) for c in body[0].cells[1:]):
        if any("/" in c for c in body[0].cells[1:]):
            return _slashed(names, body[0], body[1:], _spanned(rows, lines), unit_word)
        body = body[1:]  # a second heading line of what each column holds (UnixBench's INDEX)
    across = _sides(names[1:], headings=True) if headed else None
    if across is not None and not _both_named(names[1:]) and _both_named(
            [r.cells[0] for r in body]):
        across = None  # "no BGSAVE  with BGSAVE" over rows "Before:", "After:" (Kairui Song)
    if across is not None:  # a kernel a column
        before, after, change = (c + 1 if c is not None else None for c in across)
        kernels = (names[before], names[after])
        runs = [r for r in body if not SUMMARY_LABEL.match(r.cells[0].split(" ", 1)[0])]
        run_column = not names[0] or _RUN_WORD.search(names[0])
        if run_column and runs and all(_RUN.match(r.cells[0]) for r in runs):
            measurement = _runs(runs, before, after, kernels, unit_word, benchmarks)
            return ([measurement], _spanned(rows, lines), kernels) if measurement else None
        unit = _unit_in(names[after]) or _unit_in(names[before]) or _unit_in(names[0])
        cases = [_Case(_case(names[0], r.cells[0]), r.cells[before], r.cells[after],
                       _change(r.cells[change], names[change]) if change else None,
                       None if _BUCKET.match(r.cells[0]) else _unit_in(r.cells[0]) or unit,
                       r.line) for r in body]  # fmt: skip
    else:  # a kernel a row
        down = _sides([r.cells[0] for r in body])
        if down is None or (not headed and width < 3):  # one column: a before/after line pair
            return None
        before_row, after_row = body[down[0]], body[down[1]]
        change_row = body[down[2]] if down[2] is not None else None
        kernels = (before_row.cells[0], after_row.cells[0])
        if headed and all(_RUN.match(n) for n in names[1:]):  # "round1  round2  round3"
            measurement = _run_columns(before_row, after_row, kernels, unit_word, benchmarks)
            return ([measurement], _spanned(rows, lines), kernels) if measurement else None
        names = _stacked(names, lines, top) if headed else names
        cases = [_Case(names[c] or f"column {c}", before_row.cells[c], after_row.cells[c],
                       _change(change_row.cells[c], change_row.cells[0]) if change_row else None,
                       _unit_in(names[c]), after_row.line) for c in range(1, width)]  # fmt: skip
    measurements = []
    for case in _timed(cases):
        if _SPREAD.search(case.metric):
            continue  # the spread of a metric beside it, not a result of its own
        measurement = _measurement(case, kernels, unit_word)
        if measurement is None:
            return None
        measurements.append(measurement)
    return (measurements, _spanned(rows, lines), kernels) if measurements else None


_TIME_OUTPUT = frozenset({"real", "user", "sys"})


def _timed(cases: list[_Case]) -> list[_Case]:
    """The cases, `time`'s `real`/`user`/`sys` rows in seconds when two or more of them are
    there (Chengming Zhou's zswap timings): "real" and "user" name no unit themselves."""
    if len(_TIME_OUTPUT & {c.metric.strip().lower() for c in cases}) < 2:
        return cases
    return [replace(c, unit=c.unit or "s") if c.metric.strip().lower() in _TIME_OUTPUT else c
            for c in cases]  # fmt: skip


def _slashed(
    names: tuple[str, ...], sub: _Row, body: list[_Row], spanned: tuple[BodyLine, ...],
    unit_word: str | None,
) -> tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, str]] | None:  # fmt: skip
    """A table whose second heading line names the sides within each column, a cell holding
    them all (`(Before / After / Delta)` over `5258 /  5235 / -0.3%`): each column's metric
    over each row's label. None unless every value column is so split."""
    cases, kernels = [], None
    for c in range(1, len(names)):
        labels = [part.strip() for part in sub.cells[c].strip("() ").split("/")]
        sides = _sides(labels) if len(labels) >= 2 else None
        if sides is None:
            return None
        before, after, change = sides
        kernels = kernels or (labels[before], labels[after])
        for row in body:
            parts = [part.strip() for part in row.cells[c].split("/")]
            if len(parts) != len(labels):
                return None
            metric = " ".join(f"{names[c]} {row.cells[0]}".split())
            cases.append(_Case(metric, parts[before], parts[after],
                               parts[change] if change is not None else None,
                               _unit_in(names[c]), row.line))  # fmt: skip
    if kernels is None:
        return None
    measurements = [_measurement(case, kernels, unit_word) for case in cases]
    if any(m is None for m in measurements):
        return None
    return [m for m in measurements if m is not None], spanned, kernels


def _measurement(case: _Case, kernels: tuple[str, str], unit_word: str | None
                 ) -> Measurement | None:
    """The measurement of one case, or None when a cell holds no value."""
    if any(_SIGNED_PERCENT.match(cell) for cell in (case.base, case.patched)):
        return None  # "-13.6%" under "baseline": each kernel's change against a third one
    base, patched = _value(case.base), _value(case.patched)
    if base is None or patched is None or not case.metric:
        return None
    base = _in_unit_of(base, patched)
    if base is None:
        return None  # "1.2 GB" beside "3 ms": no one metric
    stated = patched.stated_pct
    if stated is None and case.change is not None:
        stated = _percent(case.change)
    # A unit the cells or labels give, then what the metric's name says ("iops", "clat"), and
    # only then a unit word near the table. A benchmark's usual unit is no metric's: "pswpin"
    # in a dd test is no rate.
    unit = patched.unit or base.unit or case.unit
    higher = metric_higher_is_better(case.metric, unit)
    if higher is None and unit is None and unit_word is not None and not _BUCKET.search(
            case.metric):
        unit = unit_word
        higher = metric_higher_is_better(case.metric, unit)
    return Measurement(
        metric=case.metric, base=base.value, patched=patched.value, unit=unit,
        higher_is_better=higher,
        stated_pct=stated, stated_kind="relative" if stated is not None else None,
        base_label=kernels[0], patched_label=kernels[1], line=case.line,
    )  # fmt: skip


def _runs(
    runs: list[_Row], before: int, after: int, kernels: tuple[str, str], unit_word: str | None,
    benchmarks: Sequence[str],
) -> Measurement | None:  # fmt: skip
    """A run a row (`| test round | with this patch | without this patch |`, then `| 1 |
    4310k | 4265k |` ...): the samples of one metric, its average row left out."""
    return _samples([r.cells[before] for r in runs], [r.cells[after] for r in runs], kernels,
                    unit_word, benchmarks, runs[0].line)  # fmt: skip


def _run_columns(
    before: _Row, after: _Row, kernels: tuple[str, str], unit_word: str | None,
    benchmarks: Sequence[str],
) -> Measurement | None:  # fmt: skip
    """A run a column, a kernel a row (`w/o this patch:  23.5s  24.7s  24.6s`): the samples of
    one metric."""
    return _samples(list(before.cells[1:]), list(after.cells[1:]), kernels, unit_word,
                    benchmarks, after.line)  # fmt: skip


def _samples(
    base_cells: list[str], patched_cells: list[str], kernels: tuple[str, str],
    unit_word: str | None, benchmarks: Sequence[str], line: BodyLine,
) -> Measurement | None:  # fmt: skip
    """One metric's measurement from each kernel's runs, or None unless every cell is a value
    and each kernel has two runs or more."""
    base = [_value(c) for c in base_cells]
    patched = [_value(c) for c in patched_cells]
    if len(base) < 2 or len(patched) < 2 or any(v is None for v in base + patched):
        return None
    samples_base = tuple(v.value for v in base if v)
    samples_patched = tuple(v.value for v in patched if v)
    unit = next((v.unit for v in base + patched if v and v.unit), None) or unit_word
    return Measurement(
        metric=unit or (benchmarks[0] if benchmarks else "value"),
        base=sum(samples_base) / len(samples_base),
        patched=sum(samples_patched) / len(samples_patched), unit=unit,
        n_base=len(samples_base), n_patched=len(samples_patched),
        cv_base_pct=cv_pct(samples_base), cv_patched_pct=cv_pct(samples_patched),
        spread_source="samples", higher_is_better=higher_is_better(unit, benchmarks),
        samples_base=samples_base, samples_patched=samples_patched,
        base_label=kernels[0], patched_label=kernels[1], line=line,
    )  # fmt: skip


def _stacked(names: tuple[str, ...], lines: Sequence[BodyLine], top: int) -> tuple[str, ...]:
    """Metric names written on two lines, each column's upper word over its lower ("Latency"
    over "(ns)"): joined, when the line above the heading has a cell over each."""
    upper = _cells(lines[top - 1].text) if top > 0 else None
    if upper is not None and len(upper) == len(names) - 1:
        upper = ("", *upper)
    if upper is None or len(upper) != len(names) or any(_value(c) for c in upper):
        return names
    return tuple(f"{u} {n}".strip() for u, n in zip(upper, names, strict=True))


def _spanned(rows: list[_Row], lines: Sequence[BodyLine]) -> tuple[BodyLine, ...]:
    first, last = rows[0].line.number, rows[-1].line.number
    return tuple(ln for ln in lines if first <= ln.number <= last and ln.text.strip())


# A histogram's bucket, `[1000, 10000)` under `Range (us)`: its values are counts of events in
# that range, neither better higher nor lower, and the unit is the range's, not theirs.
_BUCKET = re.compile(r"[\[(]\s*[-+]?[\d.]+\s*,\s*(?:[-+]?[\d.]+|\+|inf\w*)?\s*[\])]$", re.I)
# mmtests prints its vmstat rows as `Ops Direct pages scanned`: a kind of row, not a rate.
_MMTESTS_OPS = re.compile(r"^Ops\s+(?=\S)")


def _case(parameter: str, label: str) -> str:
    """A row's metric: its label, with the label column's name when the label is a number
    ("threads 16": a parameter's value, not a count)."""
    label = _MMTESTS_OPS.sub("", label.rstrip(":").rstrip())
    return f"{parameter} {label}" if parameter and (_RUN.match(label) or _BUCKET.match(label)
                                                    ) else label  # fmt: skip


def _sides(labels: Sequence[str], *, headings: bool = False
           ) -> tuple[int, int, int | None] | None:
    """The places of the one "before" label, the one "after" label and a change's label among
    `labels`, or None unless those are all they hold. Two labels that name no side are two
    kernels, the one before being the tree the other is based on; among column `headings`
    only, also the name the other extends (as row labels, `alloc` and `alloc_bulk` are more
    often two metrics)."""
    before = [k for k, label in enumerate(labels) if side_of_label(label) == "before"]
    after = [k for k, label in enumerate(labels) if side_of_label(label) == "after"]
    change = [k for k, label in enumerate(labels) if _CHANGE.match(label.strip())]
    # "Standard Deviation  0.95%  1.03%" under Yosry Ahmed's Base/Patched/Delta: no kernel
    spread = [k for k, label in enumerate(labels)
              if _SPREAD.search(label) and k not in before + after + change]
    others = [k for k in range(len(labels)) if k not in before + after + change + spread]
    # "origin" and "balancer", "v6.8-rc1" and "New": the kernel one side names, and the other
    if len(others) == 1:
        if len(before) == 1 and not after:
            after = others
        elif len(after) == 1 and not before:
            before = others
    if not before and not after and len(others) == 2:
        order = _base_first(labels[others[0]], labels[others[1]], extends=headings)
        if order is not None:
            before, after = [others[order]], [others[1 - order]]
    if len(before) != 1 or len(after) != 1 or len(change) > 1:
        return None
    if len(labels) != 2 + len(change) + len(spread):
        return None
    return before[0], after[0], change[0] if change else None


def _both_named(labels: Sequence[str]) -> bool:
    """Whether the labels name both sides in words of sides, not one found from the other."""
    sides = [side_of_label(label) for label in labels]
    return sides.count("before") == 1 and sides.count("after") == 1


# A tree a series is based on: "mm-unstable", "linux-next", "next-20231009", "v6.8-rc1", "6.8".
_BASE_TREE = re.compile(
    r"^(?:mm-(?:unstable|stable|everything|new|hotfixes-\w+)|linux-next|next-\d{8}|mainline|"
    r"upstream|master|tip|v?\d+\.\d+(?:\.\d+)?(?:-rc\d+)?)$",
    re.IGNORECASE,
)
# What a column's name adds to another's when it is the same metric's statistic, not a kernel
_STATISTIC = re.compile(r"^[-+_ ]?(?:avg|mean|max|min|std\w*|sd|p\d+|median|cv|err\w*)$", re.I)


def _base_first(one: str, other: str, *, extends: bool) -> int | None:
    """Which of two kernels' names, neither naming a side, is the one before: the tree a series
    is based on (`mm-unstable` over `zswap-global-lru`, Chengming Zhou), or the name the
    other extends (`zswap-invalidate-entry` and `zswap-invalidate-entry-exclusive`)."""
    one, other = one.strip(), other.strip()
    if to_float(one) is not None or to_float(other) is not None:
        return None  # a number labels no kernel: "6973.0" over "-0.01" is no "6.8" over a patch
    trees = (bool(_BASE_TREE.match(one)), bool(_BASE_TREE.match(other)))
    if trees[0] != trees[1]:
        return 0 if trees[0] else 1
    if not extends:
        return None
    for k, (short, long) in enumerate(((one, other), (other, one))):
        rest = long[len(short):]
        if short and long.startswith(short) and rest[:1] in ("-", "+", "_") and (
                not _STATISTIC.match(rest)):
            return k
    return None
