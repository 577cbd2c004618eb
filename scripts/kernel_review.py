"""The body of scripts/kernel-review: three series on a real kernel tree, reviewed end to end.

Run by scripts/kernel-review (which installs what it needs and makes the tree); reads nothing
but WORK_DIR/linux and lorelab's own files, writes WORK_DIR/review.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa

from bot.db.models import LabCampaign, LabSample, Run
from bot.db.session import Database
from bot.demo.threads import Change, SeriesSpec, as_mbox, make_series

BENCH = os.environ.get("LORELAB_REVIEW_BENCH", "readtwice,anon-swap,readtwice-memcg")
# Under TCG a boot and its benchmark take 3-15 s here: the rule looks after pairs_min pairs and
# stops at pairs_max. The signed-rank interval at the sequential level is unbounded below about
# 6 pairs, so fewer would leave every metric "could not tell".
PAIRS_MIN = int(os.environ.get("LORELAB_REVIEW_PAIRS_MIN", "6"))
PAIRS_MAX = int(os.environ.get("LORELAB_REVIEW_PAIRS_MAX", "12"))

TUNING = SeriesSpec(
    title="mm/vmscan: two small reclaim tunings",
    patches=2,
    change_id="20261130-vmscan-tunings",
    changes=(
        Change("mm/vmscan.c", "#define SHRINK_BATCH 128", ("#define SHRINK_BATCH 256",),
               "mm/vmscan: scan slab caches in batches of 256",
               "do_shrink_slab() calls into a shrinker once per SHRINK_BATCH objects; with\n"
               "today's cache sizes 128 makes for many short calls. Double it."),
        Change("mm/vmscan.c", "#define BLOOM_FILTER_SHIFT\t15", ("#define BLOOM_FILTER_SHIFT\t16",),
               "mm/vmscan: size the lru_gen Bloom filters for larger page tables",
               "With 2^15 bits the filters saturate on large mm's and the page table walk\n"
               "falls back to scanning every PMD. Use 2^16 bits."),
    ),
)
# A known, large effect on reclaim: 200 us of busy waiting per folio shrink_folio_list() takes.
POSITIVE = SeriesSpec(
    title="mm/vmscan: pace folio reclaim",
    patches=1,
    cover=False,
    change_id="20261130-vmscan-pace",
    changes=(
        Change("mm/vmscan.c", "\t\tunsigned int nr_pages;",
               ("\t\tunsigned int nr_pages;\n\n\t\tudelay(200);",),
               "mm/vmscan: pace folio reclaim",
               "Wait 200us before each folio shrink_folio_list() looks at (a positive\n"
               "control for lorelab: reclaim must get much slower)."),
    ),
)
# Rebuilds mm/vmscan.o, changes no code.
NULL = SeriesSpec(
    title="mm/vmscan: reword the shrink_folio_list comment",
    patches=1,
    cover=False,
    change_id="20261130-vmscan-comment",
    changes=(
        Change("mm/vmscan.c", " * shrink_folio_list() returns the number of reclaimed pages",
               (" * shrink_folio_list() returns how many pages it reclaimed",),
               "mm/vmscan: reword the shrink_folio_list comment",
               "A comment only (a null control for lorelab: nothing may change)."),
    ),
)
SERIES = {"tuning": TUNING, "positive": POSITIVE, "null": NULL}


def write_config(work: Path) -> Path:
    """WORK_DIR/config.toml, with a new database: the runs are new; the tree, builds and
    ccache under WORK_DIR stay warm (scripts/kernel-bisect writes the same)."""
    tree = work / "linux"
    db_path = work / "lorelab.db"
    db_path.unlink(missing_ok=True)
    config = work / "config.toml"
    config.write_text(
        f'[database]\nurl = "sqlite:///{db_path}"\n\n'
        f'[[trees]]\nname = "linux-6.1"\npath = "{tree}"\nbranches = ["master"]\n\n'
        f'[build]\nwork_dir = "{work / "build"}"\nbase_config = "tinyconfig"\n'
        'fragments = ["reclaim-vm"]\nmemory_mb = 8192\n\n'
        '[[lab_hosts]]\nname = "tcg"\nrunner = "qemu"\naccel = "auto"\ncpus = 2\n'
        f'memory_mb = 256\npairs_min = {PAIRS_MIN}\npairs_max = {PAIRS_MAX}\n'
        'warmup_pairs = 1\ntimeout = 600\n')
    return config


def lorelab_env(config: Path) -> dict[str, str]:
    """The environment `lorelab` runs in: this config, no other LORELAB_ setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORELAB_")}
    env["LORELAB_CONFIG"] = str(config)
    return env


LORELAB = [sys.executable, "-c", "from bot.cli import main; main()"]


def main(work: Path) -> int:
    tree = work / "linux"
    db_path = work / "lorelab.db"
    env, lorelab = lorelab_env(write_config(work)), LORELAB
    found: dict[str, dict] = {}
    for name, spec in SERIES.items():
        mbox = work / f"{name}.mbox"
        mbox.write_bytes(as_mbox(make_series(tree, spec)))
        print(f"kernel-review: {name}: {spec.title}", file=sys.stderr, flush=True)
        started = time.monotonic()
        proc = subprocess.run([*lorelab, "review", str(mbox), "--tree", str(tree), "--bench",
                               BENCH, "--json"], env=env, stdout=subprocess.PIPE)
        result = json.loads(proc.stdout)
        result["wall_seconds"] = round(time.monotonic() - started, 1)
        result["exit_status"] = proc.returncode
        found[name] = result
        print(result.get("reply") or f"(no reply: {result.get('why')})", flush=True)
    summary = {"series": {name: review_summary(db_path, r) for name, r in found.items()},
               "checks": _checks(db_path, found)}
    (work / "review.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0 if all(summary["checks"].values()) else 1


def review_summary(db_path: Path, result: dict) -> dict:
    """What the README and bench/review.py report: outcome, stage times, boots."""
    db = Database(f"sqlite:///{db_path}")
    with db.session() as session:
        run = session.get(Run, result["run"])
        cached = [s.name for s in run.steps if (s.result or {}).get("cached")]
        samples = session.execute(
            sa.select(LabSample.campaign_id, LabSample.kernel, LabSample.pair_index,
                      LabSample.time)
            .join(LabCampaign, LabCampaign.id == LabSample.campaign_id)
            .where(LabCampaign.run_id == result["run"])).all()
    boots = sorted({(c, k, p): t for c, k, p, t in samples}.values())
    gaps = [(b - a).total_seconds() for a, b in zip(boots, boots[1:], strict=False)]
    return {
        "run": result["run"], "outcome": result["verdict"], "exit_status": result["exit_status"],
        "wall_seconds": result["wall_seconds"],
        "steps": {s["name"]: s["seconds"] for s in result["steps"]},
        "boots": len(boots),
        "cached_builds": cached,  # answered by the artifact cache, nothing built
        # Start to start of consecutive boots: one boot, its benchmark and the next boot's set-up.
        "seconds_per_boot": round(sorted(gaps)[len(gaps) // 2], 1) if gaps else None,
        "headline": result.get("headline", []),
        "has_reply": bool(result.get("reply")),
    }


def _checks(db_path: Path, found: dict[str, dict]) -> dict[str, bool]:
    db = Database(f"sqlite:///{db_path}")
    verdicts: dict[str, set[str]] = {}
    with db.session() as session:
        for name, result in found.items():
            run = session.get(Run, result["run"])
            campaigns = session.scalars(sa.select(LabCampaign).where(
                LabCampaign.run_id == run.id)).all()
            verdicts[name] = {m["verdict"] for c in campaigns
                              for m in (c.result or {}).get("metrics", [])}
        lru = {name: {(c.machine or {}).get(k, {}).get("lru_gen", "")
                      for c in session.scalars(sa.select(LabCampaign).where(
                          LabCampaign.run_id == found[name]["run"]))
                      for k in ("A", "B")} for name in found}
        tuning = session.get(Run, found["tuning"]["run"])
        build = next(s for s in tuning.steps if s.name == "build-base")
        config = Path(build.result["artifact_dir"]) / "config"
    tuning_reply = found["tuning"].get("reply") or ""
    return {
        "every reply was produced": all(r.get("reply") for r in found.values()),
        "the positive control is a regression": found["positive"]["verdict"] == "regression",
        "the null control reports no change anywhere": not verdicts["null"] & {
            "regression", "improvement"},
        "the lab kernel builds MGLRU in, off by default": "CONFIG_LRU_GEN=y" in
        config.read_text() and "# CONFIG_LRU_GEN_ENABLED is not set" in config.read_text(),
        "the lru_gen series ran under MGLRU": lru["tuning"] == {"0x0007"},
        "its reply says so": "LRU: MGLRU" in tuning_reply,
        "the control series ran the kernel's default LRU": lru["null"] == {"0x0000"},
    }


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
