"""`lorelab quarantine retry`: quarantined mail tried again once lorelab can take it, its
quarantine rows made as an older lorelab (one whose parser failed on a mail) made them."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.db.models import QuarantinedMail
from bot.demo.threads import SeriesSpec, make_series, make_tree
from bot.ingest.prepare import QUARANTINE_KEEP_BYTES, quarantine_row
from bot.ingest.sources import RawMail
from tests.cli import Lorelab
from tests.series.mailing import only_series, store

PARSER_BUG = "lorelab failed to parse this mail (IndexError: list index out of range); a bug"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def _quarantine(db, *rows: dict) -> None:
    with db.session() as session:
        session.execute(sa.insert(QuarantinedMail.__table__), list(rows))
        session.commit()


def test_a_patch_an_older_parser_failed_on_joins_its_series(db, db_url, tree, ingest_settings,
                                                             tmp_path):
    msgs = make_series(tree, SeriesSpec(title="mm: retried", patches=3))
    store(db, msgs[:2] + msgs[3:], ingest_settings)  # the second patch was quarantined
    big = b"Subject: huge\n\n" + b"x" * (QUARANTINE_KEEP_BYTES + 10)
    _quarantine(
        db,
        quarantine_row(RawMail(msgs[2], "mbox:/srv/mm.mbox#3"), PARSER_BUG),
        quarantine_row(RawMail(b"\0\x01 not mail", "mbox:/srv/mm.mbox#9"), "old words"),
        quarantine_row(RawMail(big, "mbox:/srv/mm.mbox#12"), "over the limit",
                       keep=QUARANTINE_KEEP_BYTES),
    )
    assert only_series(db)["versions"][0]["received"] == 2

    lorelab = Lorelab(tmp_path, db_url)
    summary = lorelab.json("quarantine", "retry")
    assert (summary["tried"], summary["stored"], summary["refused"], summary["truncated"]) == (
        2, 1, 1, 1)
    assert summary["series_updated"] == 1
    version = only_series(db)["versions"][0]
    assert (version["received"], version["complete"]) == (3, True)
    left = {row["source"]: row["reason"] for row in lorelab.json("quarantine", "list")}
    assert left.keys() == {"mbox:/srv/mm.mbox#9", "mbox:/srv/mm.mbox#12"}
    assert "binary data" in left["mbox:/srv/mm.mbox#9"]  # today's reason
    assert left["mbox:/srv/mm.mbox#12"] == "over the limit"

    again = lorelab.json("quarantine", "retry")
    assert (again["tried"], again["stored"], again["refused"]) == (1, 0, 1)
    out = lorelab.run("quarantine", "retry").stdout.decode()
    assert "tried 1: stored 0, still refused 1" in out
    assert "1 not tried: only their head was kept" in out


def test_mail_stored_since_it_was_quarantined_leaves_the_quarantine(db, db_url, tree,
                                                                    ingest_settings, tmp_path):
    """The same mail came again later (another archive) and was stored: its old quarantine row
    goes, and nothing is stored twice."""
    msgs = make_series(tree, SeriesSpec(title="mm: came twice", patches=1))
    store(db, msgs, ingest_settings)
    _quarantine(db, quarantine_row(RawMail(msgs[1], "mbox:/srv/old.mbox#2"), PARSER_BUG))
    summary = Lorelab(tmp_path, db_url).json("quarantine", "retry")
    assert (summary["tried"], summary["stored"], summary["refused"]) == (1, 1, 0)
    assert summary["series_created"] == summary["series_updated"] == 0
    assert Lorelab(tmp_path, db_url).json("quarantine", "list") == []
    assert only_series(db)["versions"][0]["received"] == 1
