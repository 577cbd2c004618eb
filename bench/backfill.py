"""The backfill benchmark: importing a whole public-inbox archive through the git path.

Run as `.venv/bin/python bench/backfill.py [--messages 20000] [--epoch-mb 40] [--rounds 3]
[--keep DIR | --archive DIR] [--json]`.

1. Builds a v2 public-inbox archive of several epochs (public-inbox's own importer, a new epoch
   every `--epoch-mb` of mail; no search index: the git path does not need one) from the
   LKML-like corpus of bench/ingest.py.
2. The I/O limit: every message blob (`m`) of every epoch read once through `git log --raw |
   git cat-file --batch > /dev/null`, no Python at all. No Python parser reaches it; it is
   reported as the ceiling (of a v2 archive: a v1 inbox's files are not counted).
3. The bare parse, the baseline: the same blobs read in Python from one `git cat-file --batch`
   per epoch and parsed with `email.message_from_bytes(policy=compat32)` (wall and CPU).
4. End to end: `lorelab ingest pi-git ARCHIVE --json` in a subprocess into a fresh SQLite
   database (wall time, and CPU of it and its parse workers, from wait4), and its peak RSS:
   that of the largest of its processes, each its own (`bench/measured.py`). Steps 3 and 4 are
   interleaved `--rounds` times; the median of each round's ratio counts.

Targets: end to end >= 0.6 of the bare parse (wall on a quiet machine; CPU); peak memory below
500 MB.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "bench")]  # bench/ingest.py imports `machine` so

from bench.archive import archive_mail, epochs_of  # noqa: E402
from bench.ingest import Corpus, write_mbox  # noqa: E402
from bench.machine import compile_lorelab, describe, machine  # noqa: E402
from bench.measured import Measured, run_measured  # noqa: E402
from tests.support.pi_server import PublicInbox, missing_reason  # noqa: E402

RATIO_TARGET = 0.6
MEMORY_TARGET_MB = 500
PIPELINE = (
    "git --git-dir {0} log --raw --no-renames --no-abbrev --format= "
    "| awk '$6 == \"m\" {{ print $4 }}' | git --git-dir {0} cat-file --batch > /dev/null"
)


def io_limit(archive: Path, repeat: int = 3) -> float:
    """Seconds to read every message blob of every epoch once (median of `repeat`)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for epoch in epochs_of(archive):
            subprocess.run(PIPELINE.format(epoch), shell=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bare_parse(archive: Path) -> tuple[int, float, float]:
    """Messages, wall and CPU seconds: each blob read from `git cat-file --batch` and parsed
    with the stdlib's compat32 policy (CPU includes the git processes, as lorelab's does)."""
    start, cpu = time.perf_counter(), time.process_time()
    children = os.times()
    count = 0
    for data in archive_mail(archive):
        email.message_from_bytes(data, policy=email.policy.compat32)
        count += 1
    after = os.times()
    git_cpu = (after.children_user + after.children_system
               - children.children_user - children.children_system)
    return count, time.perf_counter() - start, time.process_time() - cpu + git_cpu


def run_backfill(archive: Path, workdir: Path) -> tuple[Measured, dict]:
    """`lorelab ingest pi-git` into a fresh database: what it cost, and its JSON summary."""
    db = workdir / "backfill.db"
    for stale in workdir.glob("backfill.db*"):
        stale.unlink()
    env = dict(os.environ, LORELAB_DATABASE_URL=f"sqlite:///{db}", LORELAB_DATA_DIR=str(workdir),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    out, err = workdir / "backfill.stdout", workdir / "backfill.stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        run = run_measured([sys.executable, "-c", "from bot.cli import main; main()", "ingest",
                            "pi-git", str(archive), "--list", "linux-mm", "--json"],
                           env=env, stdout=stdout, stderr=stderr)
    if run.returncode != 0:
        raise SystemExit(f"lorelab ingest pi-git failed:\n{err.read_text()[-3000:]}")
    return run, json.loads(out.read_bytes())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epoch-mb", type=float, default=40.0,
                        help="start a new epoch after this much mail (public-inbox: 1024)")
    parser.add_argument("--keep", type=Path, help="keep the archive and the database in DIR")
    parser.add_argument("--archive", type=Path,
                        help="walk this public-inbox archive instead of building one")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved (bare parse, backfill) pairs; the median ratio counts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    compile_lorelab()
    if reason := missing_reason():
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="lorelab-backfill-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if args.archive is None:
        mbox = workdir / "corpus.mbox"
        write_mbox(Corpus(args.seed).messages(args.messages), mbox)
        archive_started = time.perf_counter()
        pi = PublicInbox(workdir / "pi", index_level="basic")
        pi.import_mbox(mbox, index=False, epoch_bytes=int(args.epoch_mb * 2**20))
        archive = pi.inbox
    else:
        archive_started, archive = started, args.archive
    built = time.perf_counter()
    limit = io_limit(archive)
    # Interleaved, as bench/ingest.py does: the median of back-to-back ratios is steadier than
    # a ratio of medians on a machine whose CPU time for the same work moves by a fifth.
    rounds, peak_rss_mb = [], 0.0
    for _ in range(max(1, args.rounds)):
        blobs, bare_wall, bare_cpu = bare_parse(archive)
        run, summary = run_backfill(archive, workdir)
        rounds.append((bare_wall, bare_cpu, run.seconds, run.cpu_seconds))
        peak_rss_mb = max(peak_rss_mb, run.peak_rss_mb)
    stored = summary["read"] + summary["removals"] + summary["skipped"]
    bare_wall, bare_cpu, seconds, cpu = (statistics.median(r[i] for r in rounds)
                                         for i in range(4))
    report = {
        "messages_generated": args.messages,
        "epochs": len(epochs_of(archive)),
        "archive_commits": blobs,
        "archive_bytes": sum(f.stat().st_size for epoch in epochs_of(archive)
                             for f in epoch.rglob("*") if f.is_file()),
        "generate_seconds": round(archive_started - started, 1),
        "archive_build_seconds": round(built - archive_started, 1),
        "io_limit": {"what": "git log --raw | git cat-file --batch > /dev/null, median of 3",
                     "seconds": round(limit, 3), "messages_per_second": round(blobs / limit, 1)},
        "bare_parse": {"what": "git cat-file --batch read in Python + compat32 parse, median of "
                               f"{len(rounds)}",
                       "seconds": round(bare_wall, 3), "cpu_seconds": round(bare_cpu, 3),
                       "messages_per_second": round(blobs / bare_wall, 1)},
        "end_to_end": {"what": "lorelab ingest pi-git ARCHIVE --json (fresh SQLite), median "
                               f"of {len(rounds)}",
                       "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
                       "messages_per_second": round(stored / seconds, 1),
                       "peak_rss_mb": round(peak_rss_mb, 1), "summary": summary},
        "machine": machine(),
        "load": os.getloadavg(),
    }
    report["rounds"] = [{"wall_ratio": round(bw / s * stored / blobs, 3),
                         "cpu_ratio": round(bc / c * stored / blobs, 3)}
                        for bw, bc, s, c in rounds]
    report["ratio"] = statistics.median(r["wall_ratio"] for r in report["rounds"])
    report["cpu_ratio"] = statistics.median(r["cpu_ratio"] for r in report["rounds"])
    report["io_ratio"] = round(report["end_to_end"]["messages_per_second"]
                               / report["io_limit"]["messages_per_second"], 4)
    report["target_met"] = report["cpu_ratio"] >= RATIO_TARGET
    report["memory_met"] = peak_rss_mb < MEMORY_TARGET_MB
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    e2e, io, bare = report["end_to_end"], report["io_limit"], report["bare_parse"]
    print(f"archive    {blobs} commits in {report['epochs']} epochs, "
          f"{report['archive_bytes'] / 1e6:.1f} MB on disk, built in "
          f"{report['archive_build_seconds']} s")
    print(f"I/O limit  {io['messages_per_second']:>9.1f} msg/s  ({io['seconds']} s; {io['what']})")
    print(f"bare parse {bare['messages_per_second']:>9.1f} msg/s  ({bare['seconds']} s, "
          f"{bare['cpu_seconds']} s CPU; {bare['what']})")
    print(f"end to end {e2e['messages_per_second']:>9.1f} msg/s  ({e2e['seconds']} s, "
          f"{e2e['cpu_seconds']} s CPU; {e2e['what']})")
    print(f"ratio      {report['ratio']:.3f} wall, {report['cpu_ratio']:.3f} CPU of the bare "
          f"parse (target >= {RATIO_TARGET}: {'met' if report['target_met'] else 'NOT met'}); "
          f"{report['io_ratio']:.3f} of the I/O limit")
    print(f"peak RSS   {peak_rss_mb:.1f} MB, the largest of its processes (target < "
          f"{MEMORY_TARGET_MB} MB: {'met' if report['memory_met'] else 'NOT met'})")
    print(f"summary    {json.dumps(summary)}")
    print(f"machine    {describe()}; load {report['load']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
