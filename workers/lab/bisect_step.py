"""A bisect run's `bisect` step: campaigns over the series' prefixes, until the patch is found.

Runs on the lab host's own queue, like the bench step. The change followed is what the parent
review's campaigns found (its main metrics that regressed or improved); each bisection step
runs, for every benchmark that changed, one campaign of the base against one prefix of the
series (`lab_campaigns.arm` "prefix i/N"), capped at `[follow_ups] bisect_boots` boots (or the
run's `bisect_boots` option). Which prefix next, and when to stop, is bot.runs.bisection's.
Campaigns are found again by their arm, so a redelivered step reuses the done ones and resumes
a half-done one from its stored boots: no stored boot is repeated. The step's result is a
`BisectRecord`; a bisection that ended without finding the patch (the budget ran out, prefixes
did not build) is a done step whose record says why: the reply says so.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from bot.benchmarks.definition import Benchmark
from bot.benchmarks.registry import benchmark as make_benchmark
from bot.benchmarks.spec import from_spec
from bot.config import Settings
from bot.config.lab_hosts import find_host
from bot.db.models import LabCampaign, Run
from bot.db.session import Database
from bot.runs.bisection import (
    CHANGES,
    Carries,
    TrackedChange,
    bisect,
    carries,
    pairs_within,
)
from bot.runs.follow_ups import reviewed_spec
from bot.runs.records import (
    ApplyRecord,
    BisectProbe,
    BisectRecord,
    BuildRecord,
    MetricFinding,
    PrefixesRecord,
)
from bot.runs.states import StepState
from bot.runs.steps import StepEnd, StepFailed, run_step, stored_step
from workers.lab.step import KERNEL_FILE, benchmark_campaign, host_lru


def run_bisect_step(db: Database, settings: Settings, step_id: int,
        task_id: str | None = None) -> None:
    """Bisect the change the parent review found over the prefixes the run built."""
    run_step(db, step_id, task_id, lambda: _bisect(db, settings, step_id))


def arm_name(prefix: int, patches: int) -> str:
    """What kernel B of a bisection step's campaign is: "prefix 2/4"."""
    return f"prefix {prefix}/{patches}"


def _bisect(db: Database, settings: Settings, step_id: int) -> StepEnd:
    with db.session() as session:
        step = stored_step(session, step_id)
        run = step.run
        steps = {s.name: s for s in run.steps}
        base_build = BuildRecord.from_step(steps.get("build-base"))
        prefixes = PrefixesRecord.from_step(steps.get("build-prefixes"))
        built = all(steps[n].state == StepState.DONE for n in ("build-base", "build-prefixes")
                    if n in steps) and base_build.ok and prefixes.ok
        changes_lru_gen = ApplyRecord.from_step(steps.get("apply")).changes_lru_gen
        budget = int((run.options or {}).get("bisect_boots", settings.follow_ups.bisect_boots))
        run_id, runner_name, base = run.id, run.runner, str(run.base_commit)
        parent = session.get(Run, run.parent_run_id) if run.parent_run_id else None
        if parent is None:
            raise StepFailed("not bisected: the run follows no review")
        review, benchmarks = _review_change(session, parent)
    if not built:
        raise StepFailed("not bisected: the kernels were not built")
    if not review:
        raise StepFailed("nothing to bisect: the review found no change in a main metric")
    host = find_host(settings.lab_hosts, runner_name)
    pairs_max = pairs_within(budget, host.warmup_pairs)
    if pairs_max < 1:
        raise StepFailed(f"not bisected: {budget} boots per step leave no measured pair after "
                         f"{host.warmup_pairs} warm-up pair(s); raise [follow_ups] bisect_boots")
    patches = len(prefixes.prefixes)
    by_prefix = {p.prefix: p for p in prefixes.prefixes}
    change = tuple(TrackedChange(m.benchmark, m.metric, m.verdict) for m in review)
    kernel_a = Path(str(base_build.artifact_dir)) / KERNEL_FILE
    lru = host_lru(host, changes_lru_gen)
    probes: list[BisectProbe] = []

    def record() -> BisectRecord:
        state = bisect(patches, _testable(prefixes), {p.prefix: _carries(p) for p in probes})
        return BisectRecord(
            host=host.name, runner=host.runner, patches=patches, boots_per_step=budget,
            pairs_max=pairs_max, review=review, probes=tuple(probes),
            not_built=tuple(p.prefix for p in prefixes.prefixes if not p.ok),
            ended=state.ended.value if state.ended else "", found=state.found,
            good=state.good, bad=state.bad, stopped_at=state.stopped_at,
            boots=sum(p.boots for p in probes))

    while (state := bisect(patches, _testable(prefixes),
                           {p.prefix: _carries(p) for p in probes})).next is not None:
        prefix = by_prefix[state.next]
        kernels = {"A": kernel_a, "B": Path(str(prefix.artifact_dir)) / KERNEL_FILE}
        done: list[LabCampaign] = []
        for bench in benchmarks:
            campaign = benchmark_campaign(db, run_id, "bisect", bench, host,
                                          (base, prefix.commit), kernels, lru,
                                          arm=arm_name(prefix.prefix, patches),
                                          k_max=pairs_max)
            done.append(campaign)
            if campaign.state != "done":
                raise StepFailed(f"{bench.name} on {host.name}, "
                                 f"{arm_name(prefix.prefix, patches)}: {campaign.error}",
                                 result=record().as_result())
        found = [m for c in done for m in main_findings(c)]
        said = carries(change, {(m.benchmark, m.metric): m.verdict for m in found})
        probes.append(BisectProbe(prefix=prefix.prefix, commit=prefix.commit,
                                  carries=said.value, campaigns=tuple(c.id for c in done),
                                  boots=sum(_boots(c) for c in done), metrics=tuple(found)))
    return StepEnd(result=record().as_result())


def _review_change(session: sa.orm.Session,
                   parent: Run) -> tuple[tuple[MetricFinding, ...], list[Benchmark]]:
    """The main metrics the review found changed, and the benchmarks (with their parameters)
    whose campaigns found them: what each bisection step runs again."""
    campaigns = session.scalars(sa.select(LabCampaign).where(
        LabCampaign.run_id == parent.id, LabCampaign.state == "done")
        .order_by(LabCampaign.id)).all()
    changed = {c.id: [m for m in main_findings(c) if m.verdict in CHANGES] for c in campaigns}
    return (tuple(m for found in changed.values() for m in found),
            [_as_reviewed(parent, c) for c in campaigns if changed[c.id]])


def _as_reviewed(parent: Run, campaign: LabCampaign) -> Benchmark:
    """The benchmark as the review ran it: its own spec, else one made from the campaign's
    parameters."""
    spec = reviewed_spec(parent, campaign)
    return from_spec(spec) if spec else make_benchmark(campaign.benchmark, **campaign.parameters)


def main_findings(campaign: LabCampaign) -> list[MetricFinding]:
    """The main metrics of a finished campaign, as its judgement stored them."""
    result = campaign.result or {}
    label = " ".join([campaign.benchmark, *(f"{k}={v}" for k, v in
                                             result.get("parameters", []))])
    return [MetricFinding(benchmark=label, metric=m["metric"], verdict=m["verdict"],
                          words=m.get("words", m["verdict"]), change_pct=m["change_pct"],
                          ci_low_pct=m["ci_pct"][0], ci_high_pct=m["ci_pct"][1],
                          interval_level=m.get("interval_level", 0.95))
            for m in result.get("metrics", []) if not m.get("secondary")]


def _testable(prefixes: PrefixesRecord) -> set[int]:
    return {p.prefix for p in prefixes.prefixes if p.ok}


def _carries(probe: BisectProbe) -> Carries:
    return Carries(probe.carries)


def _boots(campaign: LabCampaign) -> int:
    """The boots a campaign took (warm-ups included): one per kernel per pair."""
    return len({(s.kernel, s.pair_index) for s in campaign.samples})
