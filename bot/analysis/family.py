"""A campaign's metrics judged together, after every pair: one family per reply, each metric
stopped on its own (docs/statistics.md, "One family per reply").

Every metric of a campaign (main metrics, secondary ones, reclaim counters) is one hypothesis
of one family: the chance that a campaign with no change reports a change anywhere is held at
FAMILY_ALPHA. At each look, from k_min pairs on:
1. each undecided metric gets its signed-rank p over its valid pairs (`bot.analysis.screen`
   leaves out non-finite values, puts counts with zeros on an absolute scale, and ties exact
   reciprocals to the metric they are derived from);
2. a weighted Benjamini-Hochberg step-up across the family, on per-look levels calibrated for
   the looks (`sequential_alpha` of q r w / m), says which metrics changed. Main metrics share
   half the weight, the others the other half, so forty counters do not drown the benchmark;
3. a metric that changed is decided and keeps that judgement; so is a main metric shown not to
   change (its adjusted interval inside +-delta, or identical in every run), which then stops
   holding the loop; other metrics are judged again at every look. The loop stops when every
   main metric is decided or at k_max, and whatever is undecided then is inconclusive.
`look` is one step (the pair loop calls it after each pair); `judge_pairs` replays the looks
over stored pairs, so a stored campaign is judged exactly as its loop judged it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from bot.analysis.calibration import sequential_alpha
from bot.analysis.fdr import family_weights, weighted_step_up
from bot.analysis.screen import Screened, derived_sources, screen
from bot.analysis.signed_rank import PairedLook, paired_look
from bot.analysis.verdict import (
    DEFAULT_K_MAX,
    DEFAULT_K_MIN,
    FAMILY_ALPHA,
    Comparison,
    Verdict,
    equivalent,
    paired_comparison,
)

COUNTER_DELTA = 0.05  # reclaim counters (no spec of their own): changes of 5% or more

BASE, PATCHED = "A", "B"


class PairSample(Protocol):
    """One stored value (workers.lab.pairs.Sample, or a campaign's stored sample)."""

    metric: str
    value: float
    kernel: str
    pair_index: int
    position: int


class MetricSpec(Protocol):
    """What a benchmark declares about a metric (bot.benchmarks.definition.Metric)."""

    name: str
    higher_is_better: bool
    delta: float
    main: bool


@dataclass(frozen=True)
class MetricPairs:
    """One metric's values per measured pair, in pair order (None: the boot gave no value)."""

    name: str
    base: tuple[float | None, ...]
    patched: tuple[float | None, ...]
    higher_is_better: bool | None  # None: no better direction (most counters)
    delta: float
    main: bool
    base_positions: tuple[int, ...] | None = None  # run-order slot of each pair's base run
    patched_positions: tuple[int, ...] | None = None


def pairs_from_samples(
    samples: Iterable[PairSample], specs: Sequence[MetricSpec]
) -> list[MetricPairs]:
    """Every metric of the measured samples as pairs (declared metrics first, in their order,
    then the others, e.g. reclaim counters, as they first appear). A metric a boot did not
    report has None in that pair."""
    samples = list(samples)
    pair_indexes = sorted({s.pair_index for s in samples})
    slot = {index: i for i, index in enumerate(pair_indexes)}
    declared = {spec.name: spec for spec in specs}
    names = list(dict.fromkeys([*(s.name for s in specs if any(
        x.metric == s.name for x in samples)), *(s.metric for s in samples)]))
    values: dict[tuple[str, str], list[float | None]] = {
        (name, kernel): [None] * len(pair_indexes) for name in names for kernel in (BASE, PATCHED)}
    positions: dict[tuple[str, str], list[int]] = {
        (name, kernel): [0] * len(pair_indexes) for name in names for kernel in (BASE, PATCHED)}
    for sample in samples:
        key = (sample.metric, sample.kernel)
        values[key][slot[sample.pair_index]] = float(sample.value)
        positions[key][slot[sample.pair_index]] = 2 * sample.pair_index + sample.position
    result = []
    for name in names:
        spec = declared.get(name)
        result.append(MetricPairs(
            name=name,
            base=tuple(values[name, BASE]),
            patched=tuple(values[name, PATCHED]),
            higher_is_better=spec.higher_is_better if spec else None,
            delta=spec.delta if spec else COUNTER_DELTA,
            main=spec.main if spec else False,
            base_positions=tuple(positions[name, BASE]),
            patched_positions=tuple(positions[name, PATCHED]),
        ))
    return result


@dataclass(frozen=True)
class Look:
    """The family's state after one look."""

    pairs: int
    decided: dict[str, Comparison]  # final for these metrics
    current: dict[str, Comparison]  # the undecided metrics' judgements, once the look stops
    stop: bool  # every main metric is decided, or k_max reached

    @property
    def comparisons(self) -> dict[str, Comparison]:
        return {**self.current, **self.decided}


def look(
    metrics: Sequence[MetricPairs],
    pairs: int,
    decided: Mapping[str, Comparison],
    *,
    k_min: int = DEFAULT_K_MIN,
    k_max: int = DEFAULT_K_MAX,
    q: float = FAMILY_ALPHA,
    final: bool = False,
) -> Look:
    """Judge the family on its first `pairs` pairs, keeping the metrics already `decided`.
    `final`: no pair will follow even before k_max (the stored pairs end here)."""
    final = final or pairs >= k_max
    screened = {m.name: screen(m, pairs) for m in metrics}
    sources = derived_sources([screened[m.name] for m in metrics])
    family = [m for m in metrics if m.name not in sources]
    looks = {name: _paired(s) for name, s in screened.items() if name not in decided}
    pvalues = {
        m.name: decided[m.name].pvalue if m.name in decided else _pvalue(looks[m.name])
        for m in family
    }
    weights = family_weights([m.name for m in family if m.main],
                             [m.name for m in family if not m.main])
    rejected = weighted_step_up(  # each changed metric with the per-look level it passed at
        pvalues, weights, q, lambda share: sequential_alpha(k_min, k_max, share)
    ) if pairs >= k_min else {}
    alone = sequential_alpha(k_min, k_max, q)

    def significant(name: str) -> bool:
        source = sources.get(name)
        if source is None:
            return name in rejected
        return decided[source].changed if source in decided else source in rejected

    # Which metrics this look decides: cheap tests first, whole comparisons only when needed.
    settled = {m.name for m in metrics if m.name not in decided and m.name not in sources
               and _settles(m, screened[m.name], looks[m.name], significant(m.name),
                            k_min, k_max, pairs)}
    settled |= {name for name, source in sources.items()
                if name not in decided and (source in decided or source in settled)}
    stop = final or all(m.name in decided or m.name in settled for m in metrics if m.main)
    built: dict[str, Comparison] = {}
    for metric in sorted(metrics, key=lambda m: m.name in sources):  # sources first
        if metric.name in decided or not (stop or metric.name in settled):
            continue
        source = sources.get(metric.name)
        demoted = (source is None and not significant(metric.name) and pairs >= k_min
                   and pvalues[metric.name] <= alone)
        built[metric.name] = _comparison(
            metric, screened[metric.name], looks[metric.name],
            significant=significant(metric.name), k_min=k_min, k_max=k_max,
            final=final or stop, family_size=len(family), derived_from=source,
            fdr_demoted=demoted, level=rejected.get(source or metric.name),
            source=None if source is None else built.get(source, decided.get(source)))
    built = {m.name: built[m.name] for m in metrics if m.name in built}  # in the metrics' order
    return Look(pairs=pairs,
                decided={**decided, **{n: c for n, c in built.items() if n in settled}},
                current={n: c for n, c in built.items() if n not in settled}, stop=stop)


def judge_pairs(
    metrics: Sequence[MetricPairs],
    *,
    k_min: int = DEFAULT_K_MIN,
    k_max: int = DEFAULT_K_MAX,
    q: float = FAMILY_ALPHA,
) -> Look:
    """Replay the looks over stored pairs, from k_min to the first look that stops, or to the
    last stored pair (an interrupted or shorter campaign), judged there as final."""
    available = min((len(m.base) for m in metrics), default=0)
    if available == 0:
        raise ValueError("no pairs to judge")
    decided: dict[str, Comparison] = {}
    for pairs in range(min(k_min, available), available + 1):
        state = look(metrics, pairs, decided, k_min=k_min, k_max=k_max, q=q,
                     final=pairs == available)
        if state.stop:
            return state
        decided = state.decided
    raise AssertionError("the last look is final")


def _paired(screened: Screened) -> PairedLook | None:
    return paired_look(screened.differences) if screened.differences.size else None


def _pvalue(paired: PairedLook | None) -> float:
    return 1.0 if paired is None else paired.pvalue


def _settles(metric: MetricPairs, screened: Screened, paired: PairedLook | None,
             significant: bool, k_min: int, k_max: int, pairs: int) -> bool:
    """Is the metric decided at this look? A change is, at once. "No change" (identical in every
    run, or the interval inside +-delta) is for a main metric, which then stops holding the
    loop; another metric is judged again at each look, so its last look uses every pair."""
    if paired is None or pairs < k_min:
        return False
    if significant:
        return True
    if not metric.main or paired.k < k_min:
        return False
    if screened.base.size and np.all(screened.base == screened.base[0]) and np.all(
            screened.patched == screened.base[0]):
        return True
    return screened.scale == "log" and equivalent(paired, metric.delta, k_min, k_max)


def _comparison(metric: MetricPairs, screened: Screened, paired: PairedLook | None, *,
                significant: bool, k_min: int, k_max: int, final: bool,
                **extra: object) -> Comparison:
    if paired is None:  # every pair left out: nothing to judge, the reasons say why
        placeholder = screened.empty()
        comparison = paired_comparison(
            placeholder.base, placeholder.patched, paired_look(placeholder.differences),
            significant=False, higher_is_better=bool(metric.higher_is_better),
            delta=metric.delta, k_min=k_min, k_max=k_max, final=True,
            rejected=screened.rejected, **extra)
        return replace(comparison, verdict=Verdict.INCONCLUSIVE, identical=False)
    return paired_comparison(
        screened.base, screened.patched, paired, significant=significant,
        higher_is_better=bool(metric.higher_is_better), delta=metric.delta,
        k_min=k_min, k_max=k_max, final=final, scale=screened.scale,
        base_positions=screened.base_positions, patched_positions=screened.patched_positions,
        rejected=screened.rejected, **extra)
