"""Judging a result table: every column of a non-base kernel against the base kernel's same
column with `bot.analysis.verdict.compare`, the columns of one table held together as one family
(Benjamini-Hochberg with `judge_metrics`, at the table's alpha), each column in its own direction
when its header names a unit, plus what a reader should know about the numbers
(outliers on the worse side, a mean moved by a few runs, printed avg/min/max that do not match
the rows read back)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from bot.analysis.claims.judge_measurement import significant
from bot.analysis.claims.judgement import ColumnJudgement, Judgement, level_pct
from bot.analysis.claims.model import ResultTable, TableColumn, fmt_value
from bot.analysis.verdict import Comparison, compare, judge_metrics

# A mean this far (in percentage points) from the Hodges-Lehmann estimate is being moved by a few
# runs, not by the bulk of them: the reader is told not to trust it.
MEAN_MISLEADS_PP = 2.0


def judge_table(table: ResultTable, *, delta: float, alpha: float) -> Judgement:
    """Each non-base kernel's columns against the base kernel's, and a one-sentence summary."""
    notes = list(_table_checks(table))
    pairs = table.pairs()
    if not pairs:
        return Judgement(
            "no-comparison",
            "The table holds one kernel's runs only: there is nothing to compare them with.",
            notes=tuple(notes),
        )
    alone: dict[str, tuple[TableColumn, TableColumn, Comparison, bool]] = {}
    unknown = False
    for base, other in pairs:
        if min(base.samples + other.samples) <= 0:
            notes.append(f"{other.label}: values <= 0 cannot be compared as ratios; skipped.")
            continue
        own = other.higher_is_better
        column_higher = own if own is not None else table.higher_is_better
        unknown |= column_higher is None
        comparison = compare(
            base.samples,
            other.samples,
            higher_is_better=column_higher is not False,
            delta=delta,
            alpha=alpha,
        )
        alone[other.label] = (base, other, comparison, column_higher is not None)
    if unknown:
        notes.append(
            "Neither the unit nor the benchmark says whether higher is better: the changes are "
            "called increase or decrease."
        )
    # The columns of one table are one family: Benjamini-Hochberg across them at alpha.
    family = judge_metrics({label: c for label, (_, _, c, _) in alone.items()}, q=alpha)
    judged = [
        ColumnJudgement(
            label,
            base.label,
            other.label,
            family[label],
            known,
            _column_notes(base, other, comparison, alpha)
            + _family_note(family[label], len(alone)),
            alone=comparison,
        )
        for label, (base, other, comparison, known) in alone.items()
    ]
    if not judged:
        return Judgement("no-comparison", "No column could be compared.", notes=tuple(notes))
    return Judgement(
        "judged", _table_summary(judged, alpha), comparisons=tuple(judged), notes=tuple(notes)
    )


def _family_note(comparison: Comparison, columns: int) -> tuple[str, ...]:
    if not comparison.fdr_demoted:
        return ()
    return (
        f"p={significant(comparison.pvalue):g} is below {comparison.alpha:g} on its own, but not "
        f"once the table's {columns} comparisons are held together (Benjamini-Hochberg).",
    )


def too_few_runs(n_base: int, n_patched: int, alpha: float) -> str | None:
    """A note when no ordering of the runs could make the rank test significant: with 3 runs a
    side its smallest two-sided p is 2 / C(6, 3) = 0.1."""
    smallest = 2.0 / math.comb(n_base + n_patched, n_base)
    if smallest <= alpha:
        return None
    return (f"With {n_base} and {n_patched} runs the rank test cannot reach "
            f"p <= {alpha:g} however the runs fall (its smallest p is {smallest:.2g}): more "
            "runs are needed to tell.")


def _column_notes(
    base: TableColumn, other: TableColumn, comparison: Comparison, alpha: float
) -> tuple[str, ...]:
    notes = []
    few = too_few_runs(len(base.samples), len(other.samples), alpha)
    if few:
        notes.append(f"{other.label}: {few[0].lower()}{few[1:]}")
    # Outliers on the worse side only (slow runs when lower is better): those a user suffers.
    for column, outliers in ((base, comparison.tail.base), (other, comparison.tail.patched)):
        if outliers:
            values = ", ".join(fmt_value(o.value) for o in outliers)
            noun = "outlier" if len(outliers) == 1 else "outliers"
            notes.append(f"{len(outliers)} {noun} on the worse side in {column.label}: {values}.")
    if comparison.tail.kind is not None:
        notes.append(
            f"{comparison.tail.kind.value} in {other.label}: more outliers on the worse side "
            f"than {base.label}."
        )
    if abs(comparison.mean_change_pct - comparison.change_pct) > MEAN_MISLEADS_PP:
        notes.append(
            f"{other.label}: the mean change ({comparison.mean_change_pct:+.2f}%) misleads, "
            f"moved by a few runs; the median ({comparison.median_change_pct:+.2f}%) and the "
            f"Hodges-Lehmann estimate ({comparison.change_pct:+.2f}%) are not."
        )
    return tuple(notes)


def _table_summary(judged: Sequence[ColumnJudgement], alpha: float) -> str:
    changed = [j for j in judged if j.comparison.changed]
    rest = [j for j in judged if not j.comparison.changed]
    parts = []
    if changed:
        parts.append("; ".join(f"{j.label} {j.words}" for j in changed))
    if rest:
        # Columns that say the same in one clause, each clause after its own columns: an
        # interval is worth nothing beside another column's label.
        by_words: dict[str, list[str]] = {}
        for j in rest:
            by_words.setdefault(j.words, []).append(j.label)
        parts.append("; ".join(f"{', '.join(labels)}: {words}"
                               for words, labels in by_words.items()))
    level = level_pct(alpha)
    if len(judged) == 1:  # not "None of 1 comparisons"
        head = f"The comparison {'shows' if changed else 'does not show'} a change at {level}"
    elif changed:
        head = f"{len(changed)} of {len(judged)} comparisons show a change at {level}"
    else:
        head = f"None of {len(judged)} comparisons shows a change at {level}"
    return f"{head} ({'; '.join(parts)})."


def _table_checks(table: ResultTable) -> Iterable[str]:
    """The printed avg/min/max rows against the rows read back: a misread table shows here."""
    for column in table.columns:
        n = len(column.samples)
        mean = sum(column.samples) / n
        computed = {
            "avg": mean,
            "average": mean,
            "mean": mean,
            "min": min(column.samples),
            "max": max(column.samples),
        }
        for name, printed in column.summary.items():
            if name in computed and not _close(printed, computed[name]):
                yield (
                    f"{column.label}: printed {name} {printed:g} differs from the {n} runs "
                    f"read ({computed[name]:.6g})."
                )


def _close(printed: float, computed: float) -> bool:
    """Whether a printed summary is the computed one cut to the digits it was printed with
    (rounded or truncated: authors do both, 72.5456 is printed 72.545 in the hackbench seed)."""
    text = repr(printed)
    decimals = 0 if "e" in text or text.endswith(".0") else len(text.partition(".")[2])
    return abs(printed - computed) <= 10**-decimals + 1e-9
