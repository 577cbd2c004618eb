"""The interleaved pair loop, driven by a fake boot with known distributions."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from bot.analysis.verdict import Verdict
from bot.benchmarks.definition import Metric
from workers.lab.pairs import Sample, run_pairs

THROUGHPUT = Metric("sim.throughput", "ops/s", higher_is_better=True, delta=0.01)
WHEN = datetime(2026, 11, 30, tzinfo=UTC)


class FakeBoots:
    """Each boot draws a throughput from a lognormal around the kernel's median, CV ~2%."""

    def __init__(self, medians: dict[str, float], seed: int = 1, cv: float = 0.02) -> None:
        self.medians = medians
        self.rng = random.Random(seed)
        self.cv = cv
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, kernel: str, pair_index: int, position: int) -> list[Sample]:
        self.calls.append((kernel, pair_index, position))
        value = self.medians[kernel] * self.rng.lognormvariate(0.0, self.cv)
        return [Sample(THROUGHPUT.name, value, "ops/s", kernel, pair_index, position,
                       host="fake", boot_id=f"boot-{len(self.calls)}", accel="none", time=WHEN)]


def test_orders_are_random_reproducible_from_the_seed_and_balanced():
    first = run_pairs(FakeBoots({"A": 100.0, "B": 100.0}), [THROUGHPUT], seed=7, k_max=30)
    again = run_pairs(FakeBoots({"A": 100.0, "B": 100.0}), [THROUGHPUT], seed=7, k_max=30)
    other = run_pairs(FakeBoots({"A": 100.0, "B": 100.0}), [THROUGHPUT], seed=8, k_max=30)
    assert first.orders == again.orders and first.warmup_orders == again.warmup_orders
    assert first.orders != other.orders
    assert first.seed == 7
    # Both orders occur, neither dominates (a fixed order would confound position with kernel).
    assert 0.25 <= first.orders.count("AB") / first.pairs <= 0.75


def test_samples_follow_the_recorded_order_and_carry_their_slot():
    boots = FakeBoots({"A": 100.0, "B": 100.0})
    result = run_pairs(boots, [THROUGHPUT], seed=3, warmup_pairs=2, k_max=10)
    expected = [(kernel, 2 + i, pos) for i, order in enumerate(result.orders)
                for pos, kernel in enumerate(order)]
    assert boots.calls[4:] == expected
    assert [(s.kernel, s.pair_index, s.position) for s in result.samples] == expected
    assert len(result.values(THROUGHPUT.name, "A")) == len(result.values(THROUGHPUT.name, "B"))


def test_warmups_are_run_first_recorded_and_not_judged():
    # The warm-up boots are wildly slow (cold caches): judged, they would look like a change.
    class ColdFirst(FakeBoots):
        def __call__(self, kernel, pair_index, position):
            samples = super().__call__(kernel, pair_index, position)
            if pair_index < 2:
                return [replace(samples[0], value=1.0)]
            return samples

    result = run_pairs(ColdFirst({"A": 100.0, "B": 100.0}), [THROUGHPUT], seed=5,
                       warmup_pairs=2, k_max=10)
    assert len(result.warmups) == 4 and all(s.warmup for s in result.warmups)
    assert {s.value for s in result.warmups} == {1.0}
    assert len(result.warmup_orders) == 2
    assert all(not s.warmup and s.value > 50 for s in result.samples)
    assert result.samples[0].pair_index == 2


def test_a_large_effect_stops_early_with_the_right_verdict():
    result = run_pairs(FakeBoots({"A": 100.0, "B": 110.0}), [THROUGHPUT], seed=11, k_max=30)
    comparison = result.comparisons[THROUGHPUT.name]
    assert comparison.verdict is Verdict.IMPROVEMENT
    assert result.stopped_early and result.k_min <= result.pairs < 15
    assert comparison.early_stop


def test_a_slowdown_is_a_regression_in_the_metrics_direction():
    lower = Metric("sim.time", "s", higher_is_better=False, delta=0.01)

    def boot(kernel, pair_index, position):
        value = {"A": 1.0, "B": 1.1}[kernel] * rng.lognormvariate(0.0, 0.02)
        return [Sample(lower.name, value, "s", kernel, pair_index, position, "fake", "b", "none",
                       WHEN)]

    rng = random.Random(2)
    result = run_pairs(boot, [lower], seed=2, k_max=30)
    assert result.comparisons[lower.name].verdict is Verdict.REGRESSION


def test_no_effect_at_a_cv_near_delta_runs_to_k_max_without_declaring_a_change():
    # 1% is about the CV here: with no effect the interval cannot shrink inside +-1% by k_max.
    result = run_pairs(FakeBoots({"A": 100.0, "B": 100.0}, seed=4), [THROUGHPUT], seed=4,
                       k_max=12)
    assert result.pairs == 12 and not result.stopped_early
    comparison = result.comparisons[THROUGHPUT.name]
    assert not comparison.changed
    assert comparison.verdict is Verdict.INCONCLUSIVE


def test_no_effect_on_a_quiet_benchmark_stops_early_with_no_change():
    result = run_pairs(FakeBoots({"A": 100.0, "B": 100.0}, cv=0.002), [THROUGHPUT], seed=6,
                       k_max=30)
    assert result.comparisons[THROUGHPUT.name].verdict is Verdict.NO_CHANGE
    assert result.pairs < 30


def test_a_a_comparisons_rarely_declare_a_change():
    declared = 0
    for seed in range(20):
        result = run_pairs(FakeBoots({"A": 100.0, "B": 100.0}, seed=seed), [THROUGHPUT],
                           seed=seed, warmup_pairs=0, k_max=10)
        declared += result.comparisons[THROUGHPUT.name].changed
    # The calibrated rule holds false positives near 5%: 0 or 1 of 20 is expected, 4 is not.
    assert declared <= 3


def test_secondary_metrics_are_kept_but_do_not_hold_the_loop():
    noise = Metric("sim.pgscan", "events", higher_is_better=False, main=False)
    inner = FakeBoots({"A": 100.0, "B": 120.0})

    def boot(kernel, pair_index, position):
        samples = inner(kernel, pair_index, position)
        extra = Sample(noise.name, random.random() + 1, "events", kernel, pair_index, position,
                       "fake", "b", "none", WHEN)
        return [*samples, extra]

    result = run_pairs(boot, [THROUGHPUT, noise], seed=9, k_max=30)
    assert set(result.comparisons) == {THROUGHPUT.name}
    assert result.pairs < 30
    assert len(result.values(noise.name, "A")) == result.pairs


def test_a_runner_that_mislabels_its_samples_or_misses_a_metric_is_caught():
    def mislabels(kernel, pair_index, position):
        return [Sample(THROUGHPUT.name, 1.0, "ops/s", "A", pair_index, position, "h", "b",
                       "none", WHEN)]

    with pytest.raises(ValueError, match="returned a sample"):
        run_pairs(mislabels, [THROUGHPUT], seed=0, warmup_pairs=0, k_max=10)
    with pytest.raises(ValueError, match="no value for sim.throughput"):
        run_pairs(lambda kernel, pair_index, position: [], [THROUGHPUT], seed=0, k_max=10)


def _boots_with(medians, *, cv, drift=0.0, seed=1, counters=0):
    """Boots of THROUGHPUT around each kernel's median, the machine drifting by `drift` per boot,
    each boot also reporting `counters` reclaim counters that do not change."""
    rng = random.Random(seed)
    boots = []

    def boot(kernel, pair_index, position):
        boots.append(kernel)
        value = medians[kernel] * (1 + drift) ** len(boots) * rng.lognormvariate(0.0, cv)
        samples = [Sample(THROUGHPUT.name, value, "ops/s", kernel, pair_index, position,
                          host="fake", boot_id=f"b{len(boots)}", accel="none", time=WHEN)]
        samples += [Sample(f"pgscan_{i}", 1000 * rng.lognormvariate(0.0, 0.05), "pages",
                           kernel, pair_index, position, "fake", "b", "none", WHEN)
                    for i in range(counters)]
        return samples

    return boot


def test_the_pairs_are_analysed_so_a_drifting_machine_still_shows_a_small_change():
    # The machine slows by 1% per boot: over 30 pairs the runs spread over 80%, which hides a
    # +2% change from a comparison of the two kernels' runs as unpaired samples.
    for seed in range(3):
        result = run_pairs(_boots_with({"A": 100.0, "B": 102.0}, cv=0.005, drift=-0.01,
                                       seed=seed), [THROUGHPUT], seed=seed, k_max=30)
        assert result.comparisons[THROUGHPUT.name].verdict is Verdict.IMPROVEMENT


def test_no_change_is_earned_early_when_the_noise_is_half_of_delta():
    for seed in range(5):
        result = run_pairs(_boots_with({"A": 100.0, "B": 100.0}, cv=0.005, seed=seed),
                           [THROUGHPUT], seed=seed, k_max=30)
        assert result.comparisons[THROUGHPUT.name].verdict is Verdict.NO_CHANGE
        assert result.pairs <= 15


def test_a_metric_decided_early_keeps_its_judgement_while_another_holds_the_loop():
    steady = Metric("sim.latency", "us", higher_is_better=False, delta=0.01)
    inner = _boots_with({"A": 100.0, "B": 120.0}, cv=0.01, seed=3)
    rng = random.Random(4)

    def boot(kernel, pair_index, position):
        samples = inner(kernel, pair_index, position)
        noisy = Sample(steady.name, 50 * rng.lognormvariate(0.0, 0.02), "us", kernel,
                       pair_index, position, "fake", "b", "none", WHEN)
        return [*samples, noisy]

    result = run_pairs(boot, [THROUGHPUT, steady], seed=3, k_max=30)
    fast = result.comparisons[THROUGHPUT.name]
    assert fast.verdict is Verdict.IMPROVEMENT
    assert fast.pairs < result.pairs == 30  # judged when it was decided, not again at the end
    assert result.comparisons[steady.name].verdict is Verdict.INCONCLUSIVE


def test_counters_are_judged_with_the_main_metric_as_one_family():
    result = run_pairs(_boots_with({"A": 100.0, "B": 100.0}, cv=0.005, seed=5, counters=10),
                       [THROUGHPUT], seed=5, k_max=30)
    assert set(result.judgement) == {THROUGHPUT.name, *(f"pgscan_{i}" for i in range(10))}
    assert {c.family_size for c in result.judgement.values()} == {11}
    assert not any(c.changed for c in result.judgement.values())


def test_an_early_stop_reports_an_estimate_corrected_for_its_bias():
    # True +2% at CV 2%: the campaigns that stop early with a change overstate it; the reported
    # estimate is corrected toward the truth and stays inside the reported interval. Over 200
    # seeds the correction leaves 64% of the raw bias (+0.35 of +0.55 points); 40 seeds scatter
    # around that (0.59-0.71), so the bound is 0.8: without the correction the ratio is 1.
    raw, reported = [], []
    for seed in range(40):
        result = run_pairs(_boots_with({"A": 100.0, "B": 102.0}, cv=0.02, seed=seed),
                           [THROUGHPUT], seed=seed, warmup_pairs=0, k_max=30)
        comparison = result.comparisons[THROUGHPUT.name]
        if comparison.early_stop:
            raw.append(100 * math.expm1(comparison.shift.estimate))
            reported.append(comparison.change_pct)
            assert comparison.ci_low_pct <= comparison.change_pct <= comparison.ci_high_pct
    assert len(raw) >= 15
    assert abs(np.mean(reported) - 2.0) < 0.8 * abs(np.mean(raw) - 2.0)


@pytest.mark.parametrize(("change", "cv"), [(0.05, 0.01), (1.0, 0.10)])
def test_an_early_stop_among_counters_is_corrected_for_the_level_it_passed_at(change, cv):
    # Beside ten counters the main metric passes at its share of the family's level, which
    # the signed-rank test reaches one pair later than alone: simulated at a metric's own
    # level, the stop looked late and the estimate was cut to the interval's inner bound
    # (+5% at CV 1% reported as +3.3%, +100% at CV 10% as +68%). The change is far above the
    # noise here, so the stop hardly selects the runs: the estimate stays near the truth.
    reported, pinned = [], 0
    for seed in range(12):
        result = run_pairs(_boots_with({"A": 100.0, "B": 100.0 * (1 + change)}, cv=cv,
                                       seed=seed, counters=10),
                           [THROUGHPUT], seed=seed, warmup_pairs=0, k_max=30)
        comparison = result.comparisons[THROUGHPUT.name]
        assert comparison.early_stop and comparison.family_size == 11
        reported.append(comparison.change_pct)
        pinned += comparison.change_pct == pytest.approx(comparison.ci_low_pct)
    assert abs(np.mean(reported) - 100 * change) < 0.1 * 100 * change
    assert pinned <= 1
