"""The `bench` step of a review run: each benchmark as a lab campaign, base against patched.

Runs on the lab host's own queue (`lab.<host>`, one worker with concurrency 1). The kernels are
the artifacts of the run's two build steps. One campaign per benchmark; a campaign already done
is kept, a half-done one resumes from its stored boots, so a redelivered step repeats no boot
that was stored.
"""

from __future__ import annotations

import random
import traceback
from pathlib import Path

import sqlalchemy as sa

from bot.config import Settings
from bot.db.models import LabCampaign, RunStep
from bot.db.session import Database
from workers import steps
from workers.benchmarks.definition import Benchmark
from workers.benchmarks.spec import from_spec
from workers.lab.campaign import new_campaign, run_campaign
from workers.lab.hosts import LabHostSettings, find_host
from workers.lab.runners import make_runner

KERNEL_FILE = "bzImage"


def review_host(settings: Settings, run_runner: str | None) -> LabHostSettings:
    return find_host(settings.lab_hosts, run_runner)


def run_bench_step(db: Database, settings: Settings, step_id: int,
                   task_id: str | None = None) -> None:
    """Run every benchmark of the review run as a campaign on its lab host."""
    with db.session() as session:
        step = session.get(RunStep, step_id)
        assert step is not None
        run = step.run
        builds = {s.name: s for s in run.steps}
        built = all(builds[n].state == "done" and builds[n].result.get("ok")
                    for n in ("build-base", "build-patched"))
        kernels = {}
        if built:
            kernels = {kernel: Path(builds[name].result["artifact_dir"]) / KERNEL_FILE
                       for kernel, name in (("A", "build-base"), ("B", "build-patched"))}
        names = list(run.benchmarks or [])
        run_id, runner_name = run.id, run.runner
        base, patched = run.base_commit, run.patched_commit
    if not built:
        if steps.start_step(db, step_id, task_id):
            steps.finish_step(db, step_id, ok=False,
                              error="not benchmarked: the kernels were not built")
        return
    if not steps.start_step(db, step_id, task_id):
        return
    try:
        host = review_host(settings, runner_name)
        if not names:
            raise ValueError("no benchmark to run: no suite watches the files this series "
                             "touches, and none was asked for")
        campaigns = []
        for name in names:
            bench = from_spec(name)
            campaign_id = _campaign(db, run_id, bench, host, str(base), str(patched), kernels)
            done = run_campaign(
                db, campaign_id, bench, make_runner(host, bench, kernels),
                progress=lambda boots, most, name=name: steps.notify(
                    run_id, "bench", f"{name}: boot {boots} of at most {most}"))
            campaigns.append({"id": done.id, "benchmark": name, "state": done.state,
                              "error": done.error})
            if done.state != "done":
                steps.finish_step(db, step_id, ok=False, result={"campaigns": campaigns},
                                  error=f"{name} on {host.name}: {done.error}")
                return
    except Exception as exc:  # noqa: BLE001 - recorded on the row; the worker lives on
        steps.finish_step(db, step_id, ok=False, error=f"{exc.__class__.__name__}: {exc}",
                          log=traceback.format_exc())
        return
    steps.finish_step(db, step_id, ok=True,
                      result={"host": host.name, "runner": host.runner, "campaigns": campaigns})


def _campaign(db: Database, run_id: int, bench: Benchmark, host: LabHostSettings, base: str,
              patched: str, kernels: dict[str, Path]) -> int:
    """The run's campaign for this benchmark: the stored one (to resume; a failed one is
    kept as it is and a new one made), else a new one."""
    with db.session() as session:
        existing = session.scalars(
            sa.select(LabCampaign).where(LabCampaign.run_id == run_id,
                                         LabCampaign.benchmark == bench.name)
            .order_by(LabCampaign.id.desc())).first()
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
