"""A review run finished as the workers finish one: each step's row and record, and a lab
campaign judged and stored, for tests of what follows a review (follow-ups, commands, pages)
without building and booting kernels. The stand-in tree's tests (tests/runs) make real ones.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from bot.db.models import LabCampaign, Run, SeriesVersion
from bot.db.session import Database
from bot.runs.lifecycle import create_run
from bot.runs.records import ApplyRecord, BenchCampaign, BenchRecord, BuildRecord, ReportRecord

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
# A reviewer's "how about this instead": an inline diff, as a reply carries it.
DIFF = ("diff --git a/mm/vmscan.c b/mm/vmscan.c\n"
        "--- a/mm/vmscan.c\n"
        "+++ b/mm/vmscan.c\n"
        "@@ -10,7 +10,7 @@ static unsigned long shrink_list(struct lruvec *lruvec)\n"
        " {\n"
        " \tunsigned long nr = 0;\n"
        " \n"
        "-\tnr = reclaim_batch(lruvec, 32);\n"
        "+\tnr = reclaim_batch(lruvec, 64);\n"
        " \treturn nr;\n"
        " }\n")


def _result(verdict: str, change_pct: float) -> dict[str, object]:
    """A campaign's stored judgement with one main metric (bot.report.compose.campaign)."""
    return {"pairs": 8, "stopped_early": True, "parameters": [], "metrics": [
        {"metric": "hackbench.time", "unit": "s", "secondary": False,
         "direction": "lower is better", "verdict": verdict,
         "words": f"hackbench.time: {verdict}", "change_pct": change_pct,
         "ci_pct": [change_pct - 1.1, change_pct + 1.1], "p": 0.001,
         "base": {"n": 8, "median": 10.0, "robust_cv": 0.01},
         "patched": {"n": 8, "median": 10.0 * (1 + change_pct / 100), "robust_cv": 0.01},
         "findings": [], "notes": []}]}


def finish_review(db: Database, version_id: int, *, verdict: str = "regression",
                  change_pct: float = 6.0, benchmarks: tuple[str, ...] = ("hackbench",),
                  tree: str = "mm") -> int:
    """A done review run of the version whose hackbench campaign found `verdict`; its id."""
    with db.session() as session:
        version = session.get(SeriesVersion, version_id)
        assert version is not None
        run = create_run(session, version, kind="review", tree=tree, benchmarks=list(benchmarks),
                         trigger="auto")
        run.state, run.base_commit, run.patched_commit = "done", "c" * 40, "d" * 40
        campaign = LabCampaign(run_id=run.id, benchmark="hackbench", parameters={},
                               kernel_a="c" * 12, kernel_b="d" * 12, host="vm1", runner="qemu",
                               seed=7, warmup_pairs=1, k_min=5, k_max=30, state="done",
                               result=_result(verdict, change_pct), created_at=T0,
                               started_at=T0, finished_at=T0)
        session.add(campaign)
        session.flush()
        records = {
            "apply": ApplyRecord(base="c" * 40, patched="d" * 40, applied=version.expected),
            "build-base": BuildRecord(ok=True, commit="c" * 40),
            "build-patched": BuildRecord(ok=True, commit="d" * 40),
            "bench": BenchRecord(host="vm1", runner="qemu", campaigns=(
                BenchCampaign(id=campaign.id, benchmark="hackbench", state="done"),)),
            "report": ReportRecord(why="benchmarked"),
        }
        for step in run.steps:
            step.state, step.result = "done", records[step.name].as_result()
            step.started_at, step.finished_at = T0, T0 + dt.timedelta(minutes=1)
        return run.id


def children(db: Database, run_id: int) -> list[Run]:
    """The follow-ups of a run, oldest first."""
    with db.session() as session:
        return list(session.scalars(sa.select(Run).where(Run.parent_run_id == run_id)
                                    .order_by(Run.id)))
