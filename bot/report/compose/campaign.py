"""A lab campaign judged: its stored samples as a `BenchmarkResult`, every metric's verdict.

The pair loop (workers/lab/pairs.py) stops a campaign; `judge_campaign` is the one place its
samples are turned into verdicts (bot.analysis.verdict through bot.report.compose.results_file), and
`result_json` is what the campaign's `result` column stores of that judgement for the status
page, `lorelab review`'s exit status and `lorelab analyze`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from bot.benchmarks.definition import BASE, PATCHED, Benchmark
from bot.db.models import LabCampaign
from bot.report.compose.results import BenchmarkResult, MetricResult, RunPolicy
from bot.report.compose.results_file import benchmark_result

COUNTER_DELTA = 0.05  # reclaim counters: report changes of 5% or more


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
    """Every metric's verdict, from the measured (not warm-up) samples."""
    measured = [s for s in (campaign.samples if samples is None else samples) if not s.warmup]
    policy = campaign_policy(campaign, measured)
    return benchmark_result(_raw_benchmark(benchmark, measured), policy,
                            f"campaign {campaign.id}")


def campaign_policy(campaign: LabCampaign, measured: Sequence[StoredSample]) -> RunPolicy:
    pairs = len({s.pair_index for s in measured})
    return RunPolicy(runs_per_kernel=pairs, order="randomized pairs (AB or BA, seeded)",
                     sequential=True, k_min=campaign.k_min, k_max=campaign.k_max,
                     delta=COUNTER_DELTA)


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


def _raw_benchmark(benchmark: Benchmark, samples: Sequence[StoredSample]) -> dict[str, Any]:
    """The recorded-results shape (bot.report.compose.results_file) of a campaign's samples."""
    names = list(dict.fromkeys(s.metric for s in samples))
    metrics = []
    for name in names:
        try:
            spec = benchmark.metric(name)
            higher, delta, secondary = spec.higher_is_better, spec.delta, not spec.main
        except KeyError:  # a reclaim counter: no direction is better in general
            higher, delta, secondary = None, COUNTER_DELTA, True
        side = {k: sorted((s for s in samples if s.metric == name and s.kernel == k),
                          key=lambda s: 2 * s.pair_index + s.position) for k in (BASE, PATCHED)}
        if not side[BASE] or not side[PATCHED]:
            continue
        metrics.append({
            "name": name, "unit": side[BASE][0].unit, "higher_is_better": higher,
            "delta": delta, "secondary": secondary,
            "base": [s.value for s in side[BASE]], "patched": [s.value for s in side[PATCHED]],
            "base_positions": [2 * s.pair_index + s.position for s in side[BASE]],
            "patched_positions": [2 * s.pair_index + s.position for s in side[PATCHED]],
        })
    return {"name": benchmark.name, "parameters": dict(benchmark.parameters), "metrics": metrics}
