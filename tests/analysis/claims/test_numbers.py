"""Numbers as typed in mail, and the work bound of one message (bot/analysis/claims/numbers.py)."""

from __future__ import annotations

import random

import pytest

from bot.analysis.claims import analyse_message
from bot.analysis.claims.numbers import Budget, to_float


@pytest.mark.parametrize(
    ("text", "value"),
    [("1,234,567", 1234567.0), ("1 234 567", 1234567.0), ("1.234.567,5", 1234567.5),
     ("\u22123.5", -3.5), ("\u20133.5", -3.5), ("1.145e+08", 1.145e8), ("12,5x", None)],
)  # fmt: skip
def test_thousands_separators_and_minus_signs(text: str, value: float | None) -> None:
    assert to_float(text) == value


def test_separators_and_unicode_minus_in_a_mail_give_an_answer() -> None:
    body = (
        "Throughput went from 1.234.567,5 to 1.300.000,5 ops/s.\n\n"
        "Latency changed by \u22123.5% with the series.\n"
    )
    result = analyse_message("s", "a <a@b.c>", body)
    [pair] = [m for c in result.claims for m in c.claim.measurements]
    assert (pair.base, pair.patched) == (1234567.5, 1300000.5)
    assert [c.claim.change.low_pct for c in result.claims if c.claim.kind == "percentage"] == [-3.5]


def test_a_10_mb_table_is_refused_within_the_work_bound() -> None:
    rng = random.Random(1)
    rows = "\n".join(
        f"run{i}  {rng.uniform(10, 11):.3f}  {rng.uniform(10, 11):.3f}" for i in range(400_000)
    )
    body = "Results in seconds:\n\nrun  base  patched\n" + rows
    assert len(body) > 10_000_000
    budget = Budget()
    result = analyse_message("s", "a <a@b.c>", body, budget=budget)
    assert result.unreadable is not None and result.unreadable.startswith("cannot read:")
    assert result.claims == ()
    assert budget.spent <= budget.limit + len(body) // 10


def test_a_table_of_10000_columns_and_a_wall_of_digits_stay_within_the_bound() -> None:
    cells = "  ".join(f"{1 + i / 10000:.4f}" for i in range(10_000))
    wide = "k " + "  ".join(f"c{i}" for i in range(10_000)) + "\n" + "\n".join([cells] * 5)
    digits = "Throughput is " + "7" * 200_000 + " ops/s better than before.\n"
    for body in (wide, digits):
        budget = Budget()
        result = analyse_message("s", "a <a@b.c>", body, budget=budget)
        assert result.unreadable is None
        assert budget.spent < budget.limit // 10  # far inside the bound, not near it
