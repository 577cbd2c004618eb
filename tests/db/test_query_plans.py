"""The hot queries use indexes: every statement ingest, `series list`, `series show`, the
front page and the rounds of `lorelab run` send is EXPLAINed on SQLite and PostgreSQL, and
none scans all of `messages`, `series_versions` or `unseen_messages` (the tables that grow
with the archive).

A planner plans tiny tables with full scans whatever the indexes, so before the statements are
EXPLAINed the database gets a few thousand more rows of the growing tables and is analyzed as
lorelab analyzes it after a large ingest (`Database.optimize`). An index walked whole without
a condition counts as a full scan too, unless a LIMIT bounds it. At this size PostgreSQL still
finds a merge join along a whole primary key cheapest where, at list size, it looks each row
up; merge joins are turned off for the EXPLAIN so that the plan shown is the one at list size.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.commands.handler import MAY_HOLD_COMMANDS
from bot.config import IngestSettings
from bot.db.models import (
    Message,
    Patch,
    Series,
    SeriesVersion,
    Thread,
    UnseenMessage,
    pack_mail,
    utcnow,
)
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_reply, make_series, make_tree, series_message_ids
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from bot.mail.record import MessageKind
from bot.runs.rounds import mail_stored_since
from bot.series.views import continued_pieces
from bot.web.queries import SeriesFilter, series_detail, series_rows
from tests.cli import Lorelab
from tests.series.mailing import discussion_mail, with_header
from tests.support.statements import statements

GROWING = ("messages", "series_versions", "unseen_messages")
REVIEWER = ("Rita Reviewer", "rita@example.org")


def archive(tree: Path) -> list[list[bytes]]:
    """Batches as a list delivers them: series, a v2 in reply to v1, unthreaded patches,
    review replies with trailers, a reply that arrives before its parent, a reply that joins
    two stored threads (one named only by a message never seen), a deep thread
    whose patches 2 and 4 come first (two postings, until the rest makes them one: a version
    and its series deleted, patches moved), and a series under Message-IDs already taken."""
    v1 = SeriesSpec(title="mm/vmscan: plan the scan", patches=3)
    v2 = SeriesSpec(title="mm/vmscan: plan the scan", patches=3, version=2, same_changes_as=v1,
                    revised=(2,), in_reply_to=f"<{series_message_ids(v1)[0]}>")
    loose = SeriesSpec(title="mm/swap: loose patches", patches=2, cover=False, threading="none")
    other = SeriesSpec(title="mm/workingset: other", patches=2, author=("Bo", "bo@example.org"))
    pieces = SeriesSpec(title="mm/compaction: in pieces", patches=4, threading="deep")
    first, second, third, fourth, fifth = (
        make_series(tree, s) for s in (v1, v2, loose, other, pieces))
    replies = [make_reply(first[1], author=REVIEWER, body="Looks fine.\n\nReviewed-by: Rita "
                          "Reviewer <rita@example.org>\n")]
    late = make_reply(fourth[2], author=REVIEWER, body="Acked-by: Rita <rita@example.org>\n")
    cover, one, two, three, four = fifth
    # a reply to a message never seen, then one that names it and a stored thread: a merge
    when = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    lone = discussion_mail("lone@example.org", when, "unseen@example.org", "unseen@example.org")
    joining = discussion_mail("joining@example.org", when, "unseen@example.org",
                              f"{series_message_ids(v1)[0]} unseen@example.org")
    # a series a day later under ids v1 used (a sender's tool counting again), its patch in
    # reply to its cover letter: copies, and a reply naming an id two mails carry
    reused = SeriesSpec(title="mm/vmscan: reused ids", patches=1,
                        start_date=dt.datetime(2026, 12, 2, tzinfo=dt.UTC))
    again_cover, again_patch = make_series(tree, reused)
    taken = series_message_ids(v1)
    again = [with_header(again_cover, "Message-ID", f"<{taken[2]}>"),
             with_header(with_header(with_header(again_patch, "Message-ID", f"<{taken[3]}>"),
                                     "In-Reply-To", f"<{taken[2]}>"),
                         "References", f"<{taken[2]}>")]
    return [first + replies + [two, four, lone], [late], second + third[:1] + [cover, one, three],
            third[1:] + fourth + [joining], again]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def sqlite_full_scans(conn: Any, statement: str, params: Any) -> list[str]:
    rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params).all()
    pattern = re.compile(rf"^SCAN ({'|'.join(GROWING)})\b")
    return [row[-1] for row in rows if pattern.match(row[-1])]


def pg_full_scans(conn: Any, statement: str, params: Any) -> list[str]:
    plan = conn.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {statement}", params).scalar()
    found: list[str] = []

    def walk(node: dict[str, Any], limited: bool) -> None:
        limited = limited or node["Node Type"] == "Limit"
        if node.get("Relation Name") in GROWING:
            kind = node["Node Type"]
            if kind == "Seq Scan" or (
                kind in ("Index Scan", "Index Only Scan") and "Index Cond" not in node
                and not limited
            ):
                found.append(f"{kind} on {node['Relation Name']} using {node.get('Index Name')}"
                             f" filter {node.get('Filter')}")
        for child in node.get("Plans", []):
            walk(child, limited)

    walk(plan[0]["Plan"], False)
    return found


def grow(db: Database, threads: int = 2000, per_thread: int = 3) -> None:
    """Rows enough that a full scan costs what it would on a real list: threads of a cover
    letter or patch and replies, messages they name that never came, and a series with one
    version per thread, its patch placed.

    Every other thread starts with a cover letter that its version names, as on a real list
    (two thirds of the versions of the ingest benchmark's corpus have one). With no cover
    letters at all, SQLite's statistics say that a lookup by `cover_message_id` finds a third
    of the table (the NULLs), which no list looks like."""
    now = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    raw = pack_mail(b"Subject: filler\n\nfiller\n")
    covered = range(0, threads, 2)

    def kind(t: int, k: int) -> str:
        return "cover" if t in covered and k == 0 else "patch" if k == (t in covered) else "review"

    with db.session() as session:
        top = session.scalar(sa.select(sa.func.max(Thread.id))) or 0
        top_message = session.scalar(sa.select(sa.func.max(Message.id))) or 0

        def message_id(t: int, k: int) -> int:
            return top_message + t * per_thread + k + 1

        session.execute(sa.insert(Thread), [{"id": top + t + 1, "root_msgid": f"filler-{t}"}
                                            for t in range(threads)])
        session.execute(sa.insert(Message), [
            {"id": message_id(t, k), "msgid": f"filler-{t}-{k}", "thread_id": top + t + 1,
             "kind": kind(t, k), "reply": kind(t, k) == "review",
             "in_reply_to": f"filler-{t}-0" if k else None, "raw": raw, "raw_size": 20,
             "date": now + dt.timedelta(minutes=t), "ingested_at": now + dt.timedelta(minutes=t)}
            for t in range(threads) for k in range(per_thread)
        ])
        session.execute(sa.insert(UnseenMessage), [
            {"msgid": f"filler-gone-{t}-{k}", "thread_id": top + t + 1}
            for t in range(threads) for k in range(10)  # a table of many short rows
        ])
        top_series = session.scalar(sa.select(sa.func.max(Series.id))) or 0
        session.execute(sa.insert(Series), [
            {"id": top_series + t + 1, "title": f"filler {t}", "title_key": f"filler {t}",
             "author_email": f"a{t}@example.org", "last_mail_at": now}
            for t in range(threads)
        ])
        top_version = session.scalar(sa.select(sa.func.max(SeriesVersion.id))) or 0
        session.execute(sa.insert(SeriesVersion), [
            {"id": top_version + t + 1, "series_id": top_series + t + 1,
             "anchor_msgid": f"filler-{t}-0", "thread_id": top + t + 1, "version": 1,
             "title": f"filler {t}", "author_email": f"a{t}@example.org", "expected": 1,
             "received": 1, "date": now,
             "cover_message_id": message_id(t, 0) if t in covered else None}
            for t in range(threads)
        ])
        session.execute(sa.insert(Patch), [
            {"series_version_id": top_version + t + 1, "index": 1,
             "message_id": message_id(t, int(t in covered))}
            for t in range(threads)
        ])
    db.optimize()


def full_scans(db: Database, seen: list[tuple[str, Any]]) -> dict[str, list[str]]:
    """The statements that scan a growing table whole, with what their plan says."""
    out: dict[str, list[str]] = {}
    with db.engine.connect() as conn:
        postgres = conn.dialect.name == "postgresql"
        if postgres:
            conn.exec_driver_sql("SET enable_mergejoin = off")
        for statement, params in seen:
            verb = statement.lstrip().split(None, 1)[0].upper()
            if verb not in ("SELECT", "UPDATE", "DELETE", "WITH"):
                continue
            if "alembic_version" in statement or "sqlite_master" in statement:
                continue
            scans = (pg_full_scans if postgres else sqlite_full_scans)(conn, statement, params)
            if scans:
                out[statement] = scans
        conn.rollback()
    return out


def test_no_hot_query_scans_messages_or_series_versions(
    db: Database, db_url: str, tree: Path, tmp_path: Path
) -> None:
    settings = IngestSettings(batch_size=50, parse_workers=0)
    batches = archive(tree)
    ingest(db, [RawMail(m, "test") for m in batches[0]], settings=settings, list_name="linux-mm")
    with db.session() as session:
        pieces = [SeriesVersion(id=v.id, series_id=v.series_id, thread_id=v.thread_id, version=2,
                                reroll_of_id=v.id, complete=False, prefixes=[])
                  for v in session.execute(sa.select(SeriesVersion.id, SeriesVersion.series_id,
                                                     SeriesVersion.thread_id))]
    with statements() as seen:
        for batch in batches[1:]:
            ingest(db, [RawMail(m, "test") for m in batch], settings=settings,
                   list_name="linux-mm")
        lorelab = Lorelab(tmp_path, db_url)
        listed = lorelab.json("series", "list", "--limit", "2")
        lorelab.json("series", "list", "--list", "linux-mm", "--author", "ada",
                     "--since", (dt.date(2026, 1, 1)).isoformat())
        lorelab.json("series", "show", str(listed[0]["id"]))
        with db.session() as session:
            rows = series_rows(session, SeriesFilter(list_name="linux-mm"))
            series_detail(session, rows[0].id)
            # a page showing an earlier piece of a version sent a few patches at a time
            continued_pieces(session, pieces)
            # a round of `lorelab run`: the mail stored since the last round
            last_round = utcnow() - dt.timedelta(minutes=5)
            mail_stored_since(session, last_round, MAY_HOLD_COMMANDS)
            mail_stored_since(session, last_round, Message.kind == MessageKind.INLINE_DIFF)
    assert len(seen) > 50  # the statements were seen
    grow(db)
    scans = full_scans(db, seen)
    assert not scans, "\n\n".join(f"{plan}: {sql}" for sql, plan in scans.items())
