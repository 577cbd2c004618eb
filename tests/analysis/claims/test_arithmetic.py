"""The author's arithmetic checked (bot/analysis/claims/arithmetic.py)."""

from __future__ import annotations

from bot.analysis.claims.arithmetic import arithmetic_checks
from bot.analysis.claims.measurement import Measurement


def checks(base, patched, stated, kind="relative", higher=True, unit=None) -> list[str]:
    return arithmetic_checks(
        Measurement(
            "m",
            base,
            patched,
            unit=unit,
            stated_pct=stated,
            stated_kind=kind,
            higher_is_better=higher,
        )  # fmt: skip
    )


def test_a_stated_percentage_the_numbers_do_not_give() -> None:
    assert checks(110.0, 100.0, 12.0) == ["Stated 12%; the numbers give -9.1%."]
    assert checks(44017.78, 44687.08, 1.5) == []  # +1.52% printed as +1.5%: rounding


def test_the_new_value_as_denominator() -> None:
    found = checks(100.0, 125.0, 20.0)
    assert "divides by the new value" in found[-1]


def test_a_speed_up_stated_for_a_time() -> None:
    [note] = checks(10.2, 7.3, 40.0, kind="speed-up", higher=False)
    assert note == "40% faster is the rate (old/new - 1); the time itself fell 28.4%."


def test_points_confused_with_percent() -> None:
    found = checks(2.0, 2.5, 0.5, unit="%", higher=None)
    assert "moved +0.50 points, which is +25.0%" in found[-1]
    assert checks(0.37, 2.25, 1.9, kind="points", higher=None) == []
    assert checks(0.37, 2.25, 2.9, kind="points", higher=None) != []


def test_values_printed_with_few_digits_widen_what_they_can_give() -> None:
    # lkp (vm-scalability.free_time, a reply by Johannes Weiner): the means behind "0.23" and
    # "0.26" changed by +11.7%; the printed values give anything from +8.5% to +17.8%.
    assert checks(0.23, 0.26, 11.7, higher=False) == []
    assert checks(0.23, 0.26, 25.0, higher=False) == ["Stated 25%; the numbers give +13.0%."]
    # Values printed to many digits leave only the stated figure's rounding.
    assert checks(20717269.0, 18336098.0, -11.5) == []
    assert checks(20717269.0, 18336098.0, -12.5) != []
    assert checks(5362.80, 4446.89, 17.08, kind="gain", higher=False) == []
    assert checks(0.4, 0.5, 0.4, kind="points", higher=None) != []
    assert checks(0.4, 0.5, 0.1, kind="points", higher=None) == []
