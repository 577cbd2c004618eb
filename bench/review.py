"""The main job on a real kernel, timed: scripts/kernel-review's three reviews, stage by stage.

Runs scripts/kernel-review (or reads the review.json an earlier run left with `--from`) and
prints, per series, the time of each stage (apply, base build, patched build, bench, report),
the boots and the median time per boot, and the whole review: from `lorelab review` reading the
thread (the last patch ingested) to the reply in the outbox. The second and third series reuse
the base kernel the first one built: theirs is the warm post-to-reply time.

Usage: python bench/review.py [WORK_DIR] [--from REVIEW_JSON] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import describe, machine  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STAGES = ("apply", "build-base", "build-patched", "bench", "report")


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:5.1f}"


def print_report(review: dict, load: tuple[float, float] | None) -> None:
    print(f"machine: {describe(machine())}")
    if load:
        print(f"load average (1 min): {load[0]:.1f} before, {load[1]:.1f} after")
    print(f"{'series':10s} {'outcome':13s} " + " ".join(f"{s:>13s}" for s in STAGES)
          + f" {'boots':>6s} {'s/boot':>7s} {'total':>7s}   (minutes)")
    for name, series in review["series"].items():
        steps = series["steps"]
        print(f"{name:10s} {series['outcome']:13s} "
              + " ".join(f"{_minutes(steps.get(s)):>13s}" for s in STAGES)
              + f" {series['boots']:6d} {series['seconds_per_boot'] or 0:7.1f}"
              f" {_minutes(series['wall_seconds']):>7s}")
    for check, ok in review["checks"].items():
        print(f"{'ok  ' if ok else 'FAIL'} {check}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", nargs="?", default="/var/tmp/lorelab-kernel-review")
    parser.add_argument("--from", dest="source", type=Path, default=None,
                        help="a review.json scripts/kernel-review wrote, instead of running it")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load = None
    if args.source is None:
        before = os.getloadavg()[0]
        subprocess.run(["bash", str(REPO / "scripts" / "kernel-review"), args.work],
                       stdout=subprocess.DEVNULL, check=False)
        load = (before, os.getloadavg()[0])
        args.source = Path(args.work) / "review.json"
    review = json.loads(args.source.read_text())
    if args.json:
        print(json.dumps({**review, "machine": machine(), "load_average": load}, indent=2))
    else:
        print_report(review, load)


if __name__ == "__main__":
    main()
