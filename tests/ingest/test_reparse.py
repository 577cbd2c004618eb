"""`lorelab ingest reparse`: stored mail read again, and its series assembled again, after an
upgrade changed how lorelab reads it or groups it, with the stored rows made as an older lorelab
made them."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.db.models import Message, Patch, Series, SeriesVersion, Trailer, pack_mail
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_reply, make_series, make_tree, series_changes
from bot.series import cover_shortlogs, grouping
from bot.series.assemble import update_series
from bot.series.parts import thread_message
from tests.cli import Lorelab
from tests.series.mailing import (
    all_series,
    emptied,
    header,
    msgs_id,
    sent_as_addition,
    state,
    store,
    with_body,
    with_header,
)

REVIEWER = ("Rita Reviewer", "rita@example.org")
REVIEWED = "Reviewed-by: Rita Reviewer <rita@example.org>"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


@pytest.fixture
def answered(db, tree, ingest_settings) -> dict[str, bytes]:
    """A two-patch series whose second patch Rita reviewed from a client that kept the patch's
    subject without "Re:", and a plain reply to the first; stored by this lorelab."""
    msgs = make_series(tree, SeriesSpec(title="mm: read again", patches=2))
    review = make_reply(msgs[2], author=REVIEWER, body="Looks right.", trailers=[REVIEWED])
    review = with_header(review, "Subject", header(msgs[2], "Subject"))
    question = make_reply(msgs[1], author=REVIEWER, body="Why this order?")
    store(db, [*msgs, review, question], ingest_settings)
    return {"review": review, "question": question}


def _every_patch_with_a_diff(older: pytest.MonkeyPatch) -> None:
    """Assembly as before rules edition 6: a patch without a diff still took its number."""
    older.setattr(cover_shortlogs, "thread_message",
                  lambda row: dataclasses.replace(thread_message(row), has_diff=True))


def _as_an_older_lorelab_stored_it(
    db: Database, review: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's row as lorelab stored it before it read such replies as reviews (a patch
    that had lost its diff), and the series assembled from that row, as they were then (when a
    patch without a diff still took its number)."""
    with db.session() as session, monkeypatch.context() as older:
        _every_patch_with_a_diff(older)
        thread = session.scalar(sa.update(Message).where(Message.msgid == msgs_id(review))
                                .values(kind="patch").returning(Message.thread_id))
        update_series(session, [thread])
        session.commit()


def _given_to(series: dict, index: int) -> set[str]:
    patch = series["versions"][0]["patches"][index]
    return {f"{t['name']}: {t['value']}" for t in patch["trailers"] if t["origin"] != "own"}


def test_a_reply_once_read_as_a_patch_becomes_a_review(
    db, db_url, answered, tmp_path, monkeypatch
):
    expected = state(db)  # what this lorelab stores for the same mail
    _as_an_older_lorelab_stored_it(db, answered["review"], monkeypatch)
    stale = all_series(db)
    assert len(stale) == 2, "the older reading made a series of the reviewer's own"
    assert {s["author"]["email"] for s in stale} == {"ada@example.org", "rita@example.org"}

    lorelab = Lorelab(tmp_path, db_url)
    summary = lorelab.json("ingest", "reparse")
    assert (summary["read"], summary["changed"], summary["columns"]) == (5, 1, {"kind": 1})
    assert summary["versions_removed"] == 1  # the reviewer's
    assert summary["unparseable"] == summary["threading_differs"] == 0
    assert state(db) == expected
    (series,) = all_series(db)
    assert REVIEWED in _given_to(series, 1)

    again = lorelab.json("ingest", "reparse")
    assert (again["read"], again["changed"], again["series_created"],
            again["series_updated"]) == (5, 0, 0, 0)
    assert state(db) == expected
    out = lorelab.run("ingest", "reparse").stderr.decode()  # as `ingest` tells its summary
    assert "read again 5: changed 0; series versions new 0, updated 0, removed 0" in out


def test_what_cannot_be_read_again_or_would_move_is_kept(db, db_url, answered, tmp_path):
    """A mail the parser now refuses keeps its row; one whose threading headers read otherwise
    stays where it was stored, and both are counted."""
    question, review = msgs_id(answered["question"]), msgs_id(answered["review"])
    with db.session() as session:
        session.execute(sa.update(Message).where(Message.msgid == question)
                        .values(raw=pack_mail(b"\0\x01 not mail")))
        session.execute(sa.update(Message).where(Message.msgid == review)
                        .values(in_reply_to="elsewhere@example.org", subject="as stored"))
        session.commit()
    expected = state(db)

    summary = Lorelab(tmp_path, db_url).json("ingest", "reparse")
    assert summary["unparseable"] == 1
    assert "binary data" in summary["unparseable_reasons"][0]
    assert summary["threading_differs"] == 1
    assert (summary["changed"], summary["columns"]) == (1, {"subject": 1})
    with db.session() as session:
        kept = session.execute(sa.select(Message.in_reply_to, Message.subject)
                               .where(Message.msgid == review)).one()
    assert kept == ("elsewhere@example.org", header(answered["review"], "Subject"))
    after = state(db)  # its trailers go where its stored In-Reply-To says: nowhere known
    assert {k: after[k] for k in ("series", "versions", "patches")} == {
        k: expected[k] for k in ("series", "versions", "patches")}


def test_a_copy_keeps_its_note(db, db_url, tree, ingest_settings, tmp_path):
    """A different mail under a taken Message-ID is stored as a copy with a note of the id it
    claims (`bot.ingest.copies`); read again, it is the same row."""
    msgs = make_series(tree, SeriesSpec(title="mm: forged", patches=1))
    forged = with_header(msgs[1], "Subject", "[PATCH 1/1] mm: something else entirely")
    store(db, [*msgs, forged], ingest_settings)
    with db.session() as session:
        before = session.execute(sa.select(Message.msgid, Message.problems)
                                 .where(Message.claimed_msgid.is_not(None))).one()
    assert "is already taken by a different mail" in before.problems[-1]

    summary = Lorelab(tmp_path, db_url).json("ingest", "reparse")
    assert (summary["read"], summary["changed"]) == (3, 0)
    with db.session() as session:
        after = session.execute(sa.select(Message.msgid, Message.problems)
                                .where(Message.claimed_msgid.is_not(None))).one()
    assert after == before


def test_series_grouped_as_an_older_lorelab_did_are_assembled_again(
    db, db_url, tree, ingest_settings, tmp_path, monkeypatch
):
    """No row reads otherwise, but the grouping changed: `[PATCH 4/3]`, sent later in reply to
    a review, was a version of its own before lorelab took additions into their posting."""
    msgs = make_series(tree, SeriesSpec(title="mm: grown later", patches=3))
    review = make_reply(msgs[3], author=REVIEWER, body="This leaves the iterator stale.")
    (fix,) = make_series(tree, SeriesSpec(title="mm: advance the iterator", patches=1,
                                          cover=False))
    mails = [*msgs, review, sent_as_addition(fix, "4/3", review)]
    store(db, mails, ingest_settings)
    expected = state(db)
    emptied(db)
    with monkeypatch.context() as older:  # this process groups as lorelab did before additions
        older.setattr(grouping, "_join_additions", lambda groups, by_id: None)
        older.setattr(grouping, "_join_sittings", lambda groups: None)  # nor one sitting's
        store(db, mails, ingest_settings)
    assert [len(v["patches"]) for s in all_series(db) for v in s["versions"]] == [3, 1]

    summary = Lorelab(tmp_path, db_url).json("ingest", "reparse")
    assert (summary["changed"], summary["series_updated"], summary["versions_removed"]) == (
        0, 1, 1)
    assert state(db) == expected
    (series,) = all_series(db)
    assert [len(v["patches"]) for v in series["versions"]] == [4]


def test_series_sent_through_a_relay_become_their_authors(
    db, db_url, tree, ingest_settings, tmp_path
):
    """Stored before lorelab read a relay's mail as its author's (`bot.mail.relayed`), the
    series was the relay's; read again, it is the author's, as if stored now."""
    relayed = [
        with_header(with_header(m, "From", "\"'Ada Reclaim' via kasan-dev\" "
                                           "<kasan-dev@googlegroups.com>"),
                    "X-Original-From", "Ada Reclaim <ada@example.org>")
        for m in make_series(tree, SeriesSpec(title="kasan: read again", patches=2))
    ]
    store(db, relayed, ingest_settings)
    expected = state(db)
    with db.session() as session:  # the rows and series as an older lorelab made them
        threads = session.scalars(sa.update(Message).values(
            from_email="kasan-dev@googlegroups.com", from_name="'Ada Reclaim' via kasan-dev"
        ).returning(Message.thread_id)).all()
        for table in (Trailer, Patch, SeriesVersion, Series):
            session.execute(sa.delete(table))
        update_series(session, set(threads))
        session.commit()
    assert [s["author"]["email"] for s in all_series(db)] == ["kasan-dev@googlegroups.com"]

    summary = Lorelab(tmp_path, db_url).json("ingest", "reparse")
    assert summary["columns"] == {"from_email": 3, "from_name": 3}
    assert state(db) == expected
    assert [s["author"]["email"] for s in all_series(db)] == ["ada@example.org"]


def test_point_releases_read_as_v1_before_are_read_again(
    db, db_url, tree, ingest_settings, tmp_path
):
    """linux-xfs: Darrick Wong's `[PATCH v2.1 2/3]` respin of Christoph's v2 and his own
    `[PATCH 4/3]` addition, both in reply to Christoph's posting. Read as version 1 before
    (`v2.1` was no version), the two were one posting of his; read again, the respin is v2.1,
    a partial reroll of v2 complete with it, and the addition a posting of its own, as if
    stored now (the respin's posting no longer counts the addition's number)."""
    hch, djwong = ("Christoph Hellwig", "hch@lst.de"), ("Darrick J. Wong", "djwong@kernel.org")
    v2 = make_series(tree, SeriesSpec(title="iomap: iterate", author=hch, version=2))
    later = dt.datetime(2026, 12, 14, 19, 17, tzinfo=dt.UTC)
    (respin,) = make_series(tree, SeriesSpec(
        title="unused", author=djwong, patches=1, cover=False, start_date=later,
        changes=(series_changes(SeriesSpec(title="iomap: iterate"))[1].revised(),),
        in_reply_to=f"<{msgs_id(v2[2])}>"))
    respin = respin.replace(b"Subject: [PATCH] ", b"Subject: [PATCH v2.1 2/3] ", 1)
    (addition,) = make_series(tree, SeriesSpec(
        title="iomap: move the iterator", author=djwong, patches=1, cover=False,
        start_date=later + dt.timedelta(minutes=2), in_reply_to=f"<{msgs_id(v2[0])}>"))
    addition = addition.replace(b"Subject: [PATCH] ", b"Subject: [PATCH 4/3] ", 1)
    store(db, [*v2, respin, addition], ingest_settings)
    expected = state(db)
    shapes = sorted((v["label"], v["expected"], v["complete"], v["reroll_of_label"])
                    for s in all_series(db) for v in s["versions"])
    assert shapes == [("v1", 4, False, None), ("v2", 3, True, None), ("v2.1", 3, True, "v2")]

    with db.session() as session:  # the respin's row and the series as an older lorelab made them
        threads = session.scalars(sa.update(Message).where(Message.msgid == msgs_id(respin))
                                  .values(version=1, version_explicit=False)
                                  .returning(Message.thread_id)).all()
        for table in (Trailer, Patch, SeriesVersion, Series):
            session.execute(sa.delete(table))
        update_series(session, set(threads))
        session.commit()
    assert sorted(len(v["patches"]) for s in all_series(db) for v in s["versions"]) == [2, 3]

    summary = Lorelab(tmp_path, db_url).json("ingest", "reparse")
    assert summary["columns"] == {"version": 1, "version_explicit": 1}
    assert state(db) == expected


def test_patches_without_a_diff_stored_before_leave_their_versions(
    db, db_url, tree, ingest_settings, tmp_path, monkeypatch
):
    """Stored when a numbered patch without a diff still took its number: linux-xfs's `[NYE
    PATCHRIVER i/2]` overviews, sent without threading, were a complete version `git am` cannot
    apply; nvdimm's cover letter sent as `[NDCTL PATCH v7 4/4]` was v7's patch 4, and the real
    patch 4 a version of its own. Read again: the overviews are no version, and v7 has its cover
    letter and four patches, as if stored now."""
    djwong = "From: \"Darrick J. Wong\" <djwong@kernel.org>\nTo: linux-xfs@vger.kernel.org\n"
    overviews = [(f"{djwong}Subject: [NYE PATCHRIVER {i}/2] xfs: online repair part {i}\n"
                  f"Date: Sun, 31 Dec 2023 10:0{i}:00 +0000\nMessage-ID: <nye{i}@magnolia>\n\n"
                  "Here is where the patchsets of this part stand.\n").encode()
                 for i in (1, 2)]
    ndctl = make_series(tree, SeriesSpec(title="cxl: list the qos_class", patches=4, version=7))
    ndctl[0] = with_body(with_header(ndctl[0], "Subject", "[PATCH v7 4/4] cxl: the qos_class"),
                         "The series adds support for the qos_class of CXL devices.\n")
    mails = [*overviews, *ndctl]
    store(db, mails, ingest_settings)
    expected = state(db)
    assert sorted((v["version"], v["cover_message_id"], v["received"], v["complete"])
                  for s in all_series(db) for v in s["versions"]) == [
        (7, msgs_id(ndctl[0]), 4, True)]
    emptied(db)
    with monkeypatch.context() as older:
        _every_patch_with_a_diff(older)
        store(db, mails, ingest_settings)
    assert sorted((v["version"], v["cover_message_id"], v["received"], v["complete"])
                  for s in all_series(db) for v in s["versions"]) == [
        (1, None, 2, True), (7, None, 1, False), (7, None, 4, True)]

    summary = Lorelab(tmp_path, db_url).json("ingest", "reparse")
    assert (summary["changed"], summary["versions_removed"]) == (0, 2)
    assert state(db) == expected
