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
