"""The `bench` step of a review run: each benchmark as a lab campaign, base against patched.

Runs on the lab host's own queue (`lab.<host>`, one worker with concurrency 1). The kernels are
the artifacts of the run's two build steps. One campaign per benchmark; a campaign already done
is kept, a half-done one resumes from its stored boots, so a redelivered step repeats no boot
that was stored.
"""

from __future__ import annotations

import random
from pathlib import Path

import sqlalchemy as sa

from bot.benchmarks.definition import Benchmark
from bot.benchmarks.spec import from_spec
from bot.config import Settings
from bot.config.lab_hosts import LabHostSettings, find_host
from bot.db.models import LabCampaign
from bot.db.session import Database
from bot.runs.lru import lru_for
from bot.runs.records import ApplyRecord, BenchCampaign, BenchRecord, BuildRecord
from bot.runs.states import StepState
from bot.runs.steps import StepEnd, StepFailed, notify, run_step, stored_step
from workers.lab.campaign import new_campaign, run_campaign
from workers.lab.runners import make_runner

KERNEL_FILE = "bzImage"


def run_bench_step(db: Database, settings: Settings, step_id: int,
                   task_id: str | None = None) -> None:
    """Run every benchmark of the review run as a campaign on its lab host."""
    run_step(db, step_id, task_id, lambda: _bench(db, settings, step_id))


def _bench(db: Database, settings: Settings, step_id: int) -> StepEnd:
    with db.session() as session:
        step = stored_step(session, step_id)
        run = step.run
        builds = {s.name: s for s in run.steps if s.name in ("build-base", "build-patched")}
        records = {name: BuildRecord.from_step(s) for name, s in builds.items()}
        built = len(builds) == 2 and all(
            s.state == StepState.DONE and records[name].ok for name, s in builds.items())
        names = list(run.benchmarks or [])
        run_id, runner_name = run.id, run.runner
        apply = ApplyRecord.from_step(next((s for s in run.steps if s.name == "apply"), None))
        base, patched = run.base_commit, run.patched_commit
    if not built:
        raise StepFailed("not benchmarked: the kernels were not built")
    kernels = {kernel: Path(str(records[name].artifact_dir)) / KERNEL_FILE
               for kernel, name in (("A", "build-base"), ("B", "build-patched"))}
    host = find_host(settings.lab_hosts, runner_name)
    if not names:
        raise StepFailed("no benchmark to run: no suite watches the files this series "
                         "touches, and none was asked for")
    # A local host's kernel is not ours to switch; a lab kernel runs what the series changes.
    lru = None if host.runner == "local" else lru_for(host.lru, apply.changes_lru_gen)
    campaigns: list[BenchCampaign] = []
    for name in names:
        bench = from_spec(name)
        try:
            runner = make_runner(host, bench, kernels, lru=lru)
        except ValueError as exc:  # a lab host that cannot compare these kernels
            raise StepFailed(f"not benchmarked: {exc}") from None
        campaign_id = _campaign(db, run_id, bench, host, str(base), str(patched), kernels)
        done = run_campaign(
            db, campaign_id, bench, runner,
            progress=lambda boots, most, name=name: notify(
                run_id, "bench", f"{name}: boot {boots} of at most {most}"))
        campaigns.append(BenchCampaign(id=done.id, benchmark=name, state=done.state,
                                       error=done.error))
        record = BenchRecord(host=host.name, runner=host.runner, campaigns=tuple(campaigns))
        if done.state != "done":
            raise StepFailed(f"{name} on {host.name}: {done.error}", result=record.as_result())
    return StepEnd(result=BenchRecord(host=host.name, runner=host.runner,
                                      campaigns=tuple(campaigns)).as_result())


def _campaign(db: Database, run_id: int, bench: Benchmark, host: LabHostSettings, base: str,
              patched: str, kernels: dict[str, Path]) -> int:
    """The run's campaign for this benchmark: the stored one (to resume; a failed one is
    kept as it is and a new one made), else a new one."""
    with db.session() as session:
        # The same benchmark at other parameters (readtwice:mb=256 beside mb=512) is another
        # campaign: match both.
        existing = next((c for c in session.scalars(
            sa.select(LabCampaign).where(LabCampaign.run_id == run_id,
                                         LabCampaign.benchmark == bench.name)
            .order_by(LabCampaign.id.desc()))
            if c.parameters == dict(bench.parameters)), None)
        if existing is not None and existing.state != "failed":
            return existing.id
        campaign = new_campaign(bench, kernel_a=f"{base} ({kernels['A']})",
                                kernel_b=f"{patched} ({kernels['B']})", host=host.name,
                                runner=host.runner, seed=random.SystemRandom().randrange(2**31),
                                k_min=host.pairs_min, k_max=host.pairs_max,
                                warmup_pairs=host.warmup_pairs, run_id=run_id)
        session.add(campaign)
        session.flush()
        return campaign.id
