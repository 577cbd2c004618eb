"""mmtests `compare-kernels.sh` output, read into measurements.

    hackbench-process-pipes
                               6.8.0-rc1              6.8.0-rc1
                                 vanilla        lru-batch-v2r3
    Amean     4        0.4251 (   0.00%)      0.4107 *   3.39%*
    Stddev    4        0.0051 (   0.00%)      0.0060 ( -17.65%)
    CoeffVar  4        1.20 (   0.00%)        1.46 ( -21.70%)

Every row is one statistic (Amean, Hmean, Gmean, Min, Max, Stddev, CoeffVar, ...) of one case
label, a value per kernel, the first kernel the base. The bracketed percentage is the *gain*, not
the change: mmtests signs it so that positive is better, so for a time (lower is better) +3.39%
means the time went down 3.39%. A percentage between stars (`*   3.39%*`) is one mmtests judged
significant; brackets mean it did not. The Stddev and CoeffVar rows give the spread (CoeffVar is
already the CV in percent). The direction of a case is read from the sign convention itself:
gain = +change means higher is better, gain = -change lower is better.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.analysis.claims.benchmarks import metric_higher_is_better
from bot.analysis.claims.measurement import Measurement
from bot.analysis.claims.numbers import NUMBER, Budget, normalize_text, to_float
from bot.analysis.claims.text import Block, BodyLine

# "Percentage" is a case's own result, not a statistic of runs: thpscale's huge page success;
# "Ops" the one figure of each case in mmtests' output of 2013 (`Ops memcachetest-715M`).
_PRIMARY = (
    "Hmean", "Amean", "Gmean", "Mean", "BAmean-99", "BHmean-99", "Median", "Percentage", "Ops",
)  # fmt: skip
_STAT = (
    r"(?:Min|Max|Amean|Hmean|Gmean|Mean|Median|Stddev|CoeffVar|B[AH]mean-\d+|Max-\d+|\w+mean"
    r"|Percentage|Ops)"
)
_CELL = re.compile(rf"({NUMBER})\s*([(*])\s*({NUMBER})%\s*[)*]")
_COUNT = re.compile(r"[\d.]+")
_ROW = re.compile(rf"^\s*(?P<stat>{_STAT})\s+(?P<label>\S+)\s+(?P<cells>{NUMBER}\s*[(*].*)$")


@dataclass(frozen=True)
class _Cell:
    value: float
    gain: float
    starred: bool


def find_mmtests_tables(
    block: Block, runs: int | None, budget: Budget
) -> list[tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, ...]]]:
    """(measurements, lines, kernel names) for every compare-kernels table in the block."""
    lines = list(block.lines)
    found = []
    i = 0
    while i < len(lines):
        budget.charge()
        rows: dict[str, dict[str, tuple[list[_Cell], BodyLine]]] = {}
        order: list[str] = []
        j = i
        while j < len(lines):
            budget.charge()
            parsed = _parse_row(lines[j])
            if parsed is None:
                break
            stat, label, cells = parsed
            if label not in rows:
                order.append(label)
                rows[label] = {}
            rows[label].setdefault(stat, (cells, lines[j]))
            j += 1
        if not rows:
            i += 1
            continue
        ncols = max(len(c) for stats in rows.values() for c, _ in stats.values())
        names, heading = _kernel_names(lines, i, ncols)
        measurements = [m for label in order for m in _label(label, rows[label], names, runs)]
        if measurements:
            found.append((measurements, tuple(heading) + tuple(lines[i:j]), tuple(names)))
        i = j
    return found


def _parse_row(line: BodyLine) -> tuple[str, str, list[_Cell]] | None:
    text = normalize_text(line.text)
    if len(text) > 2000:
        return None
    match = _ROW.match(text)
    if not match:
        return None
    cells = []
    for value, opener, gain in _CELL.findall(match.group("cells")):
        number, pct = to_float(value), to_float(gain)
        if number is None or pct is None:
            return None
        cells.append(_Cell(number, pct, opener == "*"))
    if len(cells) < 2:
        return None
    return match.group("stat"), match.group("label"), cells


def _kernel_names(
    lines: Sequence[BodyLine], i: int, ncols: int
) -> tuple[list[str], list[BodyLine]]:
    """Kernel names from the (up to two) header lines above the first row: the lower line names
    the builds, the upper their versions; "base" and "patchedN" when no header is there."""
    heading = []
    names: list[str] | None = None
    for k in range(i - 1, max(-1, i - 3), -1):
        words = lines[k].text.split()
        if len(words) != ncols:  # "before (9cd6ffa6025)  after (f1a7941243c1)"
            words = re.split(r"\s{2,}", lines[k].text.strip())
        if len(words) != ncols:
            break
        heading.insert(0, lines[k])
        names = names or words
    if names is None:
        names = ["base"] + [f"patched{n}" for n in range(1, ncols)]
    return names, heading


def _label(
    label: str,
    stats: dict[str, tuple[list[_Cell], BodyLine]],
    names: Sequence[str],
    runs: int | None,
) -> list[Measurement]:
    primary = next((s for s in _PRIMARY if s in stats), None)
    if primary is None:
        primary = next((s for s in stats if s.lower().endswith("mean")), None)
    if primary is None:
        return []
    cells, line = stats[primary]
    base = cells[0]
    cv = _spreads(stats, [c.value for c in cells])
    # The first column's gain is 0.00% against itself; any other figure there means the gains
    # are against a kernel the paste left out, and say nothing of these two.
    own_base = abs(base.gain) < 0.005
    found = []
    for col in range(1, len(cells)):
        cell = cells[col] if own_base else _Cell(cells[col].value, 0.0, False)
        higher = _direction(base.value, cell, label, primary)
        found.append(
            Measurement(
                metric=_metric_name(primary, label),
                base=base.value,
                patched=cell.value,
                n_base=runs,
                n_patched=runs,
                cv_base_pct=cv[0] if cv else None,
                cv_patched_pct=cv[col] if cv and col < len(cv) else None,
                spread_source=("mmtests CoeffVar" if "CoeffVar" in stats else "mmtests Stddev")
                if cv
                else None,
                higher_is_better=higher,
                stated_pct=cell.gain if own_base else None,
                stated_kind="gain" if own_base else None,
                marked_significant=cell.starred if own_base else None,
                base_label=names[0] if names else "base",
                patched_label=names[col] if col < len(names) else f"patched{col}",
                line=line,
            )
        )
    return found


def _metric_name(stat: str, label: str) -> str:
    """The case as the table prints it when its label is only a number (hackbench's groups,
    a thread count): `Amean 16`. In prose "16 improvement" reads as a count of sixteen."""
    return f"{stat} {label}" if _COUNT.fullmatch(label) else label


def _spreads(
    stats: dict[str, tuple[list[_Cell], BodyLine]], values: Sequence[float]
) -> list[float | None] | None:
    if "CoeffVar" in stats:
        return [c.value for c in stats["CoeffVar"][0]]
    if "Stddev" in stats:
        sds = [c.value for c in stats["Stddev"][0]]
        return [100.0 * sd / v if v else None for sd, v in zip(sds, values, strict=False)]
    return None


def _direction(base: float, cell: _Cell, label: str, stat: str) -> bool | None:
    """Higher is better when mmtests' gain has the sign of the change, lower when the opposite;
    from the case name (or Hmean: a rate) when nothing changed."""
    if base and cell.value != base and cell.gain:
        change = 100.0 * (cell.value / base - 1.0)
        return (change > 0) == (cell.gain > 0)
    by_name = metric_higher_is_better(label)
    if by_name is not None:
        return by_name
    return True if stat == "Hmean" else None
