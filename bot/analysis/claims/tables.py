"""Result tables read back into per-run samples.

A table is rows of numbers (one row a run, one column a kernel or parameter) under a header
line, optionally with a line of kernel names above it, each over a group of columns, and with
avg / std / min / max rows below, kept as printed so that they can be checked against the rows.
A leading run-number column is dropped; bare rows of numbers with neither header nor summary rows
(a data dump, a matrix) are not taken for results.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.analysis.claims.benchmarks import UNIT_WORDS, higher_is_better, metric_higher_is_better
from bot.analysis.claims.model import ResultTable, TableColumn
from bot.analysis.claims.numbers import Budget, normalize_text
from bot.analysis.claims.statements import side_of_label
from bot.analysis.claims.text import Block, BodyLine

_SEPARATOR = re.compile(r"^\s*[=\-_+|*~]{3,}[\s=\-_+|*~]*$")
# The label of a row that sums up runs ("avg", "stddev:", "p95"), never a run of its own.
SUMMARY_LABEL = re.compile(
    r"^(avg|average|mean|std|stddev|stdev|sd|min|max|median|med|cv|geomean|hmean|amean|"
    r"p\d{2}|range|sum|total)[:.]?$",
    re.IGNORECASE,
)
_ROW_LABEL = re.compile(r"^(?:num|no\.?|#|run|runs|iter\w*|n|trial)$", re.IGNORECASE)
_FLOAT = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
# A run's label at the start of a row: "run1", "run 1", "#1", "1:", "iter3", "trial 2", "[1]".
_RUN_LABEL = re.compile(
    r"^\s*(?:(?:run|iter(?:ation)?|trial|test|round)\s*#?\s*\d+:?|#\s*\d+:?|\d+:|\[\d+\])\s+",
    re.IGNORECASE,
)
# A unit in a column header: "lat(ms)", "bw[MB/s]", "latency-us", "MB/s".
_HEADER_UNIT = re.compile(
    r"[(\[]([^)\]]+)[)\]]$|[-_]((?:m|u|n)?s|ms|us|[kmg]b/s|iops|ops/s)$", re.I
)


@dataclass(frozen=True)
class TableFound:
    table: ResultTable
    lines: tuple[BodyLine, ...]  # heading, runs and summary rows, blank lines left out


def find_tables(
    block: Block, benchmarks: Sequence[str], budget: Budget | None = None
) -> list[TableFound]:
    """Tables of per-run rows (kernels as columns, or as rows of runs), with their headers,
    kernel names and summary rows."""
    budget = budget or Budget()
    lines = list(block.lines)
    found: list[TableFound] = list(_kernel_row_tables(lines, benchmarks, budget))
    taken = {ln.number for t in found for ln in t.lines}
    lines = [ln for ln in lines if ln.number not in taken]
    i = 0
    while i < len(lines):
        budget.charge()
        if _numbers(lines[i].text) is None:
            i += 1
            continue
        rows, row_lines, after = _run_rows(lines, i)
        if len(rows) < 2:
            i = after
            continue
        # A leading run-number column (1, 2, 3, ...) is not a sample.
        if len(rows[0]) > 2 and [r[0] for r in rows] == list(range(1, len(rows) + 1)):
            rows = [r[1:] for r in rows]
        ncols = len(rows[0])
        headers, kernels, top = _header_above(lines, i, ncols)
        summary, summary_lines = _summary_below(lines, after, ncols)
        if headers is None and not summary_lines:
            # Bare rows of numbers (a data dump, a matrix) are not presented as results.
            i = after
            continue
        if headers is None:
            headers = [str(c + 1) for c in range(ncols)]
        setups = _setup_columns(headers, rows)
        if setups and any(len({r[c] for r in rows}) > 1 for c in range(setups)):
            # Each row a setup (hackbench's `Procs  NR` before the kernels' times), not a run.
            i = after
            continue
        if setups:
            rows, headers = [r[setups:] for r in rows], headers[setups:]
            summary, ncols = summary[setups:], ncols - setups
            kernels = kernels[setups:] if kernels else None
        if kernels is None:
            if all(_FLOAT.match(h) for h in headers):
                kernels = [""] * ncols  # parameters of one kernel's runs (threads, groups, ...)
            elif _apart(rows):
                # "value  cache misses  CPU migrations" (Lin Ming): one kernel's metrics, whose
                # runs are orders of magnitude apart, not kernels measured on one metric
                i = after
                continue
            else:
                kernels, headers = list(headers), [""] * ncols  # one kernel per column
        context = " ".join(ln.text for ln in lines[max(0, top - 3) : top + 1])
        unit_match = UNIT_WORDS.search(context)
        unit = unit_match.group(1) if unit_match else None
        columns = tuple(
            _column(kernels[c], headers[c], tuple(r[c] for r in rows), summary[c], benchmarks)
            for c in range(ncols)
        )
        heading = tuple(
            ln for ln in lines[top:i] if ln.text.strip() and not _SEPARATOR.match(ln.text)
        )
        table = ResultTable(
            tuple(dict.fromkeys(kernels)),
            columns,
            unit,
            higher_is_better(unit, benchmarks),
            heading,
        )
        last = (summary_lines or row_lines)[-1]
        spanned = tuple(
            ln for ln in lines if lines[top].number <= ln.number <= last.number and ln.text.strip()
        )
        found.append(TableFound(table, spanned))
        i = max(i + 1, next(k for k in range(i, len(lines)) if lines[k] is last) + 1)
    return found


# A column heading that names a test's parameter rather than a kernel.
_SETUP_HEADING = re.compile(
    r"^(?:procs?|process(?:es)?|nr|nr_\w+|threads?|tasks?|groups?|clients?|jobs|workers|cpus?|"
    r"nodes?|size|bs|block ?size|order|loops?|depth|iodepth|users|connections|conns|instances|"
    r"warehouses|vcpus?|memory|mem)$",
    re.IGNORECASE,
)


def _setup_columns(headers: Sequence[str], rows: Sequence[Sequence[float]]) -> int:
    """How many leading columns are a test's parameters: named as one (`Procs`, `NR`,
    `threads`), or, under a heading that names no side, whole numbers in steps that repeat
    (`100 100 10 10 1 1`: sorted, with repeats, as no kernel's runs are), with two columns or
    more after them."""
    count = 0
    for c, header in enumerate(headers[:-2]):
        values = [r[c] for r in rows]
        stepped = (all(v == int(v) for v in values) and len(set(values)) < len(values)
                   and values in (sorted(values), sorted(values, reverse=True)))
        named = _SETUP_HEADING.match(header.strip())
        if named or (stepped and not _FLOAT.match(header) and side_of_label(header) is None):
            count += 1
        else:
            break
    return count


# Columns of one metric on several kernels are not a hundred times apart in their means.
_APART = 100.0


def _apart(rows: Sequence[Sequence[float]]) -> bool:
    """Whether two columns' means are too far apart to be one metric's."""
    means = [abs(sum(column) / len(column)) for column in zip(*rows, strict=False)]
    positive = [m for m in means if m > 0]
    return len(positive) >= 2 and max(positive) > _APART * min(positive)


def _column(
    kernel: str,
    header: str,
    samples: tuple[float, ...],
    summary: dict[str, float],
    benchmarks: Sequence[str],
) -> TableColumn:
    """A column with the unit and direction its own header names ("lat(ms)", "bw(MB/s)")."""
    match = _HEADER_UNIT.search(header)
    unit = (match.group(1) or match.group(2)) if match else None
    higher = metric_higher_is_better(header, unit) if header and not _FLOAT.match(header) else None
    return TableColumn(kernel, header, samples, summary, unit, higher)


def _numbers(text: str) -> list[float] | None:
    """The numbers of a row of runs, a leading run label ("run3", "#3", "3:") left out."""
    if len(text) > 4000:
        return None
    words = _RUN_LABEL.sub("", normalize_text(text), count=1).split()
    if len(words) < 2 or not all(_FLOAT.match(w) for w in words):
        return None
    return [float(w) for w in words]


# "base:    12.31 12.40 12.28 12.35 12.33": one kernel's runs on one line, kernels as rows; a
# label may start with a digit ("6.8.0-rc1:") but each of its words holds a letter: in
# "numa01 1704.50 248.67 71999.86 207091 1093" every number is data, not a kernel's name.
_KERNEL_ROW = re.compile(
    r"^\s*(?P<label>(?=[\w.+/()-]*[A-Za-z])[A-Za-z0-9][\w.+/()-]*"
    r"(?: (?=[\w.+/()-]*[A-Za-z])[\w.+/()-]+){0,3})\s*[:=]?\s+"
    r"(?P<runs>[-+]?\d[\d.]*(?:[ ,]+[-+]?\d[\d.]*){2,})\s*(?P<unit>[A-Za-z/]+)?\s*$"
)


def _kernel_row_tables(
    lines: Sequence[BodyLine], benchmarks: Sequence[str], budget: Budget
) -> Iterable[TableFound]:
    """Consecutive lines each holding one kernel's runs (three or more numbers after a label)."""
    group: list[tuple[BodyLine, str, tuple[float, ...], str | None]] = []
    above: BodyLine | None = None  # the last line with text before the group
    for line in [*lines, None]:
        budget.charge()
        row = _kernel_row(line) if line is not None else None
        if row and (not group or len(row[1]) == len(group[0][2])):
            group.append((line, *row))  # type: ignore[arg-type]
            continue
        if (
            len(group) >= 2
            and not SUMMARY_LABEL.match(group[0][1])
            and _kernels(group)
            and not _names_columns(above, len(group[0][2]))
        ):
            yield _rows_table(group, benchmarks)
        if group:
            above = group[-1][0]
        group = [(line, *row)] if row and line is not None else []  # type: ignore[list-item]
        if not group and line is not None and line.text.strip():
            above = line


# A column heading that numbers runs ("run1", "#2", "3", "iter4", "1st"): rows under such
# headings are still each a kernel's runs.
_RUN_HEADING = re.compile(
    r"^(?:(?:run|iter(?:ation)?|trial|test|round)[-_]?\s*#?\s*\d+|#\s*\d+|\d+(?:st|nd|rd|th)?)\S?$",
    re.IGNORECASE,
)


def _names_columns(above: BodyLine | None, values: int) -> bool:
    """Whether the line above rows of `values` numbers names each column other than as a run:
    then the columns are the kernels and the rows' labels are metrics or percentiles, as in
    schbench's `50.0000th:  9  13  9` under `base  base+revert  base+this_patch`."""
    if above is None:
        return False
    names = [t for _, t in _columns_at(normalize_text(above.text).strip())]
    return len(names) == values and not all(_RUN_HEADING.match(n) for n in names)


# What a kernel's name looks like when it names no side: a version, a tree, a patch.
_KERNELISH = re.compile(
    r"\d+\.\d+|\brc\d|\bv\d|kernel|patch|linux|\bmm-|next|tip|mainline|stable|upstream|"
    r"\bhead\b|\bgit\b|[0-9a-f]{7,40}",
    re.IGNORECASE,
)


def _kernels(group: Sequence[tuple[BodyLine, str, tuple[float, ...], str | None]]) -> bool:
    """Whether the rows' labels name kernels: one names a side ("base:", "w/ patch") or each
    looks like a kernel's name ("6.8.0-rc1:", "mm-unstable+patch"). Rows of counters over
    four setups ("memcg_swap_fail", "sys time (sec)") are no kernels' runs."""
    labels = [label for _, label, _, _ in group]
    return any(side_of_label(label) for label in labels) or all(
        _KERNELISH.search(label) and not _PERCENTILE.match(label) for label in labels
    )


# A percentile's label ("99.9000th", "p99.5", "95%"): a latency tool's row, never a kernel.
_PERCENTILE = re.compile(r"^\*?(?:p\d+(?:\.\d+)?|\d+(?:\.\d+)?(?:th|%))$", re.IGNORECASE)


def _kernel_row(line: BodyLine) -> tuple[str, tuple[float, ...], str | None] | None:
    text = normalize_text(line.text)
    if len(text) > 4000:
        return None
    match = _KERNEL_ROW.match(text)
    if not match or _RUN_LABEL.match(text) or SUMMARY_LABEL.match(match.group("label")):
        return None
    values = _run_values(match.group("runs"))
    if len(values) < 3:
        return None
    return match.group("label").strip(), tuple(values), match.group("unit")


_GROUPED = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")  # "132,743": one number


def _run_values(text: str) -> list[float]:
    """The runs of a kernel's row: split on blanks and on ", ", and on a bare comma unless it
    groups thousands ("132,743 169,825" is two runs, "12.31,12.40" two)."""
    values = []
    for token in re.split(r",?\s+", text.strip()):
        parts = [token.replace(",", "")] if _GROUPED.match(token) else token.split(",")
        values += [float(v) for v in parts if _FLOAT.match(v)]
    return values


def _rows_table(
    group: Sequence[tuple[BodyLine, str, tuple[float, ...], str | None]], benchmarks: Sequence[str]
) -> TableFound:
    unit = next((u for *_, u in group if u), None)
    higher = higher_is_better(unit, benchmarks)
    columns = tuple(TableColumn(label, "", runs, {}, unit, higher) for _, label, runs, _ in group)
    table = ResultTable(tuple(dict.fromkeys(c.kernel for c in columns)), columns, unit, higher, ())
    return TableFound(table, tuple(line for line, *_ in group))


def _is_gap(line: BodyLine) -> bool:
    return not line.text.strip() or bool(_SEPARATOR.match(line.text))


def _run_rows(lines: Sequence[BodyLine], i: int) -> tuple[list[list[float]], list[BodyLine], int]:
    """Rows of as many numbers as row i has, from row i on (single blank lines allowed between);
    also the index just past them."""
    ncols = len(_numbers(lines[i].text) or [])
    rows, row_lines = [], []
    j = i
    while j < len(lines):
        values = _numbers(lines[j].text)
        if values is not None and len(values) == ncols:
            rows.append(values)
            row_lines.append(lines[j])
        elif not (
            not lines[j].text.strip()
            and j + 1 < len(lines)
            and len(_numbers(lines[j + 1].text) or []) == ncols
        ):
            break
        j += 1
    return rows, row_lines, j


def _columns_at(text: str) -> list[tuple[int, str]]:
    """(position, token) for tokens separated by two or more spaces."""
    return [(m.start(), m.group(0)) for m in re.finditer(r"\S+(?: \S+)*", text)]


def _header(text: str, ncols: int) -> list[str] | None:
    for tokens in ([t for _, t in _columns_at(text)], text.split()):
        # One token more than there are columns: the first labels the row ("num", "threads").
        if len(tokens) == ncols + 1 and (
            _ROW_LABEL.match(tokens[0])
            or (not _FLOAT.match(tokens[0]) and all(_FLOAT.match(t) for t in tokens[1:]))
        ):
            tokens = tokens[1:]
        if len(tokens) == ncols:
            return tokens
    return None


def _kernel_groups(text: str, headers: list[str]) -> list[str] | None:
    """Kernel names per column from a line like "2.6.28-rc6      bail-out" above the header."""
    names = [t for _, t in _columns_at(text)]
    k = len(names)
    if k < 2 or k >= len(headers) or len(headers) % k or any(len(n) > 40 for n in names):
        return None
    if text.rstrip().endswith((":", ".")):
        return None
    per = len(headers) // k
    return [names[i // per] for i in range(len(headers))]


def _header_above(
    lines: Sequence[BodyLine], i: int, ncols: int
) -> tuple[list[str] | None, list[str] | None, int]:
    """Column headers and kernel names (one per column) above row i, and the first line used."""
    k = i - 1
    seen_separator = False
    while k >= 0 and _is_gap(lines[k]):
        seen_separator |= bool(_SEPARATOR.match(lines[k].text))
        k -= 1
    # An all-number line is a header ("125 130 135") only when a rule separates it from the runs.
    if k < 0 or (_numbers(lines[k].text) is not None and not seen_separator):
        return None, None, i
    headers = _header(lines[k].text, ncols)
    if headers is None:
        return None, None, i
    m = k - 1
    while m >= 0 and not lines[m].text.strip() and k - m <= 2:
        m -= 1
    kernels = _kernel_groups(lines[m].text, headers) if m >= 0 else None
    return headers, kernels, (m if kernels else k)


def _summary_below(
    lines: Sequence[BodyLine], j: int, ncols: int
) -> tuple[list[dict[str, float]], list[BodyLine]]:
    """avg/std/min/max rows below the runs (blank lines and rules between allowed)."""
    summary: list[dict[str, float]] = [{} for _ in range(ncols)]
    used: list[BodyLine] = []
    gap = 0
    while j < len(lines):
        if len(lines[j].text) > 4000:
            break
        if _is_gap(lines[j]):
            gap += 1
            if gap > 2:
                break
            j += 1
            continue
        words = lines[j].text.split()
        label = SUMMARY_LABEL.match(words[0])
        values = _numbers(" ".join(words[1:]))
        if not label or values is None or len(values) != ncols:
            break
        for column, value in enumerate(values):
            summary[column][label.group(1).lower()] = value
        used.append(lines[j])
        gap = 0
        j += 1
    return summary, used
