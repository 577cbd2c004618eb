"""Query output read through a pipe, as a script or `grep` reads it: every line whole (never
wrapped at 80 or COLUMNS), lists as words, and what a limit left out said beside the JSON."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from bot.config import IngestSettings
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_series, make_tree
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from tests.cli import Lorelab

LONG = ("mm/vmscan: keep the lru_gen aging and eviction counters per memcg and per node so that "
        "reclaim under memory pressure can be told apart from proactive reclaim in vmstat")


def test_piped_listings_keep_each_line_whole(db: Database, db_url: str, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "linux")
    for day, title in enumerate((LONG, "mm: a short one"), 1):
        spec = SeriesSpec(title=title, patches=1,
                          start_date=dt.datetime(2026, 11, day, 9, tzinfo=dt.UTC))
        ingest(db, [RawMail(m, title) for m in make_series(tree, spec)],
               settings=IngestSettings(parse_workers=0), list_name="linux-mm")
    lorelab = Lorelab(tmp_path, db_url)  # COLUMNS=160, stdout a pipe
    table = lorelab.run("series", "list").stdout.decode()
    assert any(LONG in line and "linux-mm" in line for line in table.splitlines()), table
    cover = lorelab.json("series", "show", "1")["versions"][0]["cover_message_id"]
    shown = lorelab.run("message", "show", cover).stdout.decode().splitlines()
    assert f"subject: [PATCH 0/1] {LONG}" in shown
    assert "lists: linux-mm" in shown  # not ['linux-mm']
    # A JSON list stays a list; what the limit left out is said on stderr.
    limited = lorelab.run("series", "list", "--limit", "1", "--json")
    assert b"1 of 2 series shown; --limit shows more" in limited.stderr
    assert lorelab.run("series", "list", "--json").stderr == b""
