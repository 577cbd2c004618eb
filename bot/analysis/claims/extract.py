"""Finding every performance claim in a message body, numbered in body order.

Each block of one quote depth is read in turn: tools' tables and sections first, then tables of
statistics columns (MEAN, STDDEV, ... over kernel rows), then tables of runs, then comparison
tables (one value a cell), then before/after blocks (a kernel's name on a line, its metrics
under it), then before/after line pairs, then "from X to
Y" sentences, then percentages in the remaining sentences; a line read as one claim is not read
again as another. A percentage written just below a table (nothing but
blank lines between) refers to that table.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from bot.analysis.claims.benchmarks import (
    benchmarks_in,
    block_benchmarks,
    change_direction,
    higher_is_better,
    metric_higher_is_better,
)
from bot.analysis.claims.comparisons import find_comparison_tables
from bot.analysis.claims.lkp import find_lkp_tables
from bot.analysis.claims.measurement import Measurement, cv_pct
from bot.analysis.claims.mmtests import find_mmtests_tables
from bot.analysis.claims.model import BeforeAfter, Claim, ResultTable, StatedChange, fmt_value
from bot.analysis.claims.numbers import Budget, join_spaced_thousands, normalize_text
from bot.analysis.claims.sections import find_tool_sections
from bot.analysis.claims.side_blocks import find_side_blocks
from bot.analysis.claims.stat_columns import find_stat_column_tables
from bot.analysis.claims.statements import (
    FROM_TO,
    PERFORMANCE,
    LabelledValue,
    RunCount,
    before_after_pairs,
    find_run_counts,
    level_rows,
    parse_number,
    percentages,
    runs_for,
    stated_interval,
    stated_pvalue,
)
from bot.analysis.claims.tables import TableFound, find_tables
from bot.analysis.claims.text import Block, BodyLine, Sentence, message_blocks, sentences
from bot.analysis.claims.tool_runs import find_tool_runs


def extract_claims(body: str, *, sender: str = "", budget: Budget | None = None) -> list[Claim]:
    """Every performance claim in the body, in body order, numbered from 1. Raises
    `TooMuchWork` when reading the body would exceed the budget."""
    budget = budget or Budget()
    budget.charge(len(body) // 10)  # splitting into lines, blocks and sentences
    drafts: list[Claim] = []
    lkp_ids: dict[int, tuple[str, ...]] = {}  # quote depth -> the ids of its last lkp table
    for block in message_blocks(body, sender):
        budget.charge(len(block.lines))
        drafts.extend(_block_claims(block, budget, lkp_ids))
    drafts.sort(key=lambda c: (c.first_line, c.kind))
    numbered = [replace(c, index=n) for n, c in enumerate(drafts, start=1)]
    # A draft's refers_to holds the first line of its table; turn it into the table's index.
    by_first_line = {c.first_line: c.index for c in numbered if c.kind == "table"}
    return [
        replace(c, refers_to=by_first_line.get(c.refers_to)) if c.refers_to else c for c in numbered
    ]


# Longer "sentences" are dumps (a line of 10,000 numbers), read by no pattern: patterns over them
# would cost more than the whole message is allowed.
MAX_SENTENCE = 2000


def _block_claims(
    block: Block, budget: Budget, lkp_ids: dict[int, tuple[str, ...]]
) -> list[Claim]:
    """The block's claims, unnumbered (index 0; refers_to holds a table's first line).
    `lkp_ids` carries an lkp table's commit ids from block to block of its quote depth, and is
    updated with this block's."""
    names = block_benchmarks(block)
    counts = find_run_counts(block)
    claims: list[Claim] = []
    used: set[int] = set()

    prose_counts = [c for c in counts if not _TOOL_COUNT.search(c.line.text)]

    def summarise(layout: str, found: Sequence[_Found]) -> None:
        """Each table found as a summary claim, with the run count stated above it."""
        for measurements, lines, kernels in found:
            runs = _count_before(lines[0].number, prose_counts)
            measurements = [_with_runs(m, runs) for m in measurements]
            claims.append(_summary_claim(layout, measurements, lines, kernels, block, names))
            used.update(line.number for line in lines)

    lkp = find_lkp_tables(block, None, budget, continues=lkp_ids.get(block.depth, ()))
    if lkp:
        lkp_ids[block.depth] = lkp[-1][2]
    summarise("lkp", lkp)
    summarise("mmtests", _mmtests(block, lkp, budget))
    runs_at = partial(_count_before, counts=prose_counts)
    for measurements, lines, kernels in find_tool_sections(_without(block, used), runs_at,
                                                           budget):  # fmt: skip
        if measurements:
            layout = _section_layout(lines)
            claims.append(_summary_claim(layout, measurements, lines, kernels, block, names))
            used.update(line.number for line in lines)

    summarise("table", find_stat_column_tables(_without(block, used), budget))

    tables = find_tables(_without(block, used), names, budget)
    for found in tables:
        # Judging a column pair costs m * n pairwise differences (Hodges-Lehmann): counted here,
        # so that a 10 MB table is refused before the judge starts on it.
        budget.charge(sum(len(a.samples) * len(b.samples) for a, b in found.table.pairs()))
        claims.append(_table_claim(found, block, names, counts))
        used.update(line.number for line in found.lines)

    summarise("table", find_comparison_tables(_without(block, used), names, budget))
    summarise("side blocks", find_side_blocks(_without(block, used), budget))
    summarise("tool runs", find_tool_runs(_without(block, used), budget))

    for before, after in before_after_pairs(block, used):
        claims.append(_before_after_claim(before, after, block, names, counts))
        used.update((before.line.number, after.line.number))

    for sentence in sentences(block, skip=used):
        budget.charge(len(sentence.text) // 100 + 1)
        if len(sentence.text) > MAX_SENTENCE:
            continue  # a wall of text or digits, not a sentence a claim is made in
        prose = join_spaced_thousands(normalize_text(sentence.text))
        for match in FROM_TO.finditer(prose):
            claim = _from_to_claim(match, sentence, block, names, counts)
            if claim:
                claims.append(claim)
                used.update(line.number for line in sentence.lines)

    after_table = _tables_by_next_line(tables, block)
    levels = level_rows(_without(block, used).lines)
    for sentence in sentences(block, skip=used | levels):
        if len(sentence.text) > MAX_SENTENCE:
            continue
        changes = percentages(sentence)
        if not changes:
            continue
        # once a sentence, not once a percentage: a wall of them costs its length, not its square
        stated = runs_for(sentence.lines[0].number, counts)
        table_before = after_table.get(sentence.lines[0].number)
        sentence_benchmarks = _claim_benchmarks(sentence.text, names)
        for change in changes:
            claims.append(
                Claim(
                    index=0,
                    kind="percentage",
                    text=sentence.text,
                    speaker=block.speaker,
                    lines=sentence.lines,
                    runs=stated.runs if stated else None,
                    runs_line=stated.line if stated else None,
                    benchmarks=sentence_benchmarks,
                    change=change,
                    refers_to=table_before.lines[0].number if table_before else None,
                )
            )
    return claims


# What every table reader returns: its measurements, the lines read, and the kernels' names.
_Found = tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, ...]]


def _mmtests(block: Block, lkp: Sequence[_Found], budget: Budget) -> list[_Found]:
    """mmtests tables in the lines no lkp table took."""
    taken = {line.number for _, lines, _ in lkp for line in lines}
    return find_mmtests_tables(_without(block, taken), None, budget)


def _without(block: Block, used: set[int]) -> Block:
    """The block with the lines already read as claims left out."""
    if not used:
        return block
    return replace(block, lines=tuple(ln for ln in block.lines if ln.number not in used))


# Run counts a tool prints in its own heading belong to that paste, not to the text around it.
_TOOL_COUNT = re.compile(r"Performance counter stats|\(std deviation\)")


def _count_before(line_number: int, counts: Sequence[RunCount]) -> int | None:
    """The run count stated nearest above a table, in the same block."""
    before = [c for c in counts if c.line.number < line_number]
    return before[-1].runs if before else None


def _with_runs(m: Measurement, runs: int | None) -> Measurement:
    if runs is None or m.n_base is not None:
        return m
    return replace(m, n_base=runs, n_patched=runs)


def _section_layout(lines: Sequence[BodyLine]) -> str:
    text = " ".join(line.text for line in lines[:3])
    for layout, marker in (("perf stat", "Performance counter stats"),
                           ("perf stat", "seconds time elapsed"), ("kernbench", "load"),
                           ("fio", "groupid="), ("stress-ng", "stress-ng")):  # fmt: skip
        if marker in text:
            return layout
    return "mean-sd"


def _summary_claim(
    layout: str,
    measurements: Sequence[Measurement],
    lines: Sequence[BodyLine],
    kernels: Sequence[str],
    block: Block,
    names: Sequence[str],
) -> Claim:
    metrics = ", ".join(dict.fromkeys(m.metric for m in measurements[:4]))
    more = f" and {len(measurements) - 4} more" if len(measurements) > 4 else ""
    return Claim(
        index=0,
        kind="summary",
        text=f"{layout} comparison, {' vs '.join(kernels)}: {metrics}{more}",
        speaker=block.speaker,
        lines=tuple(lines),
        runs=measurements[0].n if measurements else None,
        runs_line=None,
        benchmarks=tuple(names),
        layout=layout,
        measurements=tuple(measurements),
    )


def table_measurements(table: ResultTable, benchmarks: Sequence[str]) -> tuple[Measurement, ...]:
    """Each (base column, other kernel's column) pair of a table of runs as a measurement."""
    found = []
    for base, other in table.pairs():
        higher = other.higher_is_better
        if higher is None:
            higher = table.higher_is_better
        metric = other.header or table.unit or (benchmarks[0] if benchmarks else "value")
        found.append(
            Measurement(
                metric=metric,
                base=sum(base.samples) / len(base.samples),
                patched=sum(other.samples) / len(other.samples),
                unit=other.unit or table.unit,
                n_base=len(base.samples),
                n_patched=len(other.samples),
                cv_base_pct=cv_pct(base.samples),
                cv_patched_pct=cv_pct(other.samples),
                spread_source="samples",
                higher_is_better=higher,
                samples_base=base.samples,
                samples_patched=other.samples,
                base_label=base.label,
                patched_label=other.label,
            )
        )
    return tuple(found)


def _claim_benchmarks(text: str, block_names: Sequence[str]) -> tuple[str, ...]:
    """Benchmarks named in the claim's own sentence, else those named in its block."""
    return tuple(benchmarks_in(text) or block_names)


def _table_claim(
    found: TableFound, block: Block, names: Sequence[str], counts: Sequence[RunCount]
) -> Claim:
    table = found.table
    n = len(table.columns[0].samples)
    stated = runs_for(found.lines[0].number, counts)
    kernels = " vs ".join(k for k in table.kernels if k) or "one kernel"
    headers = ", ".join(dict.fromkeys(c.header for c in table.columns if c.header))
    text = f"table of {n} runs per column: {kernels}" + (f" ({headers})" if headers else "")
    return Claim(
        index=0,
        kind="table",
        text=text,
        speaker=block.speaker,
        lines=found.lines,
        runs=n,
        runs_line=stated.line if stated and stated.runs == n else None,
        benchmarks=tuple(names),
        table=table,
        layout="runs",
        measurements=table_measurements(table, names),
    )


def _before_after_claim(
    before: LabelledValue,
    after: LabelledValue,
    block: Block,
    names: Sequence[str],
    counts: Sequence[RunCount],
) -> Claim:
    stated = runs_for(before.line.number, counts)
    benchmarks = tuple(names)
    unit = before.unit or after.unit
    named = before.metric if before.metric == after.metric else None
    pair = BeforeAfter(
        before.label,
        before.value,
        after.label,
        after.value,
        unit,
        after.stated_pct if after.stated_pct is not None else before.stated_pct,
        metric_higher_is_better(named, unit) if named else higher_is_better(unit, benchmarks),
    )
    pct = pair.stated_pct if pair.stated_pct is not None else round(pair.computed_pct, 2)
    runs = before.n or after.n or (stated.runs if stated else None)
    measurement = Measurement(
        metric=named or unit or (benchmarks[0] if benchmarks else "value"),
        base=before.value,
        patched=after.value,
        unit=unit,
        n_base=before.n or runs,
        n_patched=after.n or runs,
        cv_base_pct=100.0 * before.sd / before.value if before.sd and before.value else None,
        cv_patched_pct=100.0 * after.sd / after.value if after.sd and after.value else None,
        spread_source="mean ± sd" if before.sd or after.sd else None,
        higher_is_better=pair.higher_is_better,
        stated_pct=pair.stated_pct,
        stated_kind="relative" if pair.stated_pct is not None else None,
        stated_ci_pct=stated_interval(after.line.text),
        stated_p=stated_pvalue(after.line.text),
        base_label=before.label,
        patched_label=after.label,
        line=after.line,
    )
    unit_text = f" {unit}" if unit else ""
    text = (
        f"{before.label} {fmt_value(before.value)}{unit_text} -> {after.label} "
        f"{fmt_value(after.value)}{unit_text} ({pct:+g}%)"
    )
    return Claim(
        index=0,
        kind="before-after",
        text=text,
        speaker=block.speaker,
        lines=(before.line, after.line),
        runs=runs,
        runs_line=stated.line if stated and stated.runs == runs else None,
        benchmarks=benchmarks,
        change=StatedChange(pct, pct, change_direction(pct, pair.higher_is_better)),
        before_after=pair,
        layout="before-after lines",
        measurements=(measurement,),
    )


# The words of a "X vs Y" sentence say which value is the patched kernel's: "it indeed took
# longer to finish the test: 244s vs 218s" puts the patched kernel's time first.
_WORSE_WORDS = re.compile(r"\b(?:longer|slower|worse|more time)\b", re.IGNORECASE)
_BETTER_WORDS = re.compile(r"\b(?:shorter|faster|quicker|better|less time)\b", re.IGNORECASE)


def _patched_first(text: str, first: float, second: float, higher: bool | None) -> bool:
    """Whether "first vs second" lists the patched kernel first, as its words say; False when
    they say nothing or both ways."""
    worse, better = bool(_WORSE_WORDS.search(text)), bool(_BETTER_WORDS.search(text))
    if higher is None or worse == better or first == second:
        return False
    # The patched value is the better one when the words praise it, the worse when they don't.
    patched_is_larger = better == higher
    return (first > second) == patched_is_larger


def _from_to_claim(
    match: re.Match[str],
    sentence: Sentence,
    block: Block,
    names: Sequence[str],
    counts: Sequence[RunCount],
) -> Claim | None:
    a = match.group("a") or match.group("a2") or match.group("a3")
    b = match.group("b") or match.group("b2") or match.group("b3")
    unit = next(
        (match.group(g) for g in ("ub", "ub2", "ub3", "ua", "ua2", "ua3") if match.group(g)), None
    )
    unit = unit.rstrip(".,;:") or None if unit else None
    benchmarks = _claim_benchmarks(sentence.text, names)
    # "from 4 to 8 threads" is a setup, not a result: the unit must be one of a measure, or,
    # with no unit, the sentence must speak of performance.
    if unit and higher_is_better(unit) is None:
        return None
    if not unit and not PERFORMANCE.search(sentence.text):
        return None
    direction_known = higher_is_better(unit, benchmarks)
    before, after = parse_number(a), parse_number(b)
    prose = match.string
    if match.group("a3") and before and after and _patched_first(sentence.text, before, after,
                                                                 direction_known):
        before, after = after, before
    if not before:
        return None
    pair = BeforeAfter("from", before, "to", after, unit, None, direction_known)
    pct = round(pair.computed_pct, 2)
    stated = runs_for(sentence.lines[0].number, counts)
    stated_pct, stated_kind = _stated_in_sentence(_contrasted_part(sentence, prose, match.start()))
    measurement = Measurement(
        metric=unit or (benchmarks[0] if benchmarks else "value"),
        base=before,
        patched=after,
        unit=unit,
        n_base=stated.runs if stated else None,
        n_patched=stated.runs if stated else None,
        higher_is_better=direction_known,
        stated_pct=stated_pct,
        stated_kind=stated_kind,
        stated_ci_pct=stated_interval(sentence.text),
        stated_p=stated_pvalue(sentence.text),
        line=sentence.lines[0],
    )
    return Claim(
        index=0,
        kind="before-after",
        text=sentence.text,
        speaker=block.speaker,
        lines=sentence.lines,
        runs=stated.runs if stated else None,
        runs_line=stated.line if stated else None,
        benchmarks=benchmarks,
        change=StatedChange(pct, pct, change_direction(pct, direction_known)),
        before_after=pair,
        layout="prose",
        measurements=(measurement,),
    )


_SPEED_UP = re.compile(r"\b(?:faster|quicker|speed-?ups?)\b", re.IGNORECASE)
_DOWN = re.compile(
    r"\b(?:reduc\w*|decreas\w*|drop\w*|fell|fall\w*|lower|less|fewer|shorter)\b", re.I
)
_UP = re.compile(r"\b(?:increas\w*|rise|rose|grew|grow\w*|higher|more|longer)\b", re.IGNORECASE)


# "not every setup has such significant >200% regression, but on average ... (the regression
# is about 2583221.62us vs 2153735.59us)": a percentage across a contrast states another change.
_CONTRAST = re.compile(r";|,?\s+(?:but|while|whereas|although|however)\s+", re.IGNORECASE)


def _contrasted_part(sentence: Sentence, prose: str, at: int) -> Sentence:
    """The part of the sentence (as `prose`, its normalised text) between the contrasts around
    position `at`."""
    contrasts = list(_CONTRAST.finditer(prose))
    lo = max((m.end() for m in contrasts if m.end() <= at), default=0)
    hi = min((m.start() for m in contrasts if m.start() >= at), default=len(prose))
    return Sentence(prose[lo:hi], sentence.lines) if (lo, hi) != (0, len(prose)) else sentence


def _stated_in_sentence(sentence: Sentence) -> tuple[float | None, str | None]:
    """The percentage a "from X to Y" sentence states beside its numbers, and what kind of
    figure it is (docs/claims.md, "Arithmetic"): a speed-up, a signed or an unsigned change."""
    changes = [c for c in percentages(sentence) if c.low_pct == c.high_pct]
    if not changes:
        return None, None
    value = changes[0].low_pct
    text = normalize_text(sentence.text)
    if _SPEED_UP.search(text):
        return abs(value), "speed-up"
    if re.search(rf"[-+]{abs(value):g}\s*%", text):
        return value, "relative"
    if _DOWN.search(text) and not _UP.search(text):
        return -abs(value), "relative"
    if _UP.search(text) and not _DOWN.search(text):
        return abs(value), "relative"
    return abs(value), "magnitude"


def _tables_by_next_line(tables: Sequence[TableFound], block: Block) -> dict[int, TableFound]:
    """Each table keyed by the first non-blank line after it: a sentence starting on that line
    follows the table with nothing but blank lines between, and sums it up."""
    numbers = [line.number for line in block.lines if line.text.strip()]
    keyed = {}
    for found in tables:
        i = bisect.bisect_right(numbers, found.lines[-1].number)
        if i < len(numbers):
            keyed[numbers[i]] = found
    return keyed
