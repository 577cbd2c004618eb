"""The body of scripts/kernel-bisect: the bisect follow-up on a real kernel tree.

A three-patch mm/vmscan.c series on linux-source-6.1 whose patch 2 is the known-slow change
(scripts/kernel_review.py's positive control: 200 us of busy waiting per folio
shrink_folio_list() takes) between two comment-only patches is reviewed with `lorelab review`
(a regression), then the bisect follow-up of that review runs here: apply, the base and every
prefix built from the build cache, campaigns of the base against prefixes, the reply. Prints
both replies and a JSON summary (also WORK_DIR/bisect.json: boots, wall time per stage, the
patch found); exits 1 unless the bisection found 2/3.

Run by scripts/kernel-bisect (which installs what it needs and makes the tree, as
scripts/kernel-review does); the same WORK_DIR and config as scripts/kernel-review, so the
base build and ccache are shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa
from kernel_review import LORELAB, NULL, POSITIVE, lorelab_env, review_summary, write_config

from bot.config import load_settings
from bot.db.models import LabCampaign, LabSample, OutboxReply, Run, SeriesVersion
from bot.db.session import Database
from bot.demo.threads import Change, SeriesSpec, as_mbox, make_series
from bot.runs.lifecycle import create_run
from bot.runs.outcome import outcome_of
from bot.runs.records import BisectRecord, PrefixesRecord
from bot.runs.taskqueue import send_run

# One benchmark keeps the bisection short (4-13 s a boot under TCG). A step must show "no
# change" for the comment-only prefix 1/3 within its boots: readtwice's robust CV across boots
# was 2-4% on a quiet lab but 47-58% at a load of 3-5 (README), so its smallest change of
# interest is 50% here (the slow patch costs readtwice 84-92%), and a step may take 32 boots
# (15 measured pairs after the warm-up pair).
BENCH = os.environ.get("LORELAB_BISECT_BENCH", "readtwice:delta=0.5")
BOOTS = int(os.environ.get("LORELAB_BISECT_BOOTS", "32"))  # [follow_ups] bisect_boots

SERIES = SeriesSpec(
    title="mm/vmscan: pace folio reclaim, and two comment fixes",
    patches=3,
    change_id="20261201-vmscan-pace-bisect",
    changes=(
        NULL.changes[0],
        POSITIVE.changes[0],
        Change("mm/vmscan.c",
               " * lruvec_lru_size -  Returns the number of pages on the given LRU list.",
               (" * lruvec_lru_size - Returns the number of pages on the given LRU list.",),
               "mm/vmscan: drop a double space in the lruvec_lru_size comment",
               "A comment only."),
    ),
)
SLOW_PATCH = 2


def main(work: Path) -> int:
    tree = work / "linux"
    config = write_config(work)
    with config.open("a") as handle:  # this script makes the bisect run itself, below
        handle.write("\n[follow_ups]\nbisect = false\nalign = false\ncompare = false\n"
                     f"experiment = false\nbisect_boots = {BOOTS}\n")
    env = lorelab_env(config)
    db_path = work / "lorelab.db"
    mbox = work / "bisect.mbox"
    mbox.write_bytes(as_mbox(make_series(tree, SERIES)))
    print(f"kernel-bisect: review of {SERIES.title}", file=sys.stderr, flush=True)
    started = time.monotonic()
    proc = subprocess.run([*LORELAB, "review", str(mbox), "--tree", str(tree), "--bench", BENCH,
                           "--json"], env=env, stdout=subprocess.PIPE)
    review = json.loads(proc.stdout)
    review["wall_seconds"] = round(time.monotonic() - started, 1)
    review["exit_status"] = proc.returncode
    print(review.get("reply") or f"(no reply: {review.get('why')})", flush=True)
    summary: dict = {"review": review_summary(db_path, review), "bisect": None}
    if review["verdict"] == "regression":
        print("kernel-bisect: the bisect follow-up", file=sys.stderr, flush=True)
        summary["bisect"] = bisect(load_settings(config, env=env), review["run"])
        print(summary["bisect"].pop("reply") or "(no bisect reply)", flush=True)
    found = (summary["bisect"] or {}).get("found")
    summary["checks"] = {
        "the review found the regression": review["verdict"] == "regression",
        f"the bisection found {SLOW_PATCH}/3": found == f"{SLOW_PATCH}/3",
        "the bisect reply names it": bool(summary["bisect"] and summary["bisect"]["names_it"]),
    }
    (work / "bisect.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0 if all(summary["checks"].values()) else 1


def bisect(settings, review_id: int) -> dict:  # noqa: ANN001 - bot.config.Settings
    """Make the bisect follow-up of the review, run it here (Celery eager), and sum it up."""
    db = Database(settings.database.resolved_url())
    with db.session() as session:
        review = session.get(Run, review_id)
        version = session.get(SeriesVersion, review.series_version_id)
        run = create_run(session, version, kind="bisect", tree=review.tree,
                         base=review.base_commit, benchmarks=list(review.benchmarks),
                         runner=review.runner, trigger="cli", parent=review)
        run_id = run.id
    started = time.monotonic()
    send_run(db, settings, run_id)
    wall = round(time.monotonic() - started, 1)
    with db.session() as session:
        run = session.get(Run, run_id)
        steps = {s.name: s for s in run.steps}
        record = BisectRecord.from_step(steps["bisect"])
        prefixes = PrefixesRecord.from_step(steps["build-prefixes"])
        boots = session.execute(
            sa.select(LabSample.campaign_id, LabSample.kernel, LabSample.pair_index)
            .join(LabCampaign, LabCampaign.id == LabSample.campaign_id)
            .where(LabCampaign.run_id == run_id).distinct()).all()
        reply = session.scalars(sa.select(OutboxReply).where(
            OutboxReply.message_id.like(f"bisect.%.r{run_id}.%"))).first()
        text = bytes(reply.raw).decode() if reply is not None else ""
        return {
            "run": run_id, "outcome": outcome_of(session, run).label,
            "wall_seconds": wall,
            "steps": {s.name: (s.finished_at - s.started_at).total_seconds()
                      if s.finished_at and s.started_at else None for s in run.steps},
            "errors": {s.name: s.error for s in run.steps if s.error},
            "prefix_builds": [{"prefix": p.prefix, "ok": p.ok, "cached": p.cached,
                               "seconds": p.seconds} for p in prefixes.prefixes],
            "ended": record.ended,
            "found": f"{record.found}/{record.patches}" if record.found else None,
            "boots": len(boots),
            "boots_per_step": record.boots_per_step, "pairs_max": record.pairs_max,
            "probes": [{"prefix": f"{p.prefix}/{record.patches}", "carries": p.carries,
                        "boots": p.boots,
                        "metrics": [{"metric": m.metric, "verdict": m.verdict,
                                     "change_pct": m.change_pct,
                                     "ci_pct": [m.ci_low_pct, m.ci_high_pct]}
                                    for m in p.metrics]} for p in record.probes],
            "names_it": f"The change comes with {SLOW_PATCH}/3" in " ".join(text.split()),
            "reply": text,
        }


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
