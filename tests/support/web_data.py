"""Real data for the status-site tests: series ingested from real `git format-patch` threads,
then runs, steps, a lab campaign with raw samples and a reply written as the stages write them.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import sqlalchemy as sa

from bot.config import DatabaseSettings, IngestSettings, Settings, WebSettings
from bot.config.lab_hosts import LabHostSettings
from bot.db.models import LabCampaign, LabSample, OutboxReply, Run, RunStep, Series
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_series
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest

REGRESSED = "mm/vmscan: batch lru_gen counter updates"
CONFLICTED = "mm/swap: drop the per-cpu swap slot cache"
UNTESTED = "mm/workingset: tighten the refault distance"
KASONG = ("Kai Song", "kasong@example.com")
ADMIN_TOKEN = "test-admin-token-5ec2"
T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


@dataclass
class WebData:
    regressed: int  # series ids
    conflicted: int
    untested: int
    review_run: int  # v2 of `regressed`: done, with a campaign and a reply
    old_run: int  # v1 of `regressed`: failed to build
    conflict_run: int  # `conflicted`: its apply failed
    campaign: int
    bench_campaign: int  # `lorelab bench`, no run, running on vm1
    reply: int  # pending approval


def web_settings(db_url: str, token: str = ADMIN_TOKEN, broker_url: str = "") -> Settings:
    settings = Settings(database=DatabaseSettings(url=db_url), web=WebSettings(admin_token=token))
    settings.lab_hosts = [LabHostSettings(name="vm1", runner="qemu", cpus=2, memory_mb=512),
                          LabHostSettings(name="local", runner="local", cpus=2)]
    settings.celery.broker_url = broker_url
    return settings


def _store(db: Database, messages: list[bytes], list_name: str) -> None:
    ingest(db, [RawMail(m, f"web#{i}") for i, m in enumerate(messages)],
           settings=IngestSettings(parse_workers=0), list_name=list_name)


def _series_id(db: Database, title: str) -> int:
    with db.session() as session:
        return session.scalar(sa.select(Series.id).where(Series.title == title))


def _steps(run: Run, states: dict[str, str], **extra: dict[str, object]) -> None:
    for offset, (name, state) in enumerate(states.items()):
        started = T0 + dt.timedelta(minutes=2 * offset)
        step = RunStep(name=name, state=state, host="build1:4242" if state != "queued" else None,
                       attempts=0 if state == "queued" else 1, queued_at=T0,
                       started_at=started if state != "queued" else None,
                       finished_at=started + dt.timedelta(seconds=95)
                       if state in ("done", "failed") else None)
        for key, value in extra.get(name, {}).items():
            setattr(step, key, value)
        run.steps.append(step)


def _applied(base: str, patched: str) -> dict[str, object]:
    """An apply step's record of a series of two patches that applied."""
    return {"base": base * 40, "base_reason": "branch-head", "base_detail": "head of mm-unstable",
            "base_branch": "mm-unstable", "patched": patched * 40, "applied": 2,
            "failed_patch": None, "conflicts": []}


def _samples(campaign: LabCampaign, pairs: int, seed: int) -> list[str]:
    """hackbench.time about 6% slower patched, and a secondary counter; one warm-up pair."""
    rng = random.Random(seed)
    orders = []
    for pair in range(pairs + 1):
        order = "AB" if rng.random() < 0.5 else "BA"
        if pair:
            orders.append(order)
        for position, kernel in enumerate(order):
            base = 10.0 if kernel == "A" else 10.6
            when = T0 + dt.timedelta(minutes=10 + 3 * (2 * pair + position))
            for metric, value, unit in (
                ("hackbench.time", rng.gauss(base, 0.12) + (0.8 if pair == 0 else 0), "s"),
                ("vmstat.pgscan_kswapd", rng.gauss(52000, 900), "pages"),
            ):
                campaign.samples.append(LabSample(
                    metric=metric, value=value, unit=unit, kernel=kernel, pair_index=pair,
                    position=position, host="vm1", boot_id=f"boot-{pair}-{position}",
                    accel="kvm", time=when, warmup=pair == 0))
    return orders


RESULT = {
    "pairs": 8, "stopped_early": True,
    "metrics": [
        {"metric": "hackbench.time", "unit": "s", "secondary": False,
         "direction": "lower is better", "verdict": "regression",
         "words": "hackbench.time regressed by 6.02% [+4.91%, +7.13%]",
         "change_pct": 6.02, "ci_pct": [4.91, 7.13], "p": 0.00016,
         "base": {"n": 8, "median": 10.01, "robust_cv": 0.011},
         "patched": {"n": 8, "median": 10.61, "robust_cv": 0.012},
         "findings": [], "notes": ["stopped after 8 pairs: the interval left +-1%"]},
        {"metric": "vmstat.pgscan_kswapd", "unit": "pages", "secondary": True,
         "direction": "no better direction", "verdict": "no change",
         "words": "vmstat.pgscan_kswapd: no change", "change_pct": -0.4,
         "ci_pct": [-0.9, 0.2], "p": 0.41,
         "base": {"n": 8, "median": 52010.0, "robust_cv": 0.017},
         "patched": {"n": 8, "median": 51800.0, "robust_cv": 0.018},
         "findings": [], "notes": []},
    ],
}


def _reply_bytes(subject: str, msgid: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = "lorelab <lorelab@localhost>"
    msg["To"] = "Ada Reclaim <ada@example.org>"
    msg["Cc"] = "linux-mm@kvack.org"
    msg["Subject"] = subject
    msg["Message-ID"] = f"<{msgid}>"
    msg.set_content("Hi Ada,\n\nhackbench.time regressed by +6.02% [+4.91%, +7.13%] with this "
                    "series applied (8 interleaved pairs on vm1).\n\n-- \nlorelab\n")
    return bytes(msg)


# The .config the review run's base kernel was "built" with, as the build step leaves it.
BUILT_CONFIG = "CONFIG_64BIT=y\nCONFIG_LRU_GEN=y\n# CONFIG_LRU_GEN_ENABLED is not set\n"


def _artifacts(tree: Path) -> Path:
    artifacts = tree.parent / "artifacts-review"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "config").write_text(BUILT_CONFIG)
    return artifacts


def populate(db: Database, tree: Path) -> WebData:
    """Three series on two lists, by two authors, with runs in three different states."""
    v1 = SeriesSpec(title=REGRESSED, patches=2)
    _store(db, make_series(tree, v1), "linux-mm")
    _store(db, make_series(tree, SeriesSpec(title=REGRESSED, patches=2, version=2,
                                            same_changes_as=v1, revised=(2,))), "linux-mm")
    _store(db, make_series(tree, SeriesSpec(title=CONFLICTED, patches=3, author=KASONG)),
           "linux-kernel")
    _store(db, make_series(tree, SeriesSpec(title=UNTESTED, patches=1)),
           "linux-mm")
    regressed, conflicted = _series_id(db, REGRESSED), _series_id(db, CONFLICTED)
    untested = _series_id(db, UNTESTED)
    with db.session() as session:
        versions = session.get(Series, regressed).versions
        conflicted_version = session.get(Series, conflicted).versions[0]
        old = Run(series_version_id=versions[0].id, kind="build", tree="mm", state="failed",
                  trigger="auto", base_commit="a" * 40, base_reason="base-commit: in the cover",
                  patched_commit="b" * 40, created_at=T0)
        _steps(old, {"apply": "done", "build-base": "done", "build-patched": "failed"},
               apply={"result": _applied("a", "b")},
               **{"build-base": {"result": {"ok": True, "commit": "a" * 40}},
                  "build-patched": {"result": {"ok": False, "commit": "b" * 40},
                                    "error": "build failed: mm/vmscan.c:42: error: "
                                             "'nr_batched' undeclared",
                                    "log_excerpt": "mm/vmscan.c:42:9: error: 'nr_batched' "
                                                   "undeclared (first use in this function)"}})
        review = Run(series_version_id=versions[1].id, kind="review", tree="mm", state="done",
                     trigger="auto", base_commit="c" * 40, base_reason="head of mm-unstable",
                     patched_commit="d" * 40, benchmarks=["hackbench"], runner="vm1",
                     created_at=T0 + dt.timedelta(hours=1))
        _steps(review, {"apply": "done", "build-base": "done", "build-patched": "done",
                        "bench": "done", "report": "done"},
               apply={"log_excerpt": "Applying: mm/vmscan: first\nApplying: mm/vmscan: second",
                      "result": _applied("c", "d")},
               **{"build-base": {"log_excerpt": "  CC      mm/vmscan.o\n  LD      vmlinux",
                                 "result": {"ok": True, "commit": "c" * 40,
                                            "artifact_dir": str(_artifacts(tree))}},
                  "build-patched": {"result": {"ok": True, "commit": "d" * 40}},
                  "bench": {"result": {"host": "vm1", "runner": "qemu"}}})
        conflict = Run(series_version_id=conflicted_version.id, kind="build", tree="mm",
                       state="failed", trigger="cli", created_at=T0)
        _steps(conflict, {"apply": "failed", "build-base": "failed", "build-patched": "failed"},
               apply={"error": "patch 2 does not apply: conflicts in mm/swap.c",
                      "log_excerpt": "CONFLICT (content): Merge conflict in mm/swap.c",
                      "result": {"base": "e" * 40, "applied": 1,
                                 "failed_patch": "0002 mm/swap: second",
                                 "conflicts": [{"path": "mm/swap.c", "hunks": "<<<<<<<"}]}})
        session.add_all([old, review, conflict])
        session.flush()
        campaign = LabCampaign(run_id=review.id, benchmark="hackbench",
                               parameters={"groups": 4, "loops": 100}, kernel_a="c" * 12 + "@mm",
                               kernel_b="d" * 12 + "@mm", host="vm1", runner="qemu", seed=7,
                               warmup_pairs=1, k_min=5, k_max=30, state="done", result=RESULT,
                               created_at=T0, started_at=T0, finished_at=T0)
        campaign.orders = _samples(campaign, 8, seed=7)
        bench = LabCampaign(benchmark="readtwice", parameters={}, kernel_a="/boot/vmlinuz-a",
                            kernel_b="/boot/vmlinuz-b", host="vm1", runner="qemu", seed=3,
                            k_min=5, k_max=30, state="running", started_at=T0)
        reply = OutboxReply(
            message_id="lorelab-review-v2@localhost", kind="benchmark",
            series_version_id=versions[1].id, in_reply_to=versions[1].anchor_msgid,
            subject=f"Re: [PATCH v2 0/2] {REGRESSED}", author="ada@example.org",
            list_address="linux-mm@kvack.org", lists=["linux-mm@kvack.org"],
            recipients=["ada@example.org", "linux-mm@kvack.org"],
            raw=_reply_bytes(f"Re: [PATCH v2 0/2] {REGRESSED}", "lorelab-review-v2@localhost"),
            state="pending-approval", attempts=0)
        session.add_all([campaign, bench, reply])
        session.flush()
        return WebData(regressed=regressed, conflicted=conflicted,
                       untested=untested, review_run=review.id,
                       old_run=old.id, conflict_run=conflict.id, campaign=campaign.id,
                       bench_campaign=bench.id, reply=reply.id)
