"""The backfill benchmark: importing a whole public-inbox archive through the git path.

Run as `.venv/bin/python bench/backfill.py [--messages 20000] [--keep DIR] [--json]`.

1. Builds a v2 public-inbox archive (public-inbox-init, then a bulk mbox import, no search
   index: the git path does not need one) from the LKML-like corpus of bench/ingest.py.
2. The I/O limit: `git log --raw | git cat-file --batch > /dev/null` over every epoch, i.e.
   reading every message blob once with no parsing and no storing (median of 3 passes).
3. End to end: `lorelab ingest pi-git ARCHIVE --json` in a subprocess into a fresh SQLite
   database (wall time, interpreter start included).

Target: end-to-end rate / I/O-limit rate >= 0.5.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ingest import Corpus, write_mbox  # noqa: E402
from bench.machine import describe, machine  # noqa: E402
from tests.support.pi_server import LAUNCH, PublicInbox, missing_reason  # noqa: E402

RATIO_TARGET = 0.5
PIPELINE = (
    "git --git-dir {0} log --raw --no-renames --no-abbrev --format= "
    "| awk '$6 == \"m\" {{ print $4 }}' | git --git-dir {0} cat-file --batch > /dev/null"
)


def io_limit(archive: Path, repeat: int = 3) -> float:
    """Seconds to read every message blob of every epoch once (median of `repeat`)."""
    epochs = sorted((archive / "git").glob("*.git"))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for epoch in epochs:
            subprocess.run(PIPELINE.format(epoch), shell=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_backfill(archive: Path, workdir: Path) -> tuple[float, dict]:
    db = workdir / "backfill.db"
    for stale in workdir.glob("backfill.db*"):
        stale.unlink()
    env = dict(os.environ, LORELAB_DATABASE_URL=f"sqlite:///{db}", LORELAB_DATA_DIR=str(workdir),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCH, "ingest", "pi-git", str(archive), "--list", "linux-mm",
         "--json"], capture_output=True, env=env,
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"lorelab ingest pi-git failed:\n{proc.stderr.decode()[-3000:]}")
    return seconds, json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the archive and the database in DIR")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if reason := missing_reason():
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="lorelab-backfill-"))
    workdir.mkdir(parents=True, exist_ok=True)
    mbox = workdir / "corpus.mbox"
    started = time.perf_counter()
    write_mbox(Corpus(args.seed).messages(args.messages), mbox)
    archive_started = time.perf_counter()
    pi = PublicInbox(workdir / "pi", index_level="basic")
    pi.import_mbox(mbox, index=False)
    built = time.perf_counter()
    blobs = int(subprocess.run(
        f"for e in {pi.inbox}/git/*.git; do git --git-dir $e rev-list --count HEAD; done",
        shell=True, capture_output=True, text=True, check=True).stdout.split()[0])
    limit = io_limit(pi.inbox)
    seconds, summary = run_backfill(pi.inbox, workdir)
    stored = summary["stored"] + summary["duplicates"] + summary["quarantined"]
    report = {
        "messages_generated": args.messages,
        "archive_commits": blobs,
        "archive_bytes": sum(f.stat().st_size for f in (pi.inbox / "git").rglob("*")
                             if f.is_file()),
        "generate_seconds": round(archive_started - started, 1),
        "archive_build_seconds": round(built - archive_started, 1),
        "io_limit": {"what": "git log --raw | git cat-file --batch > /dev/null, median of 3",
                     "seconds": round(limit, 3), "messages_per_second": round(blobs / limit, 1)},
        "end_to_end": {"what": "lorelab ingest pi-git ARCHIVE --json (fresh SQLite, wall time)",
                       "seconds": round(seconds, 2),
                       "messages_per_second": round(stored / seconds, 1), "summary": summary},
        "machine": machine(),
    }
    report["ratio"] = round(report["end_to_end"]["messages_per_second"]
                            / report["io_limit"]["messages_per_second"], 4)
    report["target_met"] = report["ratio"] >= RATIO_TARGET
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        e2e, io = report["end_to_end"], report["io_limit"]
        print(f"archive    {blobs} commits, {report['archive_bytes'] / 1e6:.1f} MB on disk, "
              f"built in {report['archive_build_seconds']} s")
        print(f"I/O limit  {io['messages_per_second']:>9.1f} msg/s  ({io['seconds']} s; "
              f"{io['what']})")
        print(f"end to end {e2e['messages_per_second']:>9.1f} msg/s  ({e2e['seconds']} s; "
              f"{e2e['what']})")
        print(f"ratio      {report['ratio']:.3f}  (target >= {RATIO_TARGET}: "
              f"{'met' if report['target_met'] else 'NOT met'})")
        print(f"summary    {json.dumps(summary)}")
        print(f"machine    {describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
