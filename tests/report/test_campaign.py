"""A campaign is judged once, when it ends: the stored judgement is what the reply renders."""

from __future__ import annotations

import datetime as dt
import random

from bot.benchmarks.registry import benchmark
from bot.db.models import LabCampaign, LabSample
from bot.db.session import Database
from bot.report.compose.campaign import judge_campaign, result_json, stored_judgement

BENCH = benchmark("reclaim-sim")
METRIC = BENCH.main_metrics[0].name


def store_campaign(db: Database, pairs: int = 8) -> int:
    rng = random.Random(5)
    with db.session() as session:
        campaign = LabCampaign(benchmark=BENCH.name, parameters=dict(BENCH.parameters),
                               kernel_a="a", kernel_b="b", host="local", runner="local", seed=1,
                               warmup_pairs=0, k_min=5, k_max=30, state="done")
        session.add(campaign)
        session.flush()
        for pair in range(pairs):
            for position, kernel in enumerate("AB" if pair % 2 else "BA"):
                value = rng.gauss(1000.0 if kernel == "A" else 1100.0, 10.0)
                session.add(LabSample(campaign_id=campaign.id, metric=METRIC, value=value,
                                      unit="ops/s", kernel=kernel, pair_index=pair,
                                      position=position, host="local", boot_id=f"{pair}{kernel}",
                                      accel="none", time=dt.datetime(2026, 12, 1, tzinfo=dt.UTC)))
        session.flush()
        campaign.result = result_json(campaign, judge_campaign(campaign, BENCH))
        return campaign.id


def test_the_stored_judgement_is_the_judgement_made_when_the_campaign_ended(db: Database):
    campaign_id = store_campaign(db)
    with db.session() as session:
        campaign = session.get(LabCampaign, campaign_id)
        assert campaign is not None
        made = judge_campaign(campaign, BENCH)
        stored = stored_judgement(campaign)
        assert stored == made
        assert stored.metrics[0].comparison.verdict.value == "improvement"
        # Samples edited afterwards change nothing the readers show: it is not judged again.
        for sample in campaign.samples:
            sample.value = 1000.0
    with db.session() as session:
        campaign = session.get(LabCampaign, campaign_id)
        assert stored_judgement(campaign) == made
        assert judge_campaign(campaign, BENCH) != made


def test_a_campaign_stored_before_judgements_were_has_none(db: Database):
    campaign_id = store_campaign(db)
    with db.session() as session:
        campaign = session.get(LabCampaign, campaign_id)
        assert campaign is not None
        result = dict(campaign.result)
        result["metrics"] = [{k: v for k, v in m.items() if k != "comparison"}
                             for m in result["metrics"]]
        campaign.result = result
    with db.session() as session:
        assert stored_judgement(session.get(LabCampaign, campaign_id)) is None
