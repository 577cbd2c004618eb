"""The interleaved triple loop (base, series, alternative), driven by a fake boot with known
distributions: its orders, its resumption from stored boots, and its stopping rule."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.analysis.verdict import Verdict
from bot.benchmarks.definition import Metric
from bot.benchmarks.simulator import THROUGHPUT as THROUGHPUT_SIM
from bot.benchmarks.simulator import simulator
from bot.db.session import Database
from workers.lab.campaign import new_campaign, run_campaign
from workers.lab.job import RunFailed
from workers.lab.pairs import Sample
from workers.lab.triples import ORDERS, run_triples

THROUGHPUT = Metric("sim.throughput", "ops/s", higher_is_better=True, delta=0.01)
WHEN = datetime(2026, 11, 30, tzinfo=UTC)


class FakeBoots:
    """Each boot draws a throughput from a lognormal around the kernel's median."""

    def __init__(self, medians: dict[str, float], seed: int = 1, cv: float = 0.02) -> None:
        self.medians = medians
        self.rng = random.Random(seed)
        self.cv = cv
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, kernel: str, index: int, position: int) -> list[Sample]:
        self.calls.append((kernel, index, position))
        value = self.medians[kernel] * self.rng.lognormvariate(0.0, self.cv)
        return [Sample(THROUGHPUT.name, value, "ops/s", kernel, index, position, host="fake",
                       boot_id=f"boot-{len(self.calls)}", accel="none", time=WHEN)]


def test_every_kernel_runs_in_every_position_equally_often_in_a_reproducible_order():
    equal = {"A": 100.0, "B": 100.0, "C": 100.0}
    first = run_triples(FakeBoots(equal), [THROUGHPUT], seed=7, k_min=30, k_max=30)
    again = run_triples(FakeBoots(equal), [THROUGHPUT], seed=7, k_min=30, k_max=30)
    other = run_triples(FakeBoots(equal), [THROUGHPUT], seed=8, k_min=30, k_max=30)
    assert first.orders == again.orders and first.warmup_orders == again.warmup_orders
    assert first.orders != other.orders
    assert first.triples == 30 and set(first.orders) == set(ORDERS)
    # 30 triples are five blocks of the six orders: each kernel 10 times in each position.
    for position in range(3):
        assert Counter(order[position] for order in first.orders) == {"A": 10, "B": 10, "C": 10}
    # The boots ran as the orders say, warm-up first, each triple's three kernels once.
    boots = FakeBoots(equal)
    result = run_triples(boots, [THROUGHPUT], seed=3, warmup_triples=2, k_min=6, k_max=6)
    expected = [(kernel, index, position)
                for index, order in enumerate((*result.warmup_orders, *result.orders))
                for position, kernel in enumerate(order)]
    assert boots.calls == expected
    assert len(result.warmups) == 6 and all(s.warmup for s in result.warmups)
    assert not any(s.warmup for s in result.samples) and result.samples[0].pair_index == 2


def test_a_campaign_cut_short_resumes_from_its_stored_boots_without_running_them_again():
    medians = {"A": 100.0, "B": 104.0, "C": 108.0}
    whole = run_triples(FakeBoots(medians, seed=5), [THROUGHPUT], seed=11, k_max=12)
    stored: dict[tuple[str, int, int], list[Sample]] = {}
    boots = FakeBoots(medians, seed=5)

    class LostPower(RuntimeError):
        pass

    def dies_after_eight(kernel: str, index: int, position: int) -> list[Sample]:
        if len(stored) == 8:
            raise LostPower
        stored[kernel, index, position] = boots(kernel, index, position)
        return stored[kernel, index, position]

    with pytest.raises(LostPower):
        run_triples(dies_after_eight, [THROUGHPUT], seed=11, k_max=12)
    resumed_calls: list[tuple[str, int, int]] = []

    def stored_or_run(kernel: str, index: int, position: int) -> list[Sample]:
        if (kernel, index, position) in stored:
            return stored[kernel, index, position]
        resumed_calls.append((kernel, index, position))
        return boots(kernel, index, position)

    resumed = run_triples(stored_or_run, [THROUGHPUT], seed=11, k_max=12)
    # The schedule is the seed's: the same orders, the same values, the same judgement.
    assert resumed.orders == whole.orders and resumed.samples == whole.samples
    assert not set(resumed_calls) & set(stored)
    assert len(resumed_calls) + 8 == 3 * (1 + resumed.triples)
    assert resumed.comparisons == whole.comparisons


def test_the_loop_stops_when_all_three_comparisons_are_decided():
    # The alternative is clearly faster than the series, which is faster than the base.
    clear = run_triples(FakeBoots({"A": 100.0, "B": 110.0, "C": 121.0}, cv=0.01),
                        [THROUGHPUT], seed=2, k_max=30)
    assert clear.stopped_early
    verdicts = {key: c[THROUGHPUT.name].verdict for key, c in clear.comparisons.items()}
    assert verdicts == {"AB": Verdict.IMPROVEMENT, "AC": Verdict.IMPROVEMENT,
                        "BC": Verdict.IMPROVEMENT}
    assert clear.comparisons["BC"][THROUGHPUT.name].change_pct > 5
    # An alternative no different from the series holds the loop until that comparison is
    # decided too: the base comparisons alone do not stop it.
    same = run_triples(FakeBoots({"A": 100.0, "B": 110.0, "C": 110.0}, seed=4),
                       [THROUGHPUT], seed=2, k_max=12)
    verdicts = {key: c[THROUGHPUT.name].verdict for key, c in same.comparisons.items()}
    assert verdicts["AB"] == verdicts["AC"] == Verdict.IMPROVEMENT
    assert verdicts["BC"] is Verdict.INCONCLUSIVE
    assert same.triples == 12 and not same.stopped_early


def test_a_boot_for_the_wrong_kernel_is_a_runner_bug():
    def confused(kernel: str, index: int, position: int) -> list[Sample]:
        return FakeBoots({"A": 1.0, "B": 1.0, "C": 1.0})("A", index, position)

    with pytest.raises(ValueError, match="returned a sample for 'A'"):
        run_triples(confused, [THROUGHPUT], seed=1, warmup_triples=0, k_max=5)


@pytest.mark.sqlite_only
def test_a_stored_triples_campaign_killed_midway_resumes_and_stores_three_kernels(db_url):
    bench = simulator()
    db = Database(db_url)
    with db.session() as session:
        campaign = new_campaign(bench, kernel_a="a", kernel_b="b", kernel_c="c", host="fake",
                                runner="local", seed=9, k_min=5, k_max=8)
        session.add(campaign)
        session.flush()
        campaign_id = campaign.id
    boots = FakeBoots({"A": 100.0, "B": 104.0, "C": 112.0}, seed=6)

    def named(kernel: str, index: int, position: int) -> list[Sample]:
        return [replace(s, metric=THROUGHPUT_SIM) for s in boots(kernel, index, position)]

    def dies_after_seven(kernel: str, index: int, position: int) -> list[Sample]:
        if len(boots.calls) == 7:
            raise RunFailed("the lab machine lost power")
        return named(kernel, index, position)

    failed = run_campaign(db, campaign_id, bench, dies_after_seven)
    assert failed.state == "failed" and len({(s.kernel, s.pair_index) for s in failed.samples}) == 7
    done = run_campaign(db, campaign_id, bench, named)
    assert done.state == "done"
    stored = [(s.kernel, s.pair_index, s.position) for s in done.samples]
    assert len(stored) == len(set(stored)) == len(boots.calls) == 3 * (1 + len(done.orders))
    assert {s.kernel for s in done.samples} == {"A", "B", "C"}
    assert {s.position for s in done.samples} == {0, 1, 2}
    assert set(done.result["comparisons"]) == {"AB", "AC", "BC"}
    assert done.result["metrics"] == done.result["comparisons"]["BC"]
