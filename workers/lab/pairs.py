"""The interleaved A/B pair loop: run base and patched in random order, judge after each pair.

Pure over an injected `run_one(kernel, pair_index, position)` that runs one boot of kernel "A"
(base) or "B" (patched) and returns its samples. Each pair's order (AB or BA) is drawn from a
`random.Random(seed)`, so a campaign's schedule is reproducible from its recorded seed. Warm-up
pairs run first and are kept apart, never judged. From k_min pairs on, all the metrics the boots
report are judged after each pair as one family (`bot.analysis.family.look`): each is decided on
its own, and the loop stops when every main metric is decided or k_max pairs have run. See
docs/statistics.md, "Design of a comparison".
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from bot.analysis.family import look, pairs_from_samples
from bot.analysis.verdict import DEFAULT_K_MAX, DEFAULT_K_MIN, FAMILY_ALPHA, Comparison
from bot.benchmarks.definition import Metric


@dataclass(frozen=True)
class Sample:
    """One raw value of one metric from one boot, with everything needed to re-judge it."""

    metric: str
    value: float
    unit: str
    kernel: str  # "A" (base) or "B" (patched)
    pair_index: int  # counts warm-up pairs first, then measured pairs
    position: int  # 0: first in its pair, 1: second
    host: str
    boot_id: str
    accel: str  # how the kernel ran: "kvm", "tcg", "bare" or "none" (no boot: local runner)
    time: datetime
    warmup: bool = False

    @property
    def slot(self) -> int:
        """The run's place in the session's run order (0, 1, 2, ...)."""
        return 2 * self.pair_index + self.position


# (kernel, pair_index, position) -> that boot's samples.
RunOne = Callable[[str, int, int], Sequence[Sample]]


@dataclass(frozen=True)
class PairsResult:
    """What a campaign produced: every raw sample, the schedule, and the final judgements."""

    seed: int
    samples: tuple[Sample, ...]  # measured pairs only
    warmups: tuple[Sample, ...]  # discarded warm-up runs, kept for the record
    orders: tuple[str, ...]  # "AB" or "BA" per measured pair
    warmup_orders: tuple[str, ...]
    comparisons: dict[str, Comparison]  # per main metric, after the last pair
    k_min: int
    k_max: int
    # Every metric's judgement (main, secondary, counters), as `judge_campaign` makes it again.
    judgement: dict[str, Comparison] = field(default_factory=dict)

    @property
    def pairs(self) -> int:
        return len(self.orders)

    @property
    def stopped_early(self) -> bool:
        return self.pairs < self.k_max

    def values(self, metric: str, kernel: str) -> list[float]:
        """One kernel's values of a metric, in run order."""
        return [s.value for s in self.samples if s.metric == metric and s.kernel == kernel]


def pair_order(rng: random.Random) -> str:
    """AB or BA with equal probability."""
    return "AB" if rng.random() < 0.5 else "BA"


def run_pairs(
    run_one: RunOne,
    metrics: Sequence[Metric],
    *,
    seed: int,
    warmup_pairs: int = 1,
    k_min: int = DEFAULT_K_MIN,
    k_max: int = DEFAULT_K_MAX,
    q: float = FAMILY_ALPHA,
) -> PairsResult:
    """Run warm-up pairs, then measured pairs until every main metric is decided or k_max;
    the benchmark's metrics are one family held to false-discovery rate `q` over the looks.

    `metrics` are the benchmark's metrics; only the main ones hold the loop. A boot that returns no
    value of a main metric, or samples for another kernel or slot than asked, is a runner bug and
    raises ValueError.
    """
    main = [m for m in metrics if m.main]
    if not main:
        raise ValueError("no main metric to judge")
    if not 1 <= k_min <= k_max:
        raise ValueError(f"need 1 <= k_min <= k_max, got {k_min}, {k_max}")
    if warmup_pairs < 0:
        raise ValueError(f"warmup_pairs must be >= 0, got {warmup_pairs}")
    rng = random.Random(seed)
    warmups: list[Sample] = []
    warmup_orders: list[str] = []
    for pair_index in range(warmup_pairs):
        order = pair_order(rng)
        warmup_orders.append(order)
        for position, kernel in enumerate(order):
            boot = _checked(run_one(kernel, pair_index, position), kernel, pair_index, position)
            warmups.extend(_as_warmup(s) for s in boot)

    samples: list[Sample] = []
    orders: list[str] = []
    judgement: dict[str, Comparison] = {}
    decided: dict[str, Comparison] = {}
    for measured in range(k_max):
        pair_index = warmup_pairs + measured
        order = pair_order(rng)
        orders.append(order)
        for position, kernel in enumerate(order):
            boot = _checked(run_one(kernel, pair_index, position), kernel, pair_index, position)
            _require_main(boot, main, kernel, pair_index)
            samples.extend(boot)
        if measured + 1 < k_min:
            continue
        state = look(pairs_from_samples(samples, metrics), measured + 1, decided,
                     k_min=k_min, k_max=k_max, q=q)
        decided, judgement = state.decided, state.comparisons
        if state.stop:
            break
    return PairsResult(
        seed=seed,
        samples=tuple(samples),
        warmups=tuple(warmups),
        orders=tuple(orders),
        warmup_orders=tuple(warmup_orders),
        comparisons={m.name: judgement[m.name] for m in main if m.name in judgement},
        k_min=k_min,
        k_max=k_max,
        judgement=judgement,
    )


def _checked(
    boot: Sequence[Sample], kernel: str, pair_index: int, position: int
) -> tuple[Sample, ...]:
    boot = tuple(boot)
    for sample in boot:
        if (sample.kernel, sample.pair_index, sample.position) != (kernel, pair_index, position):
            raise ValueError(
                f"run_one({kernel!r}, {pair_index}, {position}) returned a sample for "
                f"{sample.kernel!r}, pair {sample.pair_index}, position {sample.position}"
            )
    return boot


def _require_main(boot: Sequence[Sample], main: Sequence[Metric], kernel: str, pair: int) -> None:
    present = [s.metric for s in boot]
    # Iterations inside one boot are not independent: the runner summarises them (median).
    repeated = sorted({name for name in present if present.count(name) > 1})
    if repeated:
        raise ValueError(f"kernel {kernel}, pair {pair}: several values of {', '.join(repeated)}")
    missing = [m.name for m in main if m.name not in present]
    if missing:
        raise ValueError(f"kernel {kernel}, pair {pair}: no value for {', '.join(missing)}")


def _as_warmup(sample: Sample) -> Sample:
    return replace(sample, warmup=True)
