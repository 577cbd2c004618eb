"""A campaign of three kernels as three paired comparisons, judged together as one family.

A compare run boots base ("A"), the series ("B") and a reviewer's alternative ("C") once each
per triple, in a random order. Its question is three comparisons, each paired within the
triple: base -> series, base -> alternative, and alternative vs series (the series as the
reference: "+0.2%" means the alternative's values are 0.2% larger). `triple_pairs` turns the
triples' samples into the MetricPairs of all three, every metric once per comparison under a
name of its own ("BC:reclaim-sim.throughput"), so that `bot.analysis.family.look` judges them
as one family: the loop (workers/lab/triples.py) after each triple, the stored campaign
(bot/report/compose/campaign.py) by replaying the same looks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.analysis.family import MetricPairs, MetricSpec, PairSample, pairs_from_samples

BASE, SERIES, ALTERNATIVE = "A", "B", "C"
KERNELS = (BASE, SERIES, ALTERNATIVE)


@dataclass(frozen=True)
class TripleComparison:
    key: str  # "AB": the reference kernel, then the one compared with it
    label: str  # as the reply says it

    @property
    def reference(self) -> str:
        return self.key[0]

    @property
    def compared(self) -> str:
        return self.key[1]


BASE_SERIES = TripleComparison(BASE + SERIES, "base -> series")
BASE_ALTERNATIVE = TripleComparison(BASE + ALTERNATIVE, "base -> alternative")
ALTERNATIVE_SERIES = TripleComparison(SERIES + ALTERNATIVE, "alternative vs series")
COMPARISONS = (BASE_SERIES, BASE_ALTERNATIVE, ALTERNATIVE_SERIES)


@dataclass(frozen=True)
class _Relabelled:
    metric: str
    value: float
    kernel: str
    pair_index: int
    position: int


@dataclass(frozen=True)
class _Spec:
    name: str
    higher_is_better: bool
    delta: float
    main: bool


def comparison_name(comparison: TripleComparison, metric: str) -> str:
    """The name a metric has within one comparison of the family."""
    return f"{comparison.key}:{metric}"


def split_name(name: str) -> tuple[TripleComparison, str]:
    """The comparison and the metric a family member's name stands for."""
    key, _, metric = name.partition(":")
    comparison = next((c for c in COMPARISONS if c.key == key), None)
    if comparison is None:
        raise ValueError(f"{name!r} names no comparison of a triple")
    return comparison, metric


def triple_pairs(samples: Iterable[PairSample],
                 specs: Sequence[MetricSpec]) -> list[MetricPairs]:
    """The measured samples of a triples campaign as one family: every metric once per
    comparison (`COMPARISONS` order), the reference kernel as the pair's base."""
    samples = list(samples)
    family: list[MetricPairs] = []
    for comparison in COMPARISONS:
        side = {comparison.reference: "A", comparison.compared: "B"}
        relabelled = [_Relabelled(comparison_name(comparison, s.metric), s.value,
                                  side[s.kernel], s.pair_index, s.position)
                      for s in samples if s.kernel in side]
        renamed = [_Spec(comparison_name(comparison, spec.name), spec.higher_is_better,
                         spec.delta, spec.main) for spec in specs]
        family.extend(pairs_from_samples(relabelled, renamed))
    return family
