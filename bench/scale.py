"""The scale benchmark: does ingest cost more per message when the archive is large?

Run as `.venv/bin/python bench/scale.py [--existing 1000000] [--messages 20000] [--rounds 3]
[--backend sqlite|postgresql|both] [--pg-url URL] [--json]`.

1. The corpora: `--messages` LKML-like messages from bench/ingest.py's generator, as an mbox,
   one per round (each of its own seed: other mail under other Message-IDs).
2. Fresh: a round's corpus ingested in-process (`bot.ingest.store.ingest`, parse workers as
   configured) into an empty database.
3. Filled: a database that already holds `--existing` messages, generated straight into the
   tables (threads of a cover letter, three patches and six review replies, each a series
   version of its own series, every message on the list, the last reply naming a message of
   another list, never stored; raw mail a small blob) and analyzed
   as lorelab analyzes after a backfill; then the same corpus ingested into it. Each round
   ingests its corpus into a new empty database and into the filled one (which grows by a
   corpus a round: 2% at the default sizes).
   The generator writes rows, not mail (SQLite executemany, PostgreSQL COPY): about a minute
   for 1,000,000 messages on SQLite.
4. Per message, each ingest's CPU (this process and its parse workers) and wall time; the
   ratio filled / fresh of each round, and their median (target <= 1.15). At the filled size,
   `series list` (50 rows) and `series show` as the CLI runs them, in-process (start-up
   excluded): seconds and statements; and what each round of `lorelab run` reads first, the
   mail stored since the previous round. Last, `lorelab ingest mbox` of one more corpus into
   the filled database as a user runs it, a process of its own: CPU per message with its
   start-up, and the peak memory of the largest of its processes (target < 500 MB).

CPU time is the figure to compare on a shared machine; wall time is given beside it. One
ingest's CPU time moves by a tenth or more here from one run to the next, so a single pair's
ratio ranged from 0.83 to 1.26 for the same code; the median of the rounds' back-to-back pairs
is the figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "bench")]  # bench/ingest.py imports `machine` so

from bench.ingest import Corpus, write_mbox  # noqa: E402
from bench.machine import compile_lorelab, describe, machine  # noqa: E402
from bench.measured import run_measured  # noqa: E402

PER_THREAD = 10  # cover letter, three patches, six replies
TARGET = 1.15
MEMORY_TARGET_MB = 500
CHUNK = 20_000
START = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)


def cpu_seconds() -> float:
    """CPU of this process and of its children that have ended (the parse workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# --------------------------------------------------------------------------------------------
# The generator


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def generated_rows(existing: int, raw: bytes, sqlite: bool) -> Iterator[dict[str, list[tuple]]]:
    """Rows per table, a chunk of threads at a time, ids from 1."""
    threads = existing // PER_THREAD

    def when(n: int) -> Any:
        date = START + dt.timedelta(minutes=n)
        return date.strftime("%Y-%m-%d %H:%M:%S.%f") if sqlite else date

    per_chunk = max(1, CHUNK // PER_THREAD)
    for first in range(0, threads, per_chunk):
        rows: dict[str, list[tuple]] = {k: [] for k in (
            "threads", "messages", "series", "series_versions", "patches", "message_lists",
            "unseen_messages")}
        for t in range(first, min(threads, first + per_chunk)):
            tid = t + 1
            root = f"gen-{t}-0@example.org"
            author = f"dev{t % 2000}@example.org"
            title = f"mm/gen: generated series number {t}"
            away = f"gen-{t}-away@example.org"  # on another list: never stored here
            rows["threads"].append((tid, root, when(tid)))
            rows["unseen_messages"].append((away, tid))
            for k in range(PER_THREAD):
                mid = t * PER_THREAD + k + 1
                msgid = f"gen-{t}-{k}@example.org"
                kind = "cover" if k == 0 else "patch" if k <= 3 else "review"
                parent = None if k == 0 else root if k <= 3 else f"gen-{t}-{1 + k % 3}@example.org"
                refs = [] if parent is None else [root] if parent == root else [root, parent]
                if k == PER_THREAD - 1:
                    refs.insert(1, away)
                subject = (f"[PATCH {k}/3] {title}" if kind != "review"
                           else f"Re: [PATCH {1 + k % 3}/3] {title}")
                files = [{"path": "mm/vmscan.c", "change": "modify"}] if kind == "patch" else []
                trailers = [["Reviewed-by", "R <r@example.org>"]] if kind == "review" else []
                rows["messages"].append((
                    mid, msgid, parent, _json(refs), tid, "Dev", author, when(mid), subject,
                    title, kind, kind == "review", 1, False, k if k <= 3 else 1, 3, False, False,
                    _json(["PATCH"]), "linux-mm.kvack.org", None, None,
                    f"{mid:064x}" if kind == "patch" else None, _json(files), 3, 1,
                    _json(trailers), _json([]), raw, 4096, when(mid),
                ))
                rows["message_lists"].append((mid, 1))
            sid = tid
            rows["series"].append((sid, title, title.lower(), "Dev", author, None, when(tid),
                                   when(tid), when(tid * PER_THREAD)))
            rows["series_versions"].append((
                sid, sid, root, tid, 1, title, title.lower(), author, 3, 3, True,
                t * PER_THREAD + 1, False, False, _json(["PATCH"]), None, None, _json([]),
                when(tid * PER_THREAD), when(tid),
            ))
            for k in (1, 2, 3):
                rows["patches"].append((sid * 3 + k - 3, sid, t * PER_THREAD + k + 1, k))
        yield rows


COLUMNS = {
    "threads": ("id", "root_msgid", "created_at"),
    "messages": ("id", "msgid", "in_reply_to", "references", "thread_id", "from_name",
                 "from_email", "date", "subject", "title", "kind", "reply", "version",
                 "version_explicit", "counter", "total", "rfc", "resend", "prefixes",
                 "list_id_header", "base_commit", "change_id", "patch_fingerprint", "files",
                 "insertions", "deletions", "trailers", "problems", "raw", "raw_size",
                 "ingested_at"),
    "series": ("id", "title", "title_key", "author_name", "author_email", "change_id",
               "created_at", "updated_at", "last_mail_at"),
    "series_versions": ("id", "series_id", "anchor_msgid", "thread_id", "version", "title",
                        "title_key", "author_email", "expected", "received", "complete",
                        "cover_message_id", "rfc", "resend", "prefixes", "base_commit",
                        "change_id", "notes", "date", "updated_at"),
    "patches": ("id", "series_version_id", "message_id", "index"),
    "message_lists": ("message_id", "list_id"),
    "unseen_messages": ("msgid", "thread_id"),
}


def fill(url: str, existing: int) -> float:
    """Generate `existing` messages into the (migrated, empty) database; seconds taken."""
    from bot.db.models import pack_mail
    from bot.db.session import Database, open_database

    db: Database = open_database(url)
    raw = bytes(pack_mail(b"Subject: generated\n\n" + b"generated body\n" * 200))
    sqlite = url.startswith("sqlite")
    started = time.perf_counter()
    with db.engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO lists (id, name, address) "
                             "VALUES (1, 'linux-mm', 'linux-mm@kvack.org')")
        driver = conn.connection.driver_connection
        for rows in generated_rows(existing, raw, sqlite):
            for table, values in rows.items():
                names = COLUMNS[table]
                quoted = ", ".join(f'"{n}"' for n in names)
                if sqlite:
                    marks = ", ".join("?" for _ in names)
                    driver.executemany(f"INSERT INTO {table} ({quoted}) VALUES ({marks})",
                                       values)
                else:
                    with driver.cursor().copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
                        for row in values:
                            copy.write_row(row)
        if not sqlite:
            for table in COLUMNS:
                if table not in ("message_lists", "unseen_messages"):
                    conn.exec_driver_sql(
                        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"(SELECT max(id) FROM {table}))")
    seconds = time.perf_counter() - started
    db.optimize()
    db.dispose()
    return seconds


# --------------------------------------------------------------------------------------------
# Measuring


def measure_ingest(url: str, mbox: Path) -> dict[str, Any]:
    from bot.config import IngestSettings
    from bot.db.session import open_database
    from bot.ingest.sources import iter_mbox
    from bot.ingest.store import ingest

    db = open_database(url)
    cpu, wall = cpu_seconds(), time.perf_counter()
    summary = ingest(db, iter_mbox(mbox), settings=IngestSettings(), list_name="linux-mm")
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    db.dispose()
    n = summary.read
    return {"messages": n, "stored": summary.stored, "cpu_seconds": round(cpu, 2),
            "wall_seconds": round(wall, 2), "cpu_ms_per_message": round(1000 * cpu / n, 3),
            "wall_ms_per_message": round(1000 * wall / n, 3)}


def measure_command(url: str, mbox: Path, workdir: Path) -> dict[str, Any]:
    """`lorelab ingest mbox` as a user runs it, a process of its own (start-up included): its
    CPU per message and the peak memory of the largest of its processes."""
    env = dict(os.environ, LORELAB_DATABASE_URL=url, LORELAB_DATA_DIR=str(workdir),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    out = workdir / "command.stdout"
    with out.open("wb") as stdout:
        run = run_measured([sys.executable, "-c", "from bot.cli import main; main()", "ingest",
                            "mbox", str(mbox), "--list", "linux-mm", "--json"],
                           env=env, stdout=stdout)
    if run.returncode != 0:
        raise SystemExit(f"lorelab ingest mbox failed ({run.returncode}) into {url}")
    read = json.loads(out.read_bytes())["read"]
    return {"messages": read, "cpu_seconds": round(run.cpu_seconds, 2),
            "wall_seconds": round(run.seconds, 2),
            "cpu_ms_per_message": round(1000 * run.cpu_seconds / read, 3),
            "peak_rss_mb": round(run.peak_rss_mb, 1)}


def measure_reads(url: str, workdir: Path) -> dict[str, Any]:
    """`series list` (50) and `series show` in-process, as the CLI runs them."""
    from tests.cli import Lorelab
    from tests.support.statements import statements

    lorelab = Lorelab(workdir, url)
    lorelab.run("series", "list", "--limit", "1")  # warm: imports, caches, connection
    out: dict[str, Any] = {}
    for name, args in (("series_list_50", ("series", "list", "--json")),
                       ("series_show", ("series", "show", "1", "--json"))):
        with statements() as seen:
            started = time.perf_counter()
            lorelab.run(*args)
            seconds = time.perf_counter() - started
        out[name] = {"seconds": round(seconds, 3), "statements": len(seen)}
    out["round_new_mail"] = _round_reads(url)
    return out


def _round_reads(url: str) -> dict[str, Any]:
    """What a round of `lorelab run` reads first, the mail stored since the previous round (less
    COMMIT_LAG), for commands and for reviewers' inline diffs: after a quiet interval, and
    just after a round's corpus was ingested."""
    from bot.db.models import utcnow
    from bot.runs.rounds import COMMIT_LAG

    return {"quiet": _new_mail(url, utcnow()),
            "after_the_corpus": _new_mail(url, utcnow() - COMMIT_LAG)}


def _new_mail(url: str, since: dt.datetime) -> dict[str, Any]:
    import sqlalchemy as sa

    from bot.commands.handler import MAY_HOLD_COMMANDS
    from bot.db.models import Message
    from bot.db.session import open_database
    from bot.mail.record import MessageKind
    from bot.runs.rounds import mail_stored_since
    from tests.support.statements import statements

    db = open_database(url)
    with db.session() as session, statements() as seen:
        session.scalar(sa.select(1))  # connected before the clock starts
        started = time.perf_counter()
        found = [*mail_stored_since(session, since, MAY_HOLD_COMMANDS),
                 *mail_stored_since(session, since, Message.kind == MessageKind.INLINE_DIFF)]
        seconds = time.perf_counter() - started
    db.dispose()
    return {"seconds": round(seconds, 4), "statements": len(seen) - 1, "found": len(found)}


def fresh_url(backend: str, workdir: Path, name: str, pg_url: str) -> tuple[str, Any]:
    """An empty database at the latest schema; and how to drop it."""
    from bot.db.session import open_database

    if backend == "sqlite":
        path = workdir / f"{name}.db"
        for stale in workdir.glob(f"{name}.db*"):
            stale.unlink()
        url = f"sqlite:///{path}"
        open_database(url).dispose()
        return url, lambda: None
    from tests.support.databases import create_pg_database, drop_pg_database

    url = create_pg_database(pg_url)
    open_database(url).dispose()
    return url, lambda: drop_pg_database(pg_url, url)


def run_backend(backend: str, args: argparse.Namespace, corpora: list[Path],
                command_corpus: Path, workdir: Path) -> dict:
    report: dict[str, Any] = {"rounds": []}
    filled_url, drop_filled = fresh_url(backend, workdir, "filled", args.pg_url)
    try:
        report["generate_seconds"] = round(fill(filled_url, args.existing), 1)
        for mbox in corpora:
            url, drop = fresh_url(backend, workdir, "fresh", args.pg_url)
            try:
                fresh = measure_ingest(url, mbox)
            finally:
                drop()
            filled = measure_ingest(filled_url, mbox)
            report["rounds"].append({
                "fresh": fresh, "filled": filled,
                "cpu_ratio": round(filled["cpu_ms_per_message"] / fresh["cpu_ms_per_message"], 3),
                "wall_ratio": round(
                    filled["wall_ms_per_message"] / fresh["wall_ms_per_message"], 3),
            })
        report["reads_at_filled_size"] = measure_reads(filled_url, workdir)
        report["command_at_filled_size"] = measure_command(filled_url, command_corpus, workdir)
    finally:
        drop_filled()
    for key in ("cpu_ratio", "wall_ratio"):
        report[key] = round(statistics.median(r[key] for r in report["rounds"]), 3)
    report["target_met"] = report["cpu_ratio"] <= TARGET
    report["memory_met"] = report["command_at_filled_size"]["peak_rss_mb"] < MEMORY_TARGET_MB
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--existing", type=int, default=1_000_000)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1, help="the first round's corpus")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--pg-url", default=os.environ.get(
        "LORELAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--keep", type=Path, help="keep the mbox and SQLite files in DIR")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    compile_lorelab()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="lorelab-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("LORELAB_DATA_DIR", str(workdir))
    corpora = [workdir / f"corpus-{n}.mbox" for n in range(args.rounds)]
    command_corpus = workdir / "corpus-command.mbox"  # mail none of the rounds stored
    for n, mbox in enumerate([*corpora, command_corpus]):
        write_mbox(Corpus(args.seed + n).messages(args.messages), mbox)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    report: dict[str, Any] = {"existing": args.existing, "messages": args.messages,
                              "machine": machine(), "load": os.getloadavg()}
    try:
        for backend in backends:
            report[backend] = run_backend(backend, args, corpora, command_corpus, workdir)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    report["load_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for backend in backends:
        r = report[backend]
        print(f"{backend}: {args.messages} messages into an empty database and into one with "
              f"{args.existing} (generated in {r['generate_seconds']} s)")
        for n, round_ in enumerate(r["rounds"], 1):
            for name in ("fresh", "filled"):
                m = round_[name]
                print(f"  round {n} {name:6} {m['cpu_ms_per_message']:7.3f} ms CPU/msg  "
                      f"{m['wall_ms_per_message']:7.3f} ms wall/msg  ({m['stored']} stored)")
            print(f"  round {n} filled/fresh: CPU {round_['cpu_ratio']:.3f}, "
                  f"wall {round_['wall_ratio']:.3f}")
        print(f"  filled/fresh, median of {len(r['rounds'])}: CPU {r['cpu_ratio']:.3f}, wall "
              f"{r['wall_ratio']:.3f} (target <= {TARGET}: "
              f"{'met' if r['target_met'] else 'NOT met'})")
        reads = r["reads_at_filled_size"]
        for name in ("series_list_50", "series_show"):
            print(f"  {name}: {reads[name]['seconds']} s, {reads[name]['statements']} statements")
        command = r["command_at_filled_size"]
        print(f"  lorelab ingest mbox at that size: {command['cpu_ms_per_message']} ms CPU/msg "
              f"(start-up included), peak RSS {command['peak_rss_mb']} MB (target < "
              f"{MEMORY_TARGET_MB} MB: {'met' if r['memory_met'] else 'NOT met'})")
        for when, read in reads["round_new_mail"].items():
            print(f"  a round's new mail, {when.replace('_', ' ')}: {read['seconds']} s, "
                  f"{read['statements']} statements, {read['found']} found")
    print(f"machine {describe()}; load {report['load']} -> {report['load_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
