"""Finding every performance claim in a message body, numbered in body order.

Each block of one quote depth is read in turn: result tables first, then before/after line
pairs, then "from X to Y" sentences, then percentages in the remaining sentences; a line read as
one claim is not read again as another. A percentage written just below a table (nothing but
blank lines between) refers to that table.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import replace

from bot.analysis.claims.benchmarks import (
    benchmarks_in,
    block_benchmarks,
    change_direction,
    higher_is_better,
)
from bot.analysis.claims.model import BeforeAfter, Claim, StatedChange, fmt_value
from bot.analysis.claims.statements import (
    FROM_TO,
    PERFORMANCE,
    LabelledValue,
    RunCount,
    before_after_pairs,
    find_run_counts,
    parse_number,
    percentages,
    runs_for,
)
from bot.analysis.claims.tables import TableFound, find_tables
from bot.analysis.claims.text import Block, Sentence, message_blocks, sentences


def extract_claims(body: str, *, sender: str = "") -> list[Claim]:
    """Every performance claim in the body, in body order, numbered from 1."""
    drafts: list[Claim] = []
    for block in message_blocks(body, sender):
        drafts.extend(_block_claims(block))
    drafts.sort(key=lambda c: (c.first_line, c.kind))
    numbered = [replace(c, index=n) for n, c in enumerate(drafts, start=1)]
    # A draft's refers_to holds the first line of its table; turn it into the table's index.
    by_first_line = {c.first_line: c.index for c in numbered if c.kind == "table"}
    return [
        replace(c, refers_to=by_first_line.get(c.refers_to)) if c.refers_to else c for c in numbered
    ]


def _block_claims(block: Block) -> list[Claim]:
    """The block's claims, unnumbered (index 0; refers_to holds a table's first line)."""
    names = block_benchmarks(block)
    counts = find_run_counts(block)
    claims: list[Claim] = []
    used: set[int] = set()

    tables = find_tables(block, names)
    for found in tables:
        claims.append(_table_claim(found, block, names, counts))
        used.update(line.number for line in found.lines)

    for before, after in before_after_pairs(block, used):
        claims.append(_before_after_claim(before, after, block, names, counts))
        used.update((before.line.number, after.line.number))

    for sentence in sentences(block, skip=used):
        for match in FROM_TO.finditer(sentence.text):
            claim = _from_to_claim(match, sentence, block, names, counts)
            if claim:
                claims.append(claim)
                used.update(line.number for line in sentence.lines)

    after_table = _tables_by_next_line(tables, block)
    for sentence in sentences(block, skip=used):
        for change in percentages(sentence):
            stated = runs_for(sentence.lines[0].number, counts)
            table_before = after_table.get(sentence.lines[0].number)
            claims.append(
                Claim(
                    index=0,
                    kind="percentage",
                    text=sentence.text,
                    speaker=block.speaker,
                    lines=sentence.lines,
                    runs=stated.runs if stated else None,
                    runs_line=stated.line if stated else None,
                    benchmarks=_claim_benchmarks(sentence.text, names),
                    change=change,
                    refers_to=table_before.lines[0].number if table_before else None,
                )
            )
    return claims


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
    pair = BeforeAfter(
        before.label,
        before.value,
        after.label,
        after.value,
        unit,
        after.stated_pct if after.stated_pct is not None else before.stated_pct,
        higher_is_better(unit, benchmarks),
    )
    pct = pair.stated_pct if pair.stated_pct is not None else round(pair.computed_pct, 2)
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
        runs=stated.runs if stated else None,
        runs_line=stated.line if stated else None,
        benchmarks=benchmarks,
        change=StatedChange(pct, pct, change_direction(pct, pair.higher_is_better)),
        before_after=pair,
    )


def _from_to_claim(
    match: re.Match[str],
    sentence: Sentence,
    block: Block,
    names: Sequence[str],
    counts: Sequence[RunCount],
) -> Claim | None:
    a = match.group("a") or match.group("a2")
    b = match.group("b") or match.group("b2")
    unit = match.group("ub") or match.group("ub2") or match.group("ua") or match.group("ua2")
    benchmarks = _claim_benchmarks(sentence.text, names)
    # "from 4 to 8 threads" is a setup, not a result: the unit must be one of a measure, or,
    # with no unit, the sentence must speak of performance.
    if unit and higher_is_better(unit) is None:
        return None
    if not unit and not PERFORMANCE.search(sentence.text):
        return None
    direction_known = higher_is_better(unit, benchmarks)
    before, after = parse_number(a), parse_number(b)
    if not before:
        return None
    pair = BeforeAfter("from", before, "to", after, unit, None, direction_known)
    pct = round(pair.computed_pct, 2)
    stated = runs_for(sentence.lines[0].number, counts)
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
    )


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
