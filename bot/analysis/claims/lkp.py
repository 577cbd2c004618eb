"""The kernel test robot's comparison tables (lkp-tests `compare`), read into measurements.

lkp prints, under the two commits' ids and a rule,

             %stddev     %change         %stddev
                 \\          |                \\
        263173           -11.7%     232411        will-it-scale.per_process_ops
        138055 ± 18%     +33.4%     184128 ± 14%  cpuidle..usage
          0.37 ±  6%      +1.9        2.25 ±  5%  mpstat.cpu.all.soft%

The value columns are each commit's mean over its runs; "± x%" is the standard deviation as a
percentage of that mean (a per-run CV), truncated to a whole percent and printed only above 2%: a
blank stands for 2% or less (or a single run); lkp-tests, lib/compare.rb, `show_perf_change`.
Means are printed to two decimals below 1,000, whole from there, in four digits above 10^8, and
each stat lkp shows had at least three runs on one side. %change is relative, except
for metrics that are themselves percentages (`...%`), where lkp prints the difference in points
without a % sign. More than two commits give more (%change, value) pairs, each against the first.
lkp does not print the run count in the table; a count stated in the text is used. The robot's
re-tests of a proposed fix print `%stddev change %stddev` and leave the change blank.

A maintainer answering a report often writes between its rows ("What's free_time?"); the rows
after the comment continue the table above it, under no heading of their own, and are read with
its commit ids. Rows quoted without any heading (a reviewer quoting the two lines that matter)
are read when two or more in a row have lkp's shape, a change column included, and name lkp's
dotted stats (`vm-scalability.throughput`); their kernels are "base" and "patched".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from bot.analysis.claims.benchmarks import metric_higher_is_better
from bot.analysis.claims.measurement import Measurement
from bot.analysis.claims.numbers import NUMBER, Budget, normalize_text, to_float
from bot.analysis.claims.text import Block, BodyLine

_HEADER = re.compile(r"%stddev\s+%?change\s+%stddev")
# lkp prints no "± x%" for a spread of this much or less (percent of the mean).
BLANK_CV_MAX = 2.0
# "± 3%" as printed; "ą" is the same byte (0xB1) read as ISO-8859-2 by some mailers, "Â±" its
# UTF-8 read as Latin-1, "A+-" and "__" what transliterating mailers and archives made of it.
# A single run's spread was once printed as "-1%".
_VALUE = rf"(?P<vI>{NUMBER})(?:\s*(?:Â?±|ą|__|A?\+-)\s*(?P<sI>-?\d+(?:\.\d+)?)%)?"
_CHANGE = r"(?P<cI>[-+]\d+(?:\.\d+)?(?:e[-+]?\d+)?%?)"


def _row_pattern(kernels: int) -> re.Pattern[str]:
    parts = [_VALUE.replace("I>", "0>")]
    for i in range(1, kernels):
        change = _CHANGE.replace("I>", f"{i}>")
        parts.append(rf"(?:{change}\s+)?" + _VALUE.replace("I>", f"{i}>"))
    return re.compile(r"^\s*" + r"\s+".join(parts) + r"\s+(?P<name>\S+)\s*$", re.IGNORECASE)


Found = tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, ...]]


def find_lkp_tables(
    block: Block, runs: int | None, budget: Budget, continues: tuple[str, ...] = ()
) -> list[Found]:
    """(measurements, lines, kernel ids) for every lkp comparison table in the block;
    `continues`, the ids of a table in an earlier block at this quote depth, reads rows at the
    block's start as more of that table."""
    lines = list(block.lines)
    found = []
    if continues:
        start = next((k for k, ln in enumerate(lines) if ln.text.strip()), len(lines))
        found.extend(_rows(lines, start, continues, runs, budget, []))
    for i, line in enumerate(lines):
        budget.charge()
        if not _HEADER.search(line.text):
            continue
        ids = _commit_ids(lines, i, line.text.count("%stddev"))
        used = [ln for ln in lines[max(0, i - 2) : i + 1] if ln.text.strip()]
        found.extend(_rows(lines, i + 1, ids, runs, budget, used))
    taken = {ln.number for _, used_lines, _ in found for ln in used_lines}
    found.extend(_headerless(lines, taken, runs, budget))
    taken = {ln.number for _, used_lines, _ in found for ln in used_lines}
    found.extend(_labelled(lines, taken, runs, budget))
    found.sort(key=lambda table: table[1][0].number)
    return found


def _quoted_row(kernels: int) -> re.Pattern[str]:
    """A row of `kernels` commits with every change printed and a dotted stat's name."""
    parts = [_VALUE.replace("I>", "0>")]
    for i in range(1, kernels):
        parts.append(_CHANGE.replace("I>", f"{i}>") + r"\s+" + _VALUE.replace("I>", f"{i}>"))
    return re.compile(r"^\s*" + r"\s+".join(parts) + r"\s+(?P<name>[\w-]+\.\S+)\s*$")


_QUOTED_ROWS = {kernels: _quoted_row(kernels) for kernels in (4, 3, 2)}


def _headerless(
    lines: Sequence[BodyLine], taken: set[int], runs: int | None, budget: Budget
) -> list[Found]:
    """Runs of two or more lkp rows under no heading (blank lines between them), in lines no
    table took; their commits named by an id line and a rule right above, else "base",
    "patched"."""
    found = []
    j = 0
    while j < len(lines):
        budget.charge()
        kernels = _quoted_kernels(lines[j], taken)
        if kernels is None:
            j += 1
            continue
        rows, k = [], j
        while k < len(lines) and (not lines[k].text.strip() or lines[k].number not in taken):
            budget.charge()
            text = lines[k].text
            match = _QUOTED_ROWS[kernels].match(normalize_text(text)) if len(text) < 2000 else None
            if match is None and text.strip():
                break
            if match is not None:
                rows.append((match, lines[k]))
            k += 1
        if len(rows) >= 2:
            ids = _ids_over_rule(lines, j, kernels)
            measurements = [m for match, line in rows
                            for m in _row(match, kernels, ids, runs, line)]  # fmt: skip
            found.append((measurements, tuple(line for _, line in rows), ids))
        j = k
    return found


# "wis-mmap1-25%    223670    +33.3%    298205    per_process_ops" under "base  base+patch":
# lkp's row with the case's name in front (Feng Tang's slab order series).
_LABELLED_ROW = re.compile(
    rf"^\s*(?P<label>[A-Za-z][\w.+%/-]*)\s+{_VALUE.replace('I>', '0>')}\s+"
    rf"{_CHANGE.replace('I>', '1>')}\s+{_VALUE.replace('I>', '1>')}\s+"
    r"(?P<name>[A-Za-z_][\w.-]*)\s*$"
)


def _labelled(
    lines: Sequence[BodyLine], taken: set[int], runs: int | None, budget: Budget
) -> list[Found]:
    """Labelled lkp rows right under a line naming the two kernels, in lines no table took."""
    found = []
    j = 1
    while j < len(lines):
        budget.charge()
        kernels = lines[j - 1].text.split()
        rows = []
        while (len(kernels) == 2 and j < len(lines) and lines[j].number not in taken
               and len(lines[j].text) < 2000
               and (match := _LABELLED_ROW.match(normalize_text(lines[j].text)))):  # fmt: skip
            budget.charge()
            rows.append((match, lines[j]))
            j += 1
        if rows:
            ids = (kernels[0], kernels[1])
            measurements = [replace(m, metric=f"{match.group('label')} {m.metric}")
                            for match, line in rows
                            for m in _row(match, 2, ids, runs, line)]  # fmt: skip
            found.append((measurements, (lines[j - len(rows) - 1], *(ln for _, ln in rows)), ids))
        j += 1
    return found


def _quoted_kernels(line: BodyLine, taken: set[int]) -> int | None:
    """How many commits a headerless row compares, or None when the line is no such row."""
    text = normalize_text(line.text)
    if line.number in taken or len(text) >= 2000 or not text.strip():
        return None
    return next((k for k, pattern in _QUOTED_ROWS.items() if pattern.match(text)), None)


def _ids_over_rule(lines: Sequence[BodyLine], j: int, kernels: int) -> tuple[str, ...]:
    """The commit ids on the line above a rule right above row j, else "base", "patched"..."""
    if j >= 2:
        rule, ids = lines[j - 1].text.split(), lines[j - 2].text.split()
        if len(rule) == len(ids) == kernels and all(set(w) <= set("-") for w in rule):
            return tuple(ids)
    return ("base",) + tuple(f"patched{'' if i == 1 else i}" for i in range(1, kernels))


def _rows(
    lines: Sequence[BodyLine],
    j: int,
    ids: tuple[str, ...],
    runs: int | None,
    budget: Budget,
    used: list[BodyLine],
) -> list[Found]:
    """The table whose rows start at line j (after `used`, its heading), as a one-item list;
    [] when no row is there."""
    pattern = _row_pattern(len(ids))
    measurements: list[Measurement] = []
    while j < len(lines):
        budget.charge()
        text = normalize_text(lines[j].text)
        if set(text.strip()) <= set("\\| "):
            j += 1
            if not text.strip():
                break
            used.append(lines[j - 1])
            continue
        match = pattern.match(text) if len(text) < 2000 else None
        if not match:
            break
        measurements.extend(_row(match, len(ids), ids, runs, lines[j]))
        used.append(lines[j])
        j += 1
    return [(measurements, tuple(used), ids)] if measurements else []


def _commit_ids(lines: Sequence[BodyLine], header: int, kernels: int) -> tuple[str, ...]:
    """The commit ids printed above the rule above the header, else "base", "patched"."""
    for k in range(header - 1, max(-1, header - 4), -1):
        words = lines[k].text.split()
        if len(words) == kernels and not all(set(w) <= set("-") for w in words):
            return tuple(words)
    return ("base",) + tuple(f"patched{'' if i == 1 else i}" for i in range(1, kernels))


def _row(
    match: re.Match[str], kernels: int, ids: Sequence[str], runs: int | None, line: BodyLine
) -> list[Measurement]:
    name = match.group("name")
    base = to_float(match.group("v0"))
    base_sd = _spread(match.group("s0"))
    higher = metric_higher_is_better(name)
    rows = []
    for i in range(1, kernels):
        change = match.group(f"c{i}")
        points = change is not None and not change.endswith("%")
        rows.append(
            Measurement(
                metric=name,
                base=base,
                patched=to_float(match.group(f"v{i}")),
                unit="%" if name.endswith("%") else None,
                n_base=runs,
                n_patched=runs,
                cv_base_pct=base_sd,
                cv_patched_pct=_spread(match.group(f"s{i}")),
                spread_source="lkp %stddev",
                cv_blank_max_pct=BLANK_CV_MAX,
                higher_is_better=higher,
                stated_pct=float(change.rstrip("%")) if change is not None else None,
                stated_kind=("points" if points else "relative") if change is not None else None,
                base_label=ids[0],
                patched_label=ids[i] if i < len(ids) else f"patched{i}",
                line=line,
            )
        )
    return rows


def _spread(text: str | None) -> float | None:
    """A printed %stddev; None for none, or for the "-1%" once printed for a single run."""
    value = float(text) if text is not None else None
    return value if value is not None and value >= 0 else None
