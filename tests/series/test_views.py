"""Reading series back: `series list`, `series show` and the front page, on SQLite and
PostgreSQL. A page of series costs a fixed number of statements however many rows it shows,
reads no raw mail, and is ordered and dated by the newest mail, not by when it was ingested."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from bot.config import IngestSettings
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_series, make_tree
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from bot.series.views import number_ranges
from bot.web.queries import SeriesFilter, series_detail, series_rows
from tests.cli import Lorelab
from tests.support.statements import statements

RAW_COLUMN = re.compile(r"\bmessages(_\d+)?\.raw\b")
# What a command sends before it reads series: the schema check, a connection's set-up.
SET_UP = re.compile(r"\s*(SELECT pg_catalog\.|SELECT name FROM sqlite_master|"
                    r"SELECT version_num FROM alembic_version|PRAGMA |show |select current_schema)",
                    re.I)
# Sent (and so ingested) in this order; by the date of their mail the newest is "third".
DATES = {"first": (2026, 3, 1), "second": (2026, 1, 1), "third": (2026, 5, 1),
         "fourth": (2026, 2, 1)}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


@pytest.fixture
def lorelab(db: Database, db_url: str, tree: Path, tmp_path: Path) -> Lorelab:
    for name, date in DATES.items():
        spec = SeriesSpec(title=f"mm: the {name} series", patches=2,
                          start_date=dt.datetime(*date, 9, 0, tzinfo=dt.UTC))
        ingest(db, [RawMail(m, name) for m in make_series(tree, spec)],
               settings=IngestSettings(batch_size=50, parse_workers=0), list_name="linux-mm")
    return Lorelab(tmp_path, db_url)


def test_list_is_ordered_and_dated_by_the_newest_mail_and_says_what_it_left_out(
    lorelab: Lorelab
) -> None:
    rows = lorelab.json("series", "list", "--limit", "2")
    assert [r["title"] for r in rows] == ["mm: the third series", "mm: the first series"]
    # The last of the three messages (cover letter, two patches) a minute apart.
    assert rows[0]["updated"] == "2026-05-01T09:02:00+00:00"
    table = lorelab.run("series", "list", "--limit", "2").stdout.decode()
    assert "2 of 4 series shown; --limit shows more" in table
    assert "2026-05-01 09:02" in table
    assert "of 4" not in lorelab.run("series", "list").stdout.decode()
    since = lorelab.json("series", "list", "--since", "2026-02-15")
    assert [r["title"] for r in since] == ["mm: the third series", "mm: the first series"]


def test_a_page_costs_the_same_statements_for_one_row_or_many_and_reads_no_raw_mail(
    lorelab: Lorelab, db: Database
) -> None:
    sent = []
    for limit in ("1", "4"):
        with statements() as seen:
            lorelab.json("series", "list", "--limit", limit)
        sent.append([sql for sql, _ in seen])
        assert not [sql for sql in sent[-1] if RAW_COLUMN.search(sql)]
    # Four rows cost no more statements than one; the first command may open the database
    # with one statement more than the second (a connection's set-up, seen in CI).
    one, four = sent
    assert 0 < len(four) <= len(one) <= 10, "\n\n".join(["--limit 1:", *one, "--limit 4:", *four])
    with statements() as seen:
        shown = lorelab.json("series", "show", "1")
        with db.session() as session:
            rows = series_rows(session, SeriesFilter())
            detail = series_detail(session, rows[0].id)
    assert shown["versions"][0]["patches"][1]["subject"].startswith("[PATCH 2/2]")
    assert detail is not None and len(rows) == 4
    assert not [sql for sql, _ in seen if RAW_COLUMN.search(sql)]
    # 28 read series, versions, patches, trailers, lists, runs, replies and campaigns; the
    # set-up varies with what the engine did before (31 statements in all seen once, at 30
    # here), and is not counted
    assert len([sql for sql, _ in seen if not SET_UP.match(sql)]) <= 30


@pytest.mark.parametrize(("numbers", "shown"), [
    ([], ""), ([2], "2"), ([1, 2, 3, 5, 7, 8], "1-3, 5, 7-8"), ([9, 3, 4, 3], "3-4, 9"),
])
def test_missing_numbers_read_as_ranges(numbers: list[int], shown: str) -> None:
    assert number_ranges(numbers) == shown


def test_one_patch_of_a_long_stable_review_posting_says_what_is_missing_in_a_line(
    db: Database, db_url: str, tree: Path, tmp_path: Path
) -> None:
    """Greg Kroah-Hartman's stable review postings (`[PATCH 5.19 155/365]`) reach a list one
    patch at a time: the version is incomplete, and `series show` and `series mbox` name the
    364 missing numbers as two ranges, not as 364 numbers."""
    (patch,) = make_series(tree, SeriesSpec(title="perf probe: fix an error path", patches=1,
                                            cover=False))
    patch = patch.replace(b"[PATCH] ", b"[PATCH 5.19 155/365] ", 1)
    ingest(db, [RawMail(patch, "stable")], settings=IngestSettings(parse_workers=0),
           list_name="kernel-janitors")
    lorelab = Lorelab(tmp_path, db_url)
    (row,) = lorelab.json("series", "list")
    assert row["versions"][0]["missing"] == [*range(1, 155), *range(156, 366)]  # JSON: as it was
    shown = lorelab.run("series", "show", str(row["id"])).stdout.decode()
    assert "1/365 incomplete, missing 1-154, 156-365 " in shown, shown
    refused = lorelab.run("series", "mbox", str(row["id"]), check=False)
    assert refused.returncode != 0
    assert "patches 1-154, 156-365 have not arrived" in refused.stderr.decode()
