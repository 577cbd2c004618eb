"""A lab campaign judged: its stored samples as a `BenchmarkResult`, every metric's verdict.

The pair loop (workers/lab/pairs.py) stops a campaign; `judge_campaign` is the one place its
samples are turned into verdicts: all of its metrics (main, secondary, reclaim counters) as one
family, replaying the loop's looks (bot.analysis.family, through
bot.report.compose.results_file), and
`result_json` is what the campaign's `result` column stores of that judgement for the status
page, `lorelab review`'s exit status and `lorelab analyze`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy.orm import object_session

from bot.analysis.family import COUNTER_DELTA, pairs_from_samples
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
    """Every metric's verdict, from the measured (not warm-up) samples."""
    measured = [s for s in (campaign.samples if samples is None else samples) if not s.warmup]
    policy = campaign_policy(campaign, measured)
    return benchmark_result(_raw_benchmark(benchmark, measured), policy,
                            f"campaign {campaign.id}")


def campaign_policy(campaign: LabCampaign, measured: Sequence[StoredSample]) -> RunPolicy:
    pairs = len({s.pair_index for s in measured})
    return RunPolicy(runs_per_kernel=pairs, order="randomized pairs (AB or BA, seeded)",
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


def _raw_benchmark(benchmark: Benchmark, samples: Sequence[StoredSample]) -> dict[str, Any]:
    """The recorded-results shape (bot.report.compose.results_file) of a campaign's samples:
    per metric, its value in each measured pair (None where a boot gave none)."""
    metrics = []
    for pairs in pairs_from_samples(samples, benchmark.metrics):
        declared = pairs.name in {m.name for m in benchmark.metrics}
        metrics.append({
            "name": pairs.name, "unit": next(s.unit for s in samples if s.metric == pairs.name),
            "higher_is_better": pairs.higher_is_better if declared else None,
            "delta": pairs.delta, "secondary": not pairs.main,
            "base": list(pairs.base), "patched": list(pairs.patched),
            "base_positions": list(pairs.base_positions or ()),
            "patched_positions": list(pairs.patched_positions or ()),
        })
    return {"name": benchmark.name, "parameters": dict(benchmark.parameters), "metrics": metrics}
