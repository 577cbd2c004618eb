"""The `bench` step of a review run: each benchmark as a lab campaign, base against patched.

Runs on the lab host's own queue (`lab.<host>`, one worker with concurrency 1). The kernels are
the artifacts of the run's build steps; a compare run has a third, the reviewer's alternative,
and its campaigns run triples. One campaign per benchmark; a campaign already done
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
from bot.runs.records import (
    AlternativeRecord,
    ApplyRecord,
    BenchCampaign,
    BenchRecord,
    BuildRecord,
)
from bot.runs.states import StepState
from bot.runs.steps import StepEnd, StepFailed, notify, run_step, stored_step
from workers.lab.campaign import new_campaign, run_campaign
from workers.lab.runners import make_runner

KERNEL_FILE = "bzImage"
# The build step of each kernel a run's campaigns boot: a compare run's third kernel ("C",
# lab_campaigns.kernel_c) is the reviewer's alternative, run in triples (workers/lab/triples.py).
KERNEL_BUILDS = {"A": "build-base", "B": "build-patched", "C": "build-alternative"}
# By run kind: what its campaigns' kernel B is (lab_campaigns.arm), when not simply the series.
ARMS = {"align": "aligned"}


def run_bench_step(db: Database, settings: Settings, step_id: int,
                   task_id: str | None = None) -> None:
    """Run every benchmark of the review run as a campaign on its lab host."""
    run_step(db, step_id, task_id, lambda: _bench(db, settings, step_id))


def _bench(db: Database, settings: Settings, step_id: int) -> StepEnd:
    with db.session() as session:
        step = stored_step(session, step_id)
        run = step.run
        builds = {s.name: s for s in run.steps if s.name in KERNEL_BUILDS.values()}
        records = {name: BuildRecord.from_step(s) for name, s in builds.items()}
        built = {"build-base", "build-patched"} <= builds.keys() and all(
            s.state == StepState.DONE and records[name].ok for name, s in builds.items())
        names = list(run.benchmarks or [])
        # A run asked for a number of pairs (an experiment: the author's "18 runs") runs
        # at most that many.
        pairs = (run.options or {}).get("pairs")
        run_id, runner_name = run.id, run.runner
        # What kernel B is within the run, when not simply "the series".
        arm = ARMS.get(run.kind)
        apply = ApplyRecord.from_step(next((s for s in run.steps if s.name == "apply"), None))
        base, patched = run.base_commit, run.patched_commit
        commits = (str(base), str(patched), *(
            [str(AlternativeRecord.from_step(s).commit) for s in run.steps
             if s.name == "apply-alternative"]))
    if not built:
        raise StepFailed("not benchmarked: the kernels were not built")
    kernels = {kernel: Path(str(records[name].artifact_dir)) / KERNEL_FILE
               for kernel, name in KERNEL_BUILDS.items() if name in builds}
    host = find_host(settings.lab_hosts, runner_name)
    if not names:
        raise StepFailed("no benchmark to run: no suite watches the files this series "
                         "touches, and none was asked for")
    lru = host_lru(host, apply.changes_lru_gen)
    campaigns: list[BenchCampaign] = []
    for name in names:
        done = benchmark_campaign(db, run_id, "bench", from_spec(name), host,
                                  commits, kernels, lru, arm=arm, k_max=pairs)
        campaigns.append(BenchCampaign(id=done.id, benchmark=name, state=done.state,
                                       error=done.error))
        record = BenchRecord(host=host.name, runner=host.runner, campaigns=tuple(campaigns))
        if done.state != "done":
            raise StepFailed(f"{name} on {host.name}: {done.error}", result=record.as_result())
    return StepEnd(result=BenchRecord(host=host.name, runner=host.runner,
                                      campaigns=tuple(campaigns)).as_result())


def host_lru(host: LabHostSettings, changes_lru_gen: bool) -> str | None:
    """The LRU the lab kernels run (bot.runs.lru): a local host's kernel is not ours to
    switch; a lab kernel runs what the series changes."""
    return None if host.runner == "local" else lru_for(host.lru, changes_lru_gen)


def benchmark_campaign(db: Database, run_id: int, step: str, bench: Benchmark,
                       host: LabHostSettings, commits: tuple[str, ...],
                       kernels: dict[str, Path], lru: str | None, *, arm: str | None = None,
                       k_max: int | None = None) -> LabCampaign:
    """The run's campaign of `bench` on `host`, kernels["A"] against kernels["B"] (and
    kernels["C"], in triples; the `commits` they were built from, in that order), run to its
    end: the stored one resumed, else a new one.
    `arm` says what kernel B is within the run ("prefix 2/4"); `k_max` caps its pairs (a
    follow-up's budget) below the host's own."""
    try:
        runner = make_runner(host, bench, kernels, lru=lru)
    except ValueError as exc:  # a lab host that cannot compare these kernels
        raise StepFailed(f"not benchmarked: {exc}") from None
    campaign_id = _campaign(db, run_id, bench, host, commits, kernels, arm=arm, k_max=k_max)
    label = f"{arm}: {bench.name}" if arm else bench.name
    return run_campaign(db, campaign_id, bench, runner, progress=lambda boots, most: notify(
        run_id, step, f"{label}: boot {boots} of at most {most}"))


def _campaign(db: Database, run_id: int, bench: Benchmark, host: LabHostSettings,
              commits: tuple[str, ...], kernels: dict[str, Path], *, arm: str | None = None,
              k_max: int | None = None) -> int:
    """The run's campaign for this benchmark (and arm): the stored one (to resume; a failed
    one is kept as it is and a new one made), else a new one."""
    with db.session() as session:
        # The same benchmark at other parameters (readtwice:mb=256 beside mb=512) is another
        # campaign: match both.
        existing = next((c for c in session.scalars(
            sa.select(LabCampaign).where(LabCampaign.run_id == run_id,
                                         LabCampaign.benchmark == bench.name,
                                         LabCampaign.arm.is_(None) if arm is None
                                         else LabCampaign.arm == arm)
            .order_by(LabCampaign.id.desc()))
            if c.parameters == dict(bench.parameters)), None)
        if existing is not None and existing.state != "failed":
            return existing.id
        kernel_c = f"{commits[2]} ({kernels['C']})" if "C" in kernels else None
        campaign = new_campaign(bench, kernel_a=f"{commits[0]} ({kernels['A']})",
                                kernel_b=f"{commits[1]} ({kernels['B']})", kernel_c=kernel_c,
                                host=host.name,
                                runner=host.runner, seed=random.SystemRandom().randrange(2**31),
                                k_min=min(host.pairs_min, k_max or host.pairs_max),
                                k_max=k_max or host.pairs_max,
                                warmup_pairs=host.warmup_pairs, run_id=run_id)
        campaign.arm = arm
        session.add(campaign)
        session.flush()
        return campaign.id
