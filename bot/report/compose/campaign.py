"""A lab campaign judged: its stored samples as a `BenchmarkResult`, every metric's verdict.

The pair loop (workers/lab/pairs.py) stops a campaign; `judge_campaign` is the one place its
samples are turned into verdicts: all of its metrics (main, secondary, reclaim counters) as one
family, replaying the loop's looks (bot.analysis.family, through
bot.report.compose.results_file), and
`result_json` is what the campaign's `result` column stores of that judgement for the status
page, `lorelab review`'s exit status and `lorelab analyze`. A campaign with a third kernel (a
compare run's triples: base, series, the reviewer's alternative) is judged by `judge_triples`
as one family of three paired comparisons (bot.analysis.triples), as its loop judged it, and
`ended_json` stores all three, with the alternative against the series as its `metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from sqlalchemy.orm import object_session

from bot.analysis.family import COUNTER_DELTA, MetricPairs, pairs_from_samples
from bot.analysis.triples import ALTERNATIVE_SERIES, COMPARISONS, split_name, triple_pairs
from bot.analysis.verdict import FAMILY_ALPHA
from bot.benchmarks.definition import Benchmark
from bot.db.models import LabCampaign, Run
from bot.report.compose.results import BenchmarkResult, MetricResult, RunPolicy
from bot.report.compose.results_file import benchmark_result


class StoredSample(Protocol):
    metric: str
    value: float
    unit: str
    kernel: str
    pair_index: int
    position: int
    warmup: bool


def judge_campaign(campaign: LabCampaign, benchmark: Benchmark,
                   samples: Sequence[StoredSample] | None = None) -> BenchmarkResult:
    """Every metric's verdict, from the measured (not warm-up) samples; of a triples campaign,
    the alternative against the series (its finding, as `ended_json` stores it)."""
    if campaign.kernel_c is not None:
        return judge_triples(campaign, benchmark, samples)[ALTERNATIVE_SERIES.key]
    measured = [s for s in (campaign.samples if samples is None else samples) if not s.warmup]
    policy = campaign_policy(campaign, measured)
    units = {s.metric: s.unit for s in measured}
    return benchmark_result(
        _raw_benchmark(benchmark, pairs_from_samples(measured, benchmark.metrics), units),
        policy, f"campaign {campaign.id}")


def judge_triples(campaign: LabCampaign, benchmark: Benchmark,
                  samples: Sequence[StoredSample] | None = None) -> dict[str, BenchmarkResult]:
    """A triples campaign's three comparisons by key ("AB", "AC", "BC"), judged as one
    family; each a `BenchmarkResult` whose metrics have their own names."""
    measured = [s for s in (campaign.samples if samples is None else samples) if not s.warmup]
    family = triple_pairs(measured, benchmark.metrics)
    units = {s.metric: s.unit for s in measured}
    judged = benchmark_result(
        _raw_benchmark(benchmark, family, {p.name: units[split_name(p.name)[1]]
                                           for p in family}),
        campaign_policy(campaign, measured), f"campaign {campaign.id}")
    return {c.key: BenchmarkResult(
        name=judged.name, parameters=judged.parameters,
        metrics=tuple(replace(m, name=split_name(m.name)[1]) for m in judged.metrics
                      if split_name(m.name)[0] == c),
        not_compared=tuple(split_name(n)[1] for n in judged.not_compared
                           if split_name(n)[0] == c))
        for c in COMPARISONS}


def ended_json(campaign: LabCampaign, benchmark: Benchmark) -> dict[str, Any]:
    """The `result` column of a campaign that ended: its judgement; for triples, the three
    comparisons under `comparisons` and the alternative against the series as `metrics` (the
    compare run's finding)."""
    if campaign.kernel_c is None:
        return result_json(campaign, judge_campaign(campaign, benchmark))
    judged = judge_triples(campaign, benchmark)
    return {**result_json(campaign, judged[ALTERNATIVE_SERIES.key]),
            "comparisons": {key: [m.as_dict() for m in result.metrics]
                            for key, result in judged.items()}}


def campaign_policy(campaign: LabCampaign, measured: Sequence[StoredSample]) -> RunPolicy:
    pairs = len({s.pair_index for s in measured})
    order = ("randomized triples (base, series and alternative in a seeded order)"
             if campaign.kernel_c is not None else "randomized pairs (AB or BA, seeded)")
    return RunPolicy(runs_per_kernel=pairs, order=order,
                     sequential=True, k_min=campaign.k_min, k_max=campaign.k_max,
                     alpha=family_level(campaign), delta=COUNTER_DELTA)


def family_level(campaign: LabCampaign) -> float:
    """The false-discovery rate a campaign's metrics are held to: a review run's reply is one
    family, so its benchmarks share FAMILY_ALPHA (each gets an equal part); a campaign of its
    own (`lorelab bench`) has all of it."""
    session = object_session(campaign)
    run = session.get(Run, campaign.run_id) if session is not None and campaign.run_id else None
    benchmarks = len(run.benchmarks or []) if run is not None else 1
    return FAMILY_ALPHA / max(1, benchmarks)


def result_json(campaign: LabCampaign, judged: BenchmarkResult) -> dict[str, Any]:
    """The judgement as the `result` column stores it, for every reader: the reply, the
    status page, `lorelab review`'s exit status."""
    pairs = len({s.pair_index for s in campaign.samples if not s.warmup})
    return {
        "pairs": pairs,
        "stopped_early": pairs < campaign.k_max,
        "parameters": [list(p) for p in judged.parameters],
        "metrics": [m.as_dict() for m in judged.metrics],
        "not_compared": list(judged.not_compared),
    }


def stored_judgement(campaign: LabCampaign) -> BenchmarkResult | None:
    """The judgement stored when the campaign ended; None for a campaign stored before
    judgements were (its samples can be judged again with `judge_campaign`)."""
    result = campaign.result or {}
    metrics = result.get("metrics")
    if campaign.state != "done" or metrics is None or "parameters" not in result or any(
            "comparison" not in m for m in metrics):
        return None
    return BenchmarkResult(
        name=campaign.benchmark,
        parameters=tuple((str(k), str(v)) for k, v in result["parameters"]),
        metrics=tuple(MetricResult.from_dict(m) for m in metrics),
        not_compared=tuple(result.get("not_compared", ())))


def _raw_benchmark(benchmark: Benchmark, family: Sequence[MetricPairs],
                   units: dict[str, str]) -> dict[str, Any]:
    """The recorded-results shape (bot.report.compose.results_file) of a campaign's metrics:
    per metric, its value in each measured pair (None where a boot gave none)."""
    metrics = []
    for pairs in family:
        metrics.append({
            "name": pairs.name, "unit": units[pairs.name],
            # None for a metric the benchmark does not declare (pairs_from_samples)
            "higher_is_better": pairs.higher_is_better,
            "delta": pairs.delta, "secondary": not pairs.main,
            "base": list(pairs.base), "patched": list(pairs.patched),
            "base_positions": list(pairs.base_positions or ()),
            "patched_positions": list(pairs.patched_positions or ()),
        })
    return {"name": benchmark.name, "parameters": dict(benchmark.parameters), "metrics": metrics}
