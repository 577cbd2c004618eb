"""Judging one claim by the data given with it (docs/statistics.md).

A table gets a verdict per column (`judge_table`); a percentage written just below a table is
judged by that table; a change stated with a run count but no spread gets the per-run CV under
which it would be significant (`bot.analysis.claim_spread`); a change with neither runs nor
spread cannot be judged, and the judgement says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from bot.analysis.claim_spread import max_cv_for_significance
from bot.analysis.claims.arithmetic import arithmetic_checks
from bot.analysis.claims.judge_measurement import MeasurementJudgement, judge_measurement
from bot.analysis.claims.judge_table import judge_table, too_few_runs
from bot.analysis.claims.judgement import ColumnJudgement, Judgement, level_pct
from bot.analysis.claims.measurement import Measurement
from bot.analysis.claims.model import BeforeAfter, Claim
from bot.analysis.verdict import DEFAULT_ALPHA, DEFAULT_DELTA, compare

LISTED = 6  # changed metrics a summary names; the rest are counted


def judge_claim(
    claim: Claim,
    claims: Sequence[Claim] = (),
    *,
    delta: float = DEFAULT_DELTA,
    alpha: float = DEFAULT_ALPHA,
) -> Judgement:
    """What the data given with a claim supports; `claims` are the message's others (for tables
    a percentage refers to)."""
    if claim.kind == "summary":
        measured_only = tuple(
            _from_samples(m, delta=delta, alpha=alpha) if _has_runs(m)
            else _not_positive(m) if _runs_not_positive(m)
            else judge_measurement(m, delta=delta, alpha=alpha)
            for m in claim.measurements
        )  # fmt: skip
        return _summary_judgement(claim, measured_only, alpha)
    judgement = _judge_claim(claim, claims, delta=delta, alpha=alpha)
    by_label = {c.label: c for c in judgement.comparisons}
    measured = tuple(
        _from_column(by_label[m.patched_label], m)
        if m.patched_label in by_label and m.samples_base
        else judge_measurement(m, delta=delta, alpha=alpha)
        for m in claim.measurements
    )
    return replace(judgement, measurements=measured)


def _has_runs(m: Measurement) -> bool:
    """Whether both kernels' runs are given, each more than one and all positive."""
    runs = m.samples_base + m.samples_patched
    return len(m.samples_base) >= 2 and len(m.samples_patched) >= 2 and min(runs) > 0


def _runs_not_positive(m: Measurement) -> bool:
    runs = m.samples_base + m.samples_patched
    return len(m.samples_base) >= 2 and len(m.samples_patched) >= 2 and min(runs) <= 0


def _not_positive(m: Measurement) -> MeasurementJudgement:
    """Runs of 0 (`0:00.00elapsed`) have no ratio to the other kernel's: no interval is drawn
    from their mean and spread either, which would run below -100%."""
    change = m.change_pct
    means = f"{change:+.2f}% of the means; " if change is not None else ""
    return MeasurementJudgement(
        "no-data", "no-data", f"{means}runs of 0 or less cannot be compared as ratios.",
        checks=tuple(arithmetic_checks(m)),
    )


def _from_samples(m: Measurement, *, delta: float, alpha: float) -> MeasurementJudgement:
    """A measurement whose runs are given, judged on them as a table's column is (the rank
    test, not Welch's t on their mean and spread): docs/claims.md, "Judging"."""
    comparison = compare(m.samples_base, m.samples_patched,
                         higher_is_better=m.higher_is_better is not False,
                         delta=delta, alpha=alpha)  # fmt: skip
    column = ColumnJudgement(m.metric, m.base_label, m.patched_label, comparison,
                             m.higher_is_better is not None, ())  # fmt: skip
    judged = replace(_from_column(column, m), summary=column.description)
    few = too_few_runs(len(m.samples_base), len(m.samples_patched), alpha)
    return replace(judged, checks=judged.checks + ((few,) if few else ()))


def _from_column(column: ColumnJudgement, m: Measurement) -> MeasurementJudgement:
    c = column.comparison
    verdict = c.verdict.value
    if c.changed and not column.direction_known:
        verdict = "increase" if c.change_pct > 0 else "decrease"
    return MeasurementJudgement(
        "judged",
        verdict,
        column.line,
        "rank test on the runs (Hodges-Lehmann, Mann-Whitney)"
        + (", BH across the table" if column.alone is not None else ""),
        c.change_pct,
        (c.ci_low_pct, c.ci_high_pct),
        c.pvalue,
        tuple(arithmetic_checks(m)),
    )


def _summary_judgement(
    claim: Claim, measured: Sequence[MeasurementJudgement], alpha: float
) -> Judgement:
    """A table of per-metric summaries: how many metrics the numbers carry, and which."""
    judged = [j for j in measured if j.status == "judged"]
    changed = [
        (m, j) for m, j in zip(claim.measurements, measured, strict=True)
        if j.verdict in ("improvement", "regression", "increase", "decrease")
    ]  # fmt: skip
    if len(measured) == 1:  # one metric: its own judgement, not a count of one
        head = f"{claim.measurements[0].metric}: {measured[0].summary.rstrip('.')}"
        changed = []
    elif judged:
        head = (
            f"{len(changed)} of {len(judged)} metrics judged from mean, spread and runs show a "
            f"change at {level_pct(alpha)}"
        )
    else:
        statuses = sorted({j.status for j in measured})
        head = (
            f"{len(measured)} metrics, none judgeable from the numbers alone "
            f"({', '.join(statuses)})"
        )
    listed = "; ".join(f"{m.metric} {j.verdict}" for m, j in changed[:LISTED])
    if len(changed) > LISTED:
        listed += f"; and {len(changed) - LISTED} more"
    summary = f"{head}" + (f": {listed}." if listed else ".")
    notes = tuple(
        f"{m.metric}: {check}"
        for m, j in zip(claim.measurements, measured, strict=True)
        for check in j.checks
    )
    status = "judged" if judged else (measured[0].status if measured else "no-data")
    return Judgement(status, summary, notes=notes, measurements=tuple(measured))


def _judge_claim(claim: Claim, claims: Sequence[Claim], *, delta: float, alpha: float) -> Judgement:
    if claim.table is not None:
        return judge_table(claim.table, delta=delta, alpha=alpha)
    if claim.refers_to is not None:
        table = next((c for c in claims if c.index == claim.refers_to and c.table), None)
        if table is not None and table.table is not None:
            judged_table = judge_table(table.table, delta=delta, alpha=alpha)
            return _judge_against_table(claim, table, judged_table, alpha=alpha)
    if claim.before_after is not None:
        return _judge_before_after(claim, claim.before_after, alpha=alpha)
    return _judge_percentage(claim, alpha=alpha)


def _judge_against_table(
    claim: Claim, table_claim: Claim, table: Judgement, *, alpha: float
) -> Judgement:
    where = (
        f"the table above (claim {table_claim.index}, lines {table_claim.first_line}-"
        f"{table_claim.last_line})"
    )
    if table.status != "judged" or claim.change is None:
        return Judgement("see-table", f"This sums up {where}: {table.summary}", notes=table.notes)
    wanted = claim.change.direction
    changed = [j for j in table.comparisons if j.comparison.changed]
    agree = [j for j in changed if wanted and j.words.startswith(wanted)]
    # A claim with no direction in its words contradicts nothing: it is only set beside the data.
    against = [j for j in changed if j not in agree] if wanted else []
    estimates = ", ".join(f"{j.label} {j.comparison.change_pct:+.2f}%" for j in table.comparisons)
    if wanted and agree and not against and len(agree) == len(table.comparisons):
        verdict = "supports it"
    elif wanted and agree:
        verdict = f"supports it for {', '.join(j.label for j in agree)} only"
    elif against:
        verdict = f"contradicts it ({', '.join(j.line for j in against)})"
    elif not wanted and changed:
        lines = ", ".join(j.line for j in changed)
        verdict = f"shows changes the claim's words give no direction for ({lines})"
    else:
        verdict = f"does not support it: no comparison shows a change at {level_pct(alpha)}"
    # The comparisons themselves stay with the table's claim; a mean that misleads is repeated
    # here because a percentage like "about 4-5%" is usually read off the means.
    return Judgement(
        "see-table",
        f"Claimed {claim.change.describe()}; {where} {verdict}. Hodges-Lehmann estimates: "
        f"{estimates}.",
        notes=tuple(note for j in table.comparisons for note in j.notes if "misleads" in note),
    )


def _judge_before_after(claim: Claim, pair: BeforeAfter, *, alpha: float) -> Judgement:
    computed = pair.computed_pct
    measured = claim.measurements[0] if claim.measurements else None
    if measured is not None and measured.has_spread and (measured.n or 0) >= 2:
        welch = judge_measurement(measured, alpha=alpha)
        return Judgement("judged", welch.summary, notes=welch.checks)
    notes = list(arithmetic_checks(measured)) if measured is not None else []
    if pair.higher_is_better is None:
        notes.append("Whether higher is better is not known from the unit or the benchmark.")
    if claim.runs is not None and claim.runs >= 2 and pair.before > 0 and pair.after > 0:
        cv = 100.0 * max_cv_for_significance(pair.before, pair.after, claim.runs, alpha=alpha)
        return Judgement(
            "needs-spread",
            f"{computed:+.2f}% from {claim.runs} runs per side, with no spread given: cannot be "
            f"judged. It is significant at {level_pct(alpha)} only if the per-run CV is below "
            f"{cv:.1f}%.",
            cv_threshold_pct=cv,
            notes=tuple(notes),
        )
    return Judgement(
        "no-data",
        f"{computed:+.2f}% from one number per side, with no run count or spread given: cannot "
        "be judged.",
        notes=tuple(notes),
    )


def _judge_percentage(claim: Claim, *, alpha: float) -> Judgement:
    change = claim.change
    assert change is not None
    smallest = min(abs(change.low_pct), abs(change.high_pct))
    if claim.runs is not None and claim.runs >= 2 and 0 < smallest < 100:
        cv = 100.0 * max_cv_for_significance(1.0, 1.0 + smallest / 100.0, claim.runs, alpha=alpha)
        return Judgement(
            "needs-spread",
            f"{change.describe()} from {claim.runs} runs, with no per-run numbers or spread "
            f"given: cannot be judged. It is significant at {level_pct(alpha)} only if the "
            f"per-run CV is below {cv:.1f}%.",
            cv_threshold_pct=cv,
        )
    return Judgement(
        "no-data",
        f"{change.describe()}: no runs or spread were given, so the claim cannot be judged from "
        "the message.",
    )
