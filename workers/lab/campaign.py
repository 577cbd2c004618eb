"""A lab campaign: one benchmark, base against patched, on one lab host, stored as it runs.

`run_campaign` drives `run_pairs` over a runner and stores every boot's samples as soon as the
boot ends, so a worker killed mid-campaign loses at most the boot it was in: on the next attempt
the schedule (drawn from the recorded seed) is replayed and boots already stored are read back
instead of run again. When it ends it is judged (bot.report.compose.campaign) and the judgement
stored in its `result` column. A campaign with a third kernel (`kernel_c`: a compare run's
alternative) runs triples instead of pairs (workers/lab/triples.py), stored the same way.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence

import sqlalchemy as sa

from bot.benchmarks.definition import Benchmark
from bot.db.models import LabCampaign, LabSample, utcnow
from bot.db.session import Database
from bot.report.compose.campaign import ended_json, family_level
from workers.lab.job import RunFailed
from workers.lab.machine import ReportsMachine
from workers.lab.pairs import PairsResult, RunOne, Sample, run_pairs
from workers.lab.triples import TriplesResult, run_triples

# Called after each boot with (boots done, most boots the campaign can take).
Progress = Callable[[int, int], None]


def new_campaign(benchmark: Benchmark, *, kernel_a: str, kernel_b: str, host: str, runner: str,
                 seed: int, k_min: int, k_max: int, warmup_pairs: int = 1,
                 run_id: int | None = None, kernel_c: str | None = None) -> LabCampaign:
    """A queued campaign row (added and committed by the caller); with `kernel_c`, of triples
    (`warmup_pairs`, `k_min` and `k_max` then count triples)."""
    return LabCampaign(run_id=run_id, benchmark=benchmark.name,
                       parameters=dict(benchmark.parameters), kernel_a=kernel_a,
                       kernel_b=kernel_b, kernel_c=kernel_c, host=host, runner=runner, seed=seed,
                       warmup_pairs=warmup_pairs, k_min=k_min, k_max=k_max, state="queued")


def run_campaign(db: Database, campaign_id: int, benchmark: Benchmark, run_one: RunOne,
                 progress: Progress | None = None) -> LabCampaign:
    """Run (or resume) the campaign's pairs, storing samples per boot; returns the final row.

    A boot that fails (RunFailed) fails the campaign with its message; samples stored so far
    are kept."""
    with db.session() as session:
        campaign = session.get(LabCampaign, campaign_id)
        if campaign is None:
            raise LookupError(f"no lab campaign {campaign_id}")
        stored = _stored_boots(campaign.samples)
        campaign.state, campaign.started_at, campaign.error = "running", utcnow(), None
        seed, warmups = campaign.seed, campaign.warmup_pairs
        q = family_level(campaign)  # the run's reply is one family: its benchmarks share it
        k_min, k_max = campaign.k_min, campaign.k_max
        triples = campaign.kernel_c is not None
    boots_max = (3 if triples else 2) * (warmups + k_max)
    done = [len(stored)]

    def stored_or_run(kernel: str, pair_index: int, position: int) -> Sequence[Sample]:
        key = (kernel, pair_index, position)
        if key in stored:
            return stored[key]
        samples = tuple(run_one(kernel, pair_index, position))
        warmup = pair_index < warmups
        with db.session() as session:
            session.add_all(_row(campaign_id, s, warmup) for s in samples)
            if isinstance(run_one, ReportsMachine) and run_one.machine.get(kernel):
                row = session.get(LabCampaign, campaign_id)
                assert row is not None
                row.machine = {**(row.machine or {}), kernel: run_one.machine[kernel]}
        done[0] += 1
        if progress is not None:
            progress(done[0], boots_max)
        return samples

    try:
        if triples:
            result: PairsResult | TriplesResult = run_triples(
                stored_or_run, benchmark.metrics, seed=seed, warmup_triples=warmups,
                k_min=k_min, k_max=k_max, q=q)
        else:
            result = run_pairs(stored_or_run, benchmark.metrics, seed=seed,
                               warmup_pairs=warmups, k_min=k_min, k_max=k_max, q=q)
    except RunFailed as exc:
        return _finish(db, campaign_id, benchmark, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - recorded on the row; the worker lives on
        return _finish(db, campaign_id, benchmark,
                       error=f"{exc.__class__.__name__}: {exc}\n{traceback.format_exc()}")
    return _finish(db, campaign_id, benchmark, orders=list(result.orders))


def _stored_boots(rows: Sequence[LabSample]) -> dict[tuple[str, int, int], tuple[Sample, ...]]:
    boots: dict[tuple[str, int, int], list[Sample]] = {}
    for r in rows:
        boots.setdefault((r.kernel, r.pair_index, r.position), []).append(Sample(
            metric=r.metric, value=r.value, unit=r.unit, kernel=r.kernel,
            pair_index=r.pair_index, position=r.position, host=r.host, boot_id=r.boot_id,
            accel=r.accel, time=r.time, warmup=r.warmup))
    return {key: tuple(samples) for key, samples in boots.items()}


def _row(campaign_id: int, s: Sample, warmup: bool) -> LabSample:
    return LabSample(campaign_id=campaign_id, metric=s.metric, value=s.value, unit=s.unit,
                     kernel=s.kernel, pair_index=s.pair_index, position=s.position, host=s.host,
                     boot_id=s.boot_id, accel=s.accel, time=s.time, warmup=warmup)


def _finish(db: Database, campaign_id: int, benchmark: Benchmark, *,
            error: str | None = None, orders: list[str] | None = None) -> LabCampaign:
    with db.session() as session:
        campaign = session.get(LabCampaign, campaign_id)
        assert campaign is not None
        campaign.finished_at = utcnow()
        campaign.error = error
        campaign.state = "failed" if error else "done"
        if orders is not None:
            campaign.orders = orders
        if error is None:
            campaign.result = ended_json(campaign, benchmark)
        session.flush()
        _ = campaign.samples
        session.expunge_all()
        return campaign


def campaign_ids(db: Database, run_id: int) -> list[int]:
    with db.session() as session:
        return list(session.scalars(sa.select(LabCampaign.id).where(LabCampaign.run_id == run_id)
                                    .order_by(LabCampaign.id)))
