"""A campaign's metrics judged as one family over its pairs (bot.analysis.family), through the
recorded-results path a campaign's judgement takes (`benchmark_result`, sequential policy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bot.analysis.family import MetricPairs, judge_pairs
from bot.analysis.stored import comparison_from_data, to_data
from bot.analysis.verdict import Verdict, compare, decide_after_pair
from bot.report.compose.results import RunPolicy
from bot.report.compose.results_file import benchmark_result

SEQUENTIAL = RunPolicy(runs_per_kernel=0, sequential=True, k_min=5, k_max=30)


def _metric(name, base, patched, *, higher=True, secondary=False, delta=0.01):
    return {"name": name, "unit": "x", "higher_is_better": higher, "delta": delta,
            "secondary": secondary, "base": list(base), "patched": list(patched)}


def _judge(*metrics, policy=SEQUENTIAL):
    result = benchmark_result({"name": "sim", "parameters": {}, "metrics": list(metrics)},
                              policy, "test")
    return {m.name: m for m in result.metrics}, result


def _noise(seed, k, cv, scale=100.0):
    return scale * np.exp(np.random.default_rng(seed).normal(0, cv, size=k))


def test_an_exact_reciprocal_is_judged_with_its_metric_not_a_second_time():
    # 12 pairs where the main metric's p is about 0.02: not a change at the looks' alpha', but
    # a change at a fixed 5%. Seconds beside ops/s of the same runs must say the same thing.
    d = [-0.010, 0.015, 0.020, -0.025, 0.030, 0.031, 0.032, 0.033, 0.034, 0.035, 0.036, -0.037]
    base = _noise(1, 12, 0.001)
    patched = base * np.exp(d)
    judged, _ = _judge(_metric("ops", base, patched, higher=True),
                       _metric("seconds", 1000 / base, 1000 / patched, higher=False,
                               secondary=True), policy=RunPolicy(
                           runs_per_kernel=12, sequential=True, k_min=5, k_max=12))
    ops, seconds = judged["ops"].comparison, judged["seconds"].comparison
    assert seconds.derived_from == "ops"
    assert seconds.verdict is ops.verdict  # less time is the improvement more ops/s is
    assert seconds.family_size == ops.family_size == 1


def test_seconds_printed_to_three_decimals_are_judged_with_the_rate_computed_from_them():
    # A program prints "seconds: %.3f" and the ops/s it computed from the unrounded time (the
    # stand-in simulator of `lorelab demo` does): at 0.093 s rounding moves a log ratio by up
    # to 1%, more than 1% of the spread, so seconds were judged as a second hypothesis, and
    # could be inconclusive beside an improvement of ops/s in the same runs.
    rng = np.random.default_rng(0)
    base = 0.13 * np.exp(rng.normal(0, 0.12, size=30))
    patched = base * 0.75 * np.exp(rng.normal(0, 0.12, size=30))
    judged, _ = _judge(_metric("ops", 6e6 / base, 6e6 / patched),
                       _metric("seconds", np.round(base, 3), np.round(patched, 3),
                               higher=False, secondary=True))
    assert judged["seconds"].comparison.derived_from == "ops"
    assert judged["ops"].comparison.family_size == 1
    # A measurement of its own printed so coarsely that its rounding could hide anything (a
    # handful of whole pages) is not taken for a copy, however close it runs.
    pages = [np.round(40 * t * np.exp(rng.normal(0, 0.01, size=30))) for t in (base, patched)]
    judged, _ = _judge(_metric("ops", 6e6 / base, 6e6 / patched),
                       _metric("pages", *pages, higher=False, secondary=True))
    assert judged["pages"].comparison.derived_from is None


def test_an_early_stop_reports_a_reciprocal_the_same_corrected_change():
    # Seconds printed to three digits beside ops/s of the same very noisy runs (a change of
    # about +100%, stopped after 17 pairs): corrected on their own, the two came out +50% and
    # -30% (a product of 1.044; the recorded demo run of tests/golden: +56% and -40%).
    rng = np.random.default_rng(21)
    d = 0.7 + rng.normal(0, 0.8, size=30)
    base = 2e7 * np.exp(rng.normal(0, 0.3, size=30))
    patched = base * np.exp(d)
    judged, _ = _judge(_metric("ops", base, patched, higher=True),
                       _metric("seconds", np.round(6e6 / base, 3), np.round(6e6 / patched, 3),
                               higher=False, secondary=True))
    ops, seconds = judged["ops"].comparison, judged["seconds"].comparison
    assert seconds.derived_from == "ops" and ops.early_stop and seconds.early_stop
    assert ops.adjusted_estimate != pytest.approx(ops.shift.estimate, abs=0.01)
    assert (1 + ops.change_pct / 100) * (1 + seconds.change_pct / 100) == pytest.approx(1.0)
    assert seconds.ci_low_pct <= seconds.change_pct <= seconds.ci_high_pct


def test_a_decided_metric_is_never_left_undecided_by_the_family_control():
    # Before: the loop stopped when both metrics had stopped alone, then Benjamini-Hochberg
    # across them sent one back to "run another pair" ("undecided after 9 of up to 30 pairs").
    rng = np.random.default_rng(0)
    base_a, base_b = _noise(2, 9, 0.02), _noise(3, 9, 0.002)
    patched_a = 1.03 * _noise(4, 9, 0.02)
    patched_b = _noise(5, 9, 0.002)
    del rng
    judged, _ = _judge(_metric("a", base_a, patched_a), _metric("b", base_b, patched_b))
    for metric in judged.values():
        assert metric.comparison.verdict is not Verdict.RUN_ANOTHER_PAIR
        assert not any("Undecided" in note for note in metric.comparison.notes())


def test_a_counter_that_goes_from_zero_to_hundreds_is_compared_on_an_absolute_scale():
    k = 12
    judged, result = _judge(
        _metric("ops", _noise(6, k, 0.01), _noise(7, k, 0.01)),
        _metric("pgscan_direct", [0.0] * k, [500.0 + i for i in range(k)], higher=None,
                secondary=True, delta=0.05))
    assert result.not_compared == ()
    counter = judged["pgscan_direct"]
    assert counter.comparison.scale == "absolute"
    assert counter.comparison.changed and counter.words.startswith("increase")
    assert counter.comparison.describe().startswith("+50")
    assert any("absolute scale" in note for note in counter.comparison.notes())


def test_a_nan_or_inf_value_is_left_out_of_its_metric_with_the_reason():
    k = 12
    base, patched = list(_noise(8, k, 0.01)), list(_noise(9, k, 0.01))
    patched[2] = math.nan
    base[5] = math.inf
    judged, _ = _judge(_metric("ops", base, patched), _metric("other", _noise(10, k, 0.01),
                                                              _noise(11, k, 0.01)))
    ops = judged["ops"].comparison
    assert ops.rejected == ("nan in B, pair 3", "+inf in A, pair 6")
    assert ops.pairs == k - 2
    assert "Left out: nan in B, pair 3; +inf in A, pair 6." in ops.notes()
    assert judged["other"].comparison.rejected == ()
    broken, _ = _judge(_metric("ops", _noise(8, k, 0.01), _noise(9, k, 0.01)),
                       _metric("all-nan", [math.nan] * k, [1.0] * k, secondary=True))
    assert broken["all-nan"].comparison.verdict is Verdict.INCONCLUSIVE
    assert len(broken["all-nan"].comparison.rejected) == k


def test_identical_values_in_every_run_are_no_change_and_say_so():
    judged, _ = _judge(_metric("ops", _noise(12, 30, 0.01), _noise(13, 30, 0.01)),
                       _metric("allocstall", [7.0] * 30, [7.0] * 30, higher=None,
                               secondary=True))
    counter = judged["allocstall"].comparison
    assert counter.verdict is Verdict.NO_CHANGE and counter.identical
    assert counter.words == "no change (identical in all 60 runs)"
    alone = decide_after_pair([3.0] * 30, [3.0] * 30, higher_is_better=True)
    assert alone.verdict is Verdict.NO_CHANGE and alone.describe() == (
        "no change (identical in all 60 runs)")


def test_a_change_exactly_one_step_of_delta_is_never_no_change():
    # Values measured in steps of 1% (= delta), a true +1%: after 9 pairs the interval was
    # [-1%, +1%] exactly, and the inclusive bound called that "no change".
    base = [101.0, 100.0, 101.0, 100.0, 102.01, 100.0, 100.0, 103.0301, 100.0]
    patched = [104.0604, 102.01, 100.0, 100.0, 100.0, 101.0, 101.0, 100.0, 100.0]
    result = decide_after_pair(base, patched, higher_is_better=True)
    assert result.verdict is not Verdict.NO_CHANGE
    assert compare(base, patched, higher_is_better=True).verdict is not Verdict.NO_CHANGE


def test_a_real_change_smaller_than_delta_is_one_verdict_that_says_so():
    # CV 0.1%, a true +0.5%: significant, and the whole interval inside +-1%.
    base = _noise(14, 12, 0.001)
    patched = 1.005 * _noise(15, 12, 0.001)
    result = decide_after_pair(base, patched, higher_is_better=True)
    assert result.verdict is Verdict.IMPROVEMENT and result.below_delta
    assert result.words == "improvement (real, but below the 1% of interest)"
    assert any("real but below the 1% of interest" in note for note in result.notes())


def test_each_main_metric_stops_on_its_own_and_keeps_its_judgement():
    # "fast" changes by 10% and is decided at the first look that can reach alpha'; "slow" has no
    # change at a CV near delta and holds the loop: "fast" keeps the judgement it stopped with.
    k = 30
    metrics = [
        MetricPairs("fast", tuple(_noise(16, k, 0.01)), tuple(1.1 * _noise(17, k, 0.01)),
                    True, 0.01, True),
        MetricPairs("slow", tuple(_noise(18, k, 0.01)), tuple(_noise(19, k, 0.01)),
                    True, 0.01, True),
    ]
    state = judge_pairs(metrics)
    fast, slow = state.comparisons["fast"], state.comparisons["slow"]
    assert fast.verdict is Verdict.IMPROVEMENT and fast.pairs < 12
    assert slow.pairs == state.pairs > fast.pairs
    assert not slow.changed


@pytest.mark.parametrize("kind", ["fixed", "sequential"])
def test_judgements_stored_by_the_previous_version_still_load(kind):
    # JSON written by the unpaired version (before signed ranks, families and the new fields).
    old = OLD_STORED[kind]
    comparison = comparison_from_data(old)
    assert comparison.verdict.value == old["verdict"]
    assert comparison.shift.paired is False and comparison.scale == "log"
    assert comparison.rejected == () and comparison.derived_from is None
    assert comparison.interval_level == 0.95
    assert comparison.words  # renders
    assert comparison_from_data(to_data(comparison)) == comparison


OLD_STORED = {
    "fixed": {
        "verdict": "inconclusive", "beyond_delta": None, "delta": 0.01, "higher_is_better": False,
        "alpha": 0.05,
        "shift": {"estimate": 0.041310562430616926, "ci_low": -0.0266611178469498,
                  "ci_high": 0.25997241123495396, "confidence": 0.95, "u": 20.0,
                  "pvalue": 0.15079365079365079, "exact": True, "m": 5, "n": 5},
        "mean_change_pct": 7.765978275556806, "median_change_pct": 4.302433741965039,
        "base": {"n": 5, "median": 72.029, "robust_cv": 0.035485740465645566, "outliers": [],
                 "positions": None},
        "patched": {"n": 5, "median": 75.128, "robust_cv": 0.0413236662762218,
                    "outliers": [{"value": 93.414, "index": 0, "position": None,
                                  "z": 5.344951510135498}], "positions": None},
        "tail": {"base": [], "patched": [{"value": 93.414, "index": 0, "position": None,
                                          "z": 5.344951510135498}], "kind": None},
        "pairs": 5, "k_min": None, "k_max": None, "fdr_demoted": False,
    },
    "sequential": {
        "verdict": "regression", "beyond_delta": True, "delta": 0.01, "higher_is_better": False,
        "alpha": 0.008651038711951742,
        "shift": {"estimate": 0.05, "ci_low": 0.03, "ci_high": "inf", "confidence": 0.991349,
                  "u": 25.0, "pvalue": 0.0079, "exact": True, "m": 5, "n": 5},
        "mean_change_pct": 5.1, "median_change_pct": 5.0,
        "base": {"n": 5, "median": 1.0, "robust_cv": 0.01, "outliers": [],
                 "positions": [2, 5, 6, 9, 10]},
        "patched": {"n": 5, "median": 1.05, "robust_cv": 0.01, "outliers": [],
                    "positions": [3, 4, 7, 8, 11]},
        "tail": {"base": [], "patched": [], "kind": None},
        "pairs": 5, "k_min": 5, "k_max": 30, "fdr_demoted": False,
    },
}
