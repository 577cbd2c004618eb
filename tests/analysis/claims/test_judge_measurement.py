"""What a measurement's numbers carry (bot/analysis/claims/judge_measurement.py and
bot/analysis/claim_spread.py)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from bot.analysis.claim_spread import max_cv_for_significance, min_runs_for_significance
from bot.analysis.claims.judge_measurement import judge_measurement, significant
from bot.analysis.claims.measurement import Measurement


def test_welch_p_matches_scipy_from_mean_sd_and_n() -> None:
    m = Measurement("ops", 1000.0, 1030.0, n_base=8, n_patched=6, cv_base_pct=2.0,
                    cv_patched_pct=3.0, higher_is_better=True)  # fmt: skip
    judged = judge_measurement(m)
    expected = stats.ttest_ind_from_stats(1000, 20, 8, 1030, 30.9, 6, equal_var=False).pvalue
    assert judged.p_value == pytest.approx(expected)
    assert judged.verdict == ("improvement" if expected <= 0.05 else "inconclusive")


def test_spread_without_runs_says_how_many_runs_would_do() -> None:
    m = Measurement("ops", 263173.0, 232411.0, cv_base_pct=3.0, higher_is_better=True)
    judged = judge_measurement(m)
    assert judged.status == "needs-runs"
    runs = min_runs_for_significance(-11.69, 3.0)
    assert f"with {runs} or more runs per side" in judged.summary


def test_the_spread_threshold_uses_t_not_z() -> None:
    # With 3 runs per side t_{0.975,4} = 2.78, not z = 1.96: the tolerated CV is 30% smaller.
    cv = max_cv_for_significance(100.0, 105.0, 3)
    t = stats.t.ppf(0.975, 4)
    assert cv == pytest.approx(math.log(1.05) / (t * math.sqrt(2 / 3)))
    assert cv < math.log(1.05) / (stats.norm.ppf(0.975) * math.sqrt(2 / 3))


def test_p_is_kept_in_significant_digits() -> None:
    assert significant(7.4e-07) == 7.4e-07
    assert significant(3.1e-09) == 3.1e-09
    assert significant(0.04321) == 0.0432


@pytest.mark.parametrize("runs", [None, 5])
def test_equal_numbers_are_never_said_to_hold_below_some_spread(runs: int | None) -> None:
    """fio's `slat avg` often reads the same before and after: no CV bound can make +0.00%
    significant, so none is given (it printed "if the per-run CV were below 0.0%")."""
    m = Measurement("slat avg (nsec)", 812.0, 812.0, n_base=runs, n_patched=runs)
    judged = judge_measurement(m)
    assert "below" not in judged.summary and "the two are equal" in judged.summary
    assert judged.summary.startswith("+0.00% from " + ("5 runs" if runs else "one number"))


def test_a_small_change_gets_its_cv_bound_in_significant_digits() -> None:
    """+0.02% from one number per side holds only below a CV of about 0.013%: said so, not 0.0%."""
    judged = judge_measurement(Measurement("ops", 100000.0, 100020.0))
    bound = 100 * max_cv_for_significance(100000.0, 100020.0, 5)
    assert bound < 0.05 and f"CV were below {bound:.2g}%." in judged.summary


def test_a_spread_over_100_percent_is_written_whole() -> None:
    # lkp's "54428 ± 60% -96.5% 1895 ±173%" (numa-meminfo.node1.AnonHugePages)
    m = Measurement("AnonHugePages", 54428.0, 1895.0, cv_base_pct=60.0, cv_patched_pct=173.0)
    assert "per-run CV of 173%" in judge_measurement(m).summary


def test_a_blank_bounded_by_the_tool_enters_welch_at_its_bound() -> None:
    # A run count stated in the text, lkp's blank %stddev on both sides (2% or less).
    m = Measurement("ops", 263173.0, 232411.0, n_base=5, n_patched=5, cv_blank_max_pct=2.0,
                    higher_is_better=True)  # fmt: skip
    judged = judge_measurement(m)
    assert judged.status == "judged" and judged.verdict == "regression"
    assert "CV <=2%/<=2%" in judged.summary
