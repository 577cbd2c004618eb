"""Two postings of one version on the status site: a partial reroll (`[PATCH v2 2/3]` alone, in
reply to v1's 2/3) and the whole v2 sent later, each tested. Every link names the posting it
means, so a run's page leads to the version that run tested, not to the other v2."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from bot.db.models import SeriesVersion
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_reply, make_series, make_tree, series_changes
from bot.runs.lifecycle import create_run
from tests.series.mailing import msgs_id, store, with_body, with_header
from tests.support.web_data import web_settings
from tests.support.web_server import serving

V1 = SeriesSpec(title="mm: reclaim in larger batches", patches=3)


@pytest.fixture
def postings(db: Database, tmp_path: Path, ingest_settings) -> dict[str, int]:
    tree = make_tree(tmp_path / "linux")
    v1 = make_series(tree, V1)
    (reroll,) = make_series(tree, SeriesSpec(
        title="unused", patches=1, cover=False, version=2,
        changes=(series_changes(V1)[1].revised(),), in_reply_to=f"<{msgs_id(v1[2])}>"))
    reroll = reroll.replace(b"[PATCH v2] ", b"[PATCH v2 2/3] ", 1)
    whole = make_series(tree, dataclasses.replace(
        V1, version=2, same_changes_as=V1, revised=(2,),
        start_date=dt.datetime(2026, 12, 20, tzinfo=dt.UTC)))
    store(db, [*v1, reroll, *whole], ingest_settings)
    with db.session() as session:
        partial, full = session.scalars(sa.select(SeriesVersion).where(
            SeriesVersion.version == 2).order_by(SeriesVersion.received)).all()
        ids = {"series": partial.series_id, "partial": partial.id, "whole": full.id,
               "partial_run": create_run(session, partial, kind="build", tree="mm").id,
               "whole_run": create_run(session, full, kind="build", tree="mm").id}
    return ids


def test_each_posting_of_a_version_has_its_own_page_and_its_runs_lead_to_it(db, postings):
    series = postings["series"]
    with serving(web_settings(db.url)) as site:
        for which in ("partial", "whole"):
            run_page = requests.get(f"{site}/runs/{postings[which + '_run']}", timeout=10).text
            link = f"/series/{series}?version=2&amp;posting={postings[which]}"
            assert link in run_page, which
            page = requests.get(f"{site}{link.replace('&amp;', '&')}", timeout=10).text
            shown = re.search(r'<tr aria-current="true">.*?</tr>', page, re.S).group(0)
            assert "v2 (shown)" in shown
            assert ("reroll of v1" in shown) == (which == "partial"), which
            other = "whole" if which == "partial" else "partial"
            assert f"?version=2&amp;posting={postings[other]}" in page  # the other v2, linked
        missing = requests.get(f"{site}/series/{series}?posting=999999", timeout=10)
        assert missing.status_code == 404


def series_page(db: Database) -> tuple[str, str]:
    """The page of the one stored series, and its row of the version it shows."""
    with db.session() as session:
        series = session.scalars(sa.select(SeriesVersion.series_id).distinct()).one()
    with serving(web_settings(db.url)) as site:
        page = requests.get(f"{site}/series/{series}", timeout=10).text
    return page, re.search(r'<tr aria-current="true">.*?</tr>', page, re.S).group(0)


def test_a_point_release_is_named_as_its_author_wrote_it(db: Database, tmp_path: Path,
                                                          ingest_settings):
    """`[PATCH v4.1 2/3]`, a respin of v4's 2/3 (linux-xfs): the page says v4.1, a reroll of
    v4, and marks the patches it takes from v4."""
    tree = make_tree(tmp_path / "linux")
    v4 = make_series(tree, dataclasses.replace(V1, version=4))
    (respin,) = make_series(tree, SeriesSpec(
        title="unused", patches=1, cover=False, version=2,
        changes=(series_changes(V1)[1].revised(),), in_reply_to=f"<{msgs_id(v4[2])}>"))
    store(db, [*v4, respin.replace(b"[PATCH v2] ", b"[PATCH v4.1 2/3] ", 1)], ingest_settings)
    page, shown = series_page(db)
    assert "v4.1 (shown)" in shown and "reroll of v4<" in shown, shown
    assert "Patches of v4.1" in page and page.count('<span class="muted">(v4)</span>') == 2


def test_a_version_page_says_why_a_number_is_missing(db: Database, tmp_path: Path,
                                                     ingest_settings):
    """Patch 2 arrived without its diff (a mail client ate it): the page lists the version as
    missing 2 and says which mail it was and why it does not count."""
    posting = make_series(make_tree(tmp_path / "linux"), V1)
    posting[2] = with_body(posting[2], "The diff was eaten by my mail client, sorry.\n")
    store(db, posting, ingest_settings)
    page, shown = series_page(db)
    assert "2/3" in shown and "missing 2" in shown, shown
    assert (f"<li>patch 2/3 carries no diff that git can apply, so its number stays missing: "
            f"{msgs_id(posting[2])}</li>") in page


def test_a_version_sent_in_pieces_says_which_posting_is_the_version(
        db: Database, tmp_path: Path, ingest_settings):
    """`[PATCH v2 2/3]` and `v2 3/3`, each in reply to the review of the patch it replaces
    (two postings, `bot.series.rerolls`): the page calls the first a piece whose rest came
    later, not a version missing nothing, and the second the last piece of v2."""
    tree = make_tree(tmp_path / "linux")
    v1 = make_series(tree, V1)
    pieces = []
    for number in (2, 3):
        review = make_reply(v1[number], author=("Rita Reviewer", "rita@example.org"),
                            body="Please rename it.")
        (piece,) = make_series(tree, SeriesSpec(
            title=f"unused {number}", patches=1, cover=False, version=2,
            changes=(series_changes(V1)[number - 1].revised(),),
            in_reply_to=f"<{msgs_id(review)}>",
            start_date=dt.datetime(2026, 12, 10, number, tzinfo=dt.UTC)))
        piece = with_header(piece, "References", " ".join(
            f"<{msgs_id(m)}>" for m in (v1[0], v1[number], review)))  # as mail clients chain
        pieces += [review, piece.replace(b"[PATCH v2] ", f"[PATCH v2 {number}/3] ".encode(), 1)]
    store(db, [*v1, *pieces], ingest_settings)
    with db.session() as session:
        series = session.scalars(sa.select(SeriesVersion.series_id).distinct()).one()
    with serving(web_settings(db.url)) as site:
        page = requests.get(f"{site}/series/{series}", timeout=10).text
    rows = re.findall(r"<tr[^>]*>\s*<th scope=\"row\">.*?</tr>", page, re.S)
    assert len(rows) == 3, rows
    assert "a piece of v2, the rest sent later" in rows[1] and "missing" not in rows[1], rows[1]
    assert "last piece of v2" in rows[2] and "missing" not in rows[2], rows[2]
    # the version shown, the last piece: its 2/3 came in the earlier piece, its 1/3 in v1
    patches = page.split("Patches of v2", 1)[1]
    assert patches.count("(an earlier piece)") == 1 and patches.count("(v1)") == 1, patches


def test_one_patch_of_a_long_stable_review_posting_lists_what_is_missing_as_ranges(
    db: Database, tmp_path: Path, ingest_settings
):
    """`[PATCH 5.19 155/365]` alone (a stable review posting reaches a list one patch at a
    time): the page says missing 1-154, 156-365, not 364 numbers."""
    (patch,) = make_series(make_tree(tmp_path / "linux"), SeriesSpec(
        title="perf probe: fix an error path", patches=1, cover=False))
    store(db, [patch.replace(b"[PATCH] ", b"[PATCH 5.19 155/365] ", 1)], ingest_settings)
    _, shown = series_page(db)
    assert "1/365" in shown and "missing 1-154, 156-365<" in shown, shown
