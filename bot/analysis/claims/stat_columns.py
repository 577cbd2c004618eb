"""Tables whose columns are statistics of the runs and whose rows are the kernels, a group of
rows for each case, read into measurements.

    Number of runs : 15
    Direction      : + is good

    |            | MIN        | MAX        | MEAN       | MEDIAN     | STDDEV     |
    |:-----------|:-----------|:-----------|:-----------|:-----------|:-----------|
    | mmap1_8_threads
    | BASE       | 627,817    | 632,702    | 630,554    | 629,281    | 1,764      |
    | TEST       | 541,202    | 554,097    | 549,104    | 549,896    | 4,257      |
    | %          | -13.80%    | -12.42%    | -12.92%    | -12.62%    | +141.34%   |

Each group is one measurement of its case: the MEAN (else AVG, else MEDIAN) column's values,
the STDDEV column over them as each kernel's per-run CV, the `%` row's figure in that column as
the author's change, the run count from the text. The two kernel rows are the one naming the
kernel before (`BASE`, `baseline`, `vanilla`) and the other. A "Direction: + is good" line says
which way is better. Sudarsan Mahendran's SLUB sheaves benchmarks (linux-mm, 2025) were read as
nothing, and so was Yosry Ahmed's will-it-scale table (`LABEL | MEAN | MEDIAN | STDDEV`, rows
`(A) base` and `(B) patched`, the change row unlabelled, no pipe before the label).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.analysis.claims.benchmarks import metric_higher_is_better
from bot.analysis.claims.measurement import Measurement
from bot.analysis.claims.numbers import Budget, normalize_text, to_float
from bot.analysis.claims.statements import side_of_label
from bot.analysis.claims.text import Block, BodyLine

_CENTRE = ("mean", "avg", "average", "median")
_SPREAD = ("stddev", "stdev", "std", "sd")
_RULE = re.compile(r"^[\s|:=+-]+$")
_MARK = re.compile(r"^\(\w\)\s*")
_DIRECTION = re.compile(r"direction\s*:\s*(?P<sign>[-+])\s*is\s+(?:good|better)", re.IGNORECASE)
_CHANGE_LABEL = re.compile(r"^(?:%|%\s*change|change|diff|delta)$", re.IGNORECASE)

Found = tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, str]]


def find_stat_column_tables(block: Block, budget: Budget) -> list[Found]:
    """(measurements, lines, (before, after) row labels) for every such table in the block."""
    lines = list(block.lines)
    direction = next((m.group("sign") == "+" for ln in lines
                      if (m := _DIRECTION.search(ln.text))), None)  # fmt: skip
    found = []
    i = 0
    while i < len(lines):
        budget.charge()
        header = _cells(lines[i].text)
        columns = [c.lower() for c in header] if header else []
        markdown = lines[i].text.strip().startswith("|")
        centre = next((columns.index(c) for c in _CENTRE if c in columns), None)
        if centre is None or len(columns) < 3:
            i += 1
            continue
        spread = next((columns.index(c) for c in _SPREAD if c in columns), None)
        measurements, used, i = _groups(lines, i + 1, centre, spread, direction, markdown, budget)
        if measurements:
            kernels = (measurements[0].base_label, measurements[0].patched_label)
            found.append((measurements, tuple(lines[k] for k in used), kernels))
    return found


def _cells(text: str, markdown: bool | None = None) -> list[str] | None:
    """A pipe table row's cells, the label cell first; None for no such row. In a markdown
    table ("| BASE | 7,667,220 |") nothing comes before the first pipe; in the other kind the
    label does, and a row whose label is blank starts with a pipe too. `markdown` None: as the
    row itself looks."""
    text = normalize_text(text).strip()
    if "|" not in text or len(text) > 1000:
        return None
    cells = [c.strip() for c in text.split("|")]
    if markdown if markdown is not None else text.startswith("|"):
        cells = cells[1:]
    return cells[:-1] if text.endswith("|") and len(cells) > 1 else cells


def _groups(
    lines: Sequence[BodyLine], i: int, centre: int, spread: int | None,
    higher: bool | None, markdown: bool, budget: Budget,
) -> tuple[list[Measurement], list[int], int]:  # fmt: skip
    """The measurements of the groups from line i on, the indices of the lines read, and the
    index of the line after the table."""
    measurements: list[Measurement] = []
    used = [i - 1]
    case: str | None = None
    rows: list[tuple[list[str], BodyLine]] = []
    while i < len(lines):
        budget.charge()
        text = lines[i].text
        cells = _cells(text, markdown)
        if _RULE.match(text):
            used.append(i)
            i += 1
            continue
        if cells is None:
            break
        used.append(i)
        if cells[0] and not any(cells[1:]):  # "| brk1_8_processes": the next group's case
            measurements += _group(case, rows, centre, spread, higher)
            case, rows = cells[0], []
        else:
            rows.append((cells, lines[i]))
        i += 1
    measurements += _group(case, rows, centre, spread, higher)
    return measurements, used, i


def _group(
    case: str | None, rows: list[tuple[list[str], BodyLine]], centre: int, spread: int | None,
    higher: bool | None,
) -> list[Measurement]:  # fmt: skip
    """The one measurement of a group's kernel rows, or none."""
    kernels = [(c, ln) for c, ln in rows if c[0] and not _CHANGE_LABEL.match(c[0])]
    change = next((c for c, _ in rows if not c[0] or _CHANGE_LABEL.match(c[0])), None)
    if case is None or len(kernels) != 2 or any(len(c) <= centre for c, _ in kernels):
        return []
    sides = [side_of_label(_MARK.sub("", c[0])) for c, _ in kernels]  # "(A) base"
    if sides.count("before") != 1:  # "BASE" and "TEST": the one before, and the other
        return []
    before, after = (kernels[0], kernels[1]) if sides[0] == "before" else (kernels[1], kernels[0])
    base, patched = to_float(before[0][centre]), to_float(after[0][centre])
    if base is None or patched is None:
        return []
    sd_base = to_float(before[0][spread]) if spread is not None else None
    sd_patched = to_float(after[0][spread]) if spread is not None else None
    stated = to_float(change[centre].rstrip("%")) if change and len(change) > centre else None
    return [Measurement(
        metric=case, base=base, patched=patched,
        cv_base_pct=100.0 * sd_base / base if sd_base is not None and base else None,
        cv_patched_pct=100.0 * sd_patched / patched if sd_patched is not None and patched else None,
        spread_source="stddev column" if sd_base is not None else None,
        higher_is_better=higher if higher is not None else metric_higher_is_better(case),
        stated_pct=stated, stated_kind="relative" if stated is not None else None,
        base_label=before[0][0], patched_label=after[0][0], line=after[1],
    )]  # fmt: skip
