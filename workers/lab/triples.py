"""The interleaved triple loop: base, series and a reviewer's alternative in a random order per
triple, the three comparisons judged together after each triple.

Pure over an injected `run_one(kernel, triple_index, position)` as the pair loop
(workers/lab/pairs.py) has it, with a third kernel "C" (the alternative) and positions 0-2.
Each triple's order is one of the six permutations of "ABC", drawn from `random.Random(seed)`
so that the schedule is reproducible from the recorded seed (a resumed campaign replays it):
warm-up triples draw theirs one by one; the measured ones in blocks of six, each block a
shuffle of all six orders, so that every kernel runs first, second and third equally often
(a drift over the session, a cache warmed by the previous boot, cannot favour one kernel).
From k_min triples on, the three paired comparisons of every metric (bot.analysis.triples)
are one family judged by `bot.analysis.family.look`; the loop stops when every comparison of
every main metric is decided, or at k_max triples.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bot.analysis.family import look
from bot.analysis.triples import COMPARISONS, KERNELS, comparison_name, triple_pairs
from bot.analysis.verdict import DEFAULT_K_MAX, DEFAULT_K_MIN, FAMILY_ALPHA, Comparison
from bot.benchmarks.definition import Metric
from workers.lab.pairs import RunOne, Sample, _checked, _require_main

ORDERS = tuple("".join(p) for p in itertools.permutations(KERNELS))


@dataclass(frozen=True)
class TriplesResult:
    """What a triples campaign produced: every raw sample, the schedule, the judgements."""

    seed: int
    samples: tuple[Sample, ...]  # measured triples only
    warmups: tuple[Sample, ...]
    orders: tuple[str, ...]  # e.g. "CAB" per measured triple
    warmup_orders: tuple[str, ...]
    # Per comparison key ("AB", "AC", "BC"), per main metric, after the last triple.
    comparisons: dict[str, dict[str, Comparison]]
    k_min: int
    k_max: int
    judgement: dict[str, Comparison] = field(default_factory=dict)  # the family, by its names

    @property
    def triples(self) -> int:
        return len(self.orders)

    @property
    def stopped_early(self) -> bool:
        return self.triples < self.k_max


def triple_orders(rng: random.Random, warmups: int, measured: int) -> tuple[list[str], list[str]]:
    """The warm-up triples' orders and the first `measured` measured ones."""
    warmup = [rng.choice(ORDERS) for _ in range(warmups)]
    orders: list[str] = []
    while len(orders) < measured:
        block = list(ORDERS)
        rng.shuffle(block)
        orders.extend(block)
    return warmup, orders[:measured]


def run_triples(
    run_one: RunOne,
    metrics: Sequence[Metric],
    *,
    seed: int,
    warmup_triples: int = 1,
    k_min: int = DEFAULT_K_MIN,
    k_max: int = DEFAULT_K_MAX,
    q: float = FAMILY_ALPHA,
) -> TriplesResult:
    """Run warm-up triples, then measured triples until every comparison of every main metric
    is decided or k_max; all the comparisons are one family held to false-discovery rate `q`.
    A boot that returns samples for another kernel or slot than asked, or no value of a main
    metric, is a runner bug and raises ValueError (as in the pair loop)."""
    main = [m for m in metrics if m.main]
    if not main:
        raise ValueError("no main metric to judge")
    if not 1 <= k_min <= k_max:
        raise ValueError(f"need 1 <= k_min <= k_max, got {k_min}, {k_max}")
    if warmup_triples < 0:
        raise ValueError(f"warmup_triples must be >= 0, got {warmup_triples}")
    warmup_orders, planned = triple_orders(random.Random(seed), warmup_triples, k_max)
    warmups: list[Sample] = []
    for index, order in enumerate(warmup_orders):
        for position, kernel in enumerate(order):
            warmups.extend(replace(s, warmup=True)
                           for s in _boot(run_one, kernel, index, position, main))

    samples: list[Sample] = []
    orders: list[str] = []
    decided: dict[str, Comparison] = {}
    judgement: dict[str, Comparison] = {}
    for measured, order in enumerate(planned):
        index = warmup_triples + measured
        orders.append(order)
        for position, kernel in enumerate(order):
            samples.extend(_boot(run_one, kernel, index, position, main))
        if measured + 1 < k_min:
            continue
        state = look(triple_pairs(samples, metrics), measured + 1, decided, k_min=k_min,
                     k_max=k_max, q=q)
        decided, judgement = state.decided, state.comparisons
        if state.stop:
            break
    return TriplesResult(
        seed=seed, samples=tuple(samples), warmups=tuple(warmups), orders=tuple(orders),
        warmup_orders=tuple(warmup_orders),
        comparisons={c.key: {m.name: judgement[name] for m in main
                             if (name := comparison_name(c, m.name)) in judgement}
                     for c in COMPARISONS},
        k_min=k_min, k_max=k_max, judgement=judgement)


def _boot(run_one: RunOne, kernel: str, index: int, position: int,
          main: Sequence[Metric]) -> tuple[Sample, ...]:
    # The pair loop's checks of a boot (its slot, one value of each main metric) hold here too.
    boot = _checked(run_one(kernel, index, position), kernel, index, position)
    _require_main(boot, main, kernel, index)
    return boot
