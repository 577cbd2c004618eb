"""Series mailed with `git format-patch` without `--thread`, stored through `ingest mbox` on
SQLite and PostgreSQL: each mail has no In-Reply-To or References, yet a maintainer sees each
posting whole, under its cover letter's title, in whatever order and batches the mails came.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from bot.db.models import Message
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, as_mbox, make_series, make_tree
from tests.cli import Lorelab
from tests.series.mailing import all_series, header, msgs_id, with_header

START = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.UTC)
ADA = ("Ada Reclaim", "ada@example.org")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def unthreaded(tree: Path, title: str, **kw) -> list[bytes]:
    spec = SeriesSpec(title=title, threading="none", author=ADA, **kw)
    sent = make_series(tree, spec)
    assert not any(b"In-Reply-To:" in m or b"References:" in m for m in sent)
    return sent


@pytest.fixture
def lorelab(tmp_path: Path, db_url: str) -> Lorelab:
    return Lorelab(tmp_path, db_url)


def ingest_mboxes(lorelab: Lorelab, tmp_path: Path, batches: list[list[bytes]],
                  batch_size: int = 1000) -> None:
    """Each list of mails as one `lorelab ingest mbox` of its own, in order."""
    for i, mails in enumerate(batches):
        path = tmp_path / f"{i}.mbox"
        path.write_bytes(as_mbox(mails))
        lorelab.run("ingest", "mbox", str(path), "--list", "linux-mm",
                    LORELAB_INGEST_BATCH_SIZE=str(batch_size))


def shape(db: Database) -> dict[str, list[tuple]]:
    """Each series by title: its versions as (version, cover letter, patches, complete)."""
    found = all_series(db)
    assert len({s["title"] for s in found}) == len(found), "two series of one title"
    return {
        s["title"]: sorted((v["version"], v["cover_message_id"] or "",
                            [p["message_id"] for p in v["patches"]], v["complete"])
                           for v in s["versions"])
        for s in found
    }


def posting(mails: list[bytes], version: int = 1, cover: bool = True) -> tuple:
    ids = [msgs_id(m) for m in mails]
    if cover:
        return (version, ids[0], ids[1:], True)
    return (version, "", ids, True)


def patch_title(raw: bytes) -> str:
    return header(raw, "Subject").split("] ", 1)[1]


LAYOUTS = {
    "in order, one mbox": lambda m: [m],
    "patch 3 first, then the rest shuffled": lambda m: [[m[3], *random.Random(3).sample(
        [x for i, x in enumerate(m) if i != 3], len(m) - 1)]],
    "one mbox per mail, cover letter last": lambda m: [[x] for x in [*m[1:], m[0]]],
    "patches one day, cover letter in the next poll": lambda m: [m[1:], m[:1]],
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cover_letter_names_and_holds_its_unthreaded_patches(db, lorelab, tree, tmp_path,
                                                            layout):
    mails = unthreaded(tree, "mm: unthreaded cover letter", patches=3, start_date=START)
    ingest_mboxes(lorelab, tmp_path, LAYOUTS[layout](mails))
    assert shape(db) == {"mm: unthreaded cover letter": [posting(mails)]}


@pytest.mark.parametrize("batch_size", [1, 1000])
def test_unthreaded_patches_without_cover_letter_are_one_posting(db, lorelab, tree, tmp_path,
                                                                batch_size):
    mails = unthreaded(tree, "mm: no cover", patches=4, cover=False, start_date=START)
    order = [mails[2], mails[3], mails[0], mails[1]]  # patch 3 arrives first
    ingest_mboxes(lorelab, tmp_path, [order], batch_size=batch_size)
    # Named by patch 1, whatever came first.
    assert shape(db) == {patch_title(mails[0]): [posting(mails, cover=False)]}


@pytest.mark.parametrize("batch_size", [1, 1000])
def test_one_author_sends_several_unthreaded_series_the_same_hour(db, lorelab, tree, tmp_path,
                                                                 batch_size):
    """Interleaved by date: two trees' series of the same size, and one of another size."""
    unstable = unthreaded(tree, "mm: for unstable", patches=3, start_date=START,
                          subject_prefix="PATCH mm-unstable")
    hotfix = unthreaded(tree, "mm: a hotfix", patches=3, subject_prefix="PATCH mm-hotfixes",
                        start_date=START + dt.timedelta(seconds=30))
    pair = unthreaded(tree, "mm: a pair", patches=2, start_date=START + dt.timedelta(seconds=45),
                      subject_prefix="PATCH mm-unstable")
    everything = unstable + hotfix + pair
    random.Random(7).shuffle(everything)
    ingest_mboxes(lorelab, tmp_path, [everything], batch_size=batch_size)
    assert shape(db) == {
        "mm: for unstable": [posting(unstable)],
        "mm: a hotfix": [posting(hotfix)],
        "mm: a pair": [posting(pair)],
    }


def resent(mails: list[bytes], later: dt.timedelta) -> list[bytes]:
    """The same files sent again (as `git send-email` would): new Message-IDs and Dates."""
    out = []
    for m in mails:
        when = dt.datetime.strptime(header(m, "Date"), "%a, %d %b %Y %H:%M:%S %z") + later
        m = with_header(m, "Message-ID", f"<again-{msgs_id(m)}>")
        out.append(with_header(m, "Date", when.strftime("%a, %d %b %Y %H:%M:%S %z")))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_a_series_sent_twice_within_the_hour_is_two_postings(db, lorelab, tree, tmp_path,
                                                             seed):
    first = unthreaded(tree, "mm: sent twice", patches=3, start_date=START)
    again = resent(first, dt.timedelta(minutes=20))
    everything = first + again
    random.Random(seed).shuffle(everything)
    ingest_mboxes(lorelab, tmp_path, [[m] for m in everything])
    assert shape(db) == {"mm: sent twice": sorted([posting(first), posting(again)])}


def test_a_tagged_second_version_is_a_version_of_the_same_series(db, lorelab, tree, tmp_path):
    prefix = "PATCH mm-unstable"
    v1 = unthreaded(tree, "mm: tagged", patches=4, start_date=START, subject_prefix=prefix)
    v2 = unthreaded(tree, "mm: tagged", patches=4, version=2, subject_prefix=prefix,
                    start_date=START + dt.timedelta(days=3))
    assert header(v2[0], "Subject").startswith("[PATCH mm-unstable v2 0/4] ")
    ingest_mboxes(lorelab, tmp_path, [v1[::-1], v2[::-1]])
    assert shape(db) == {"mm: tagged": [posting(v1), posting(v2, version=2)]}


def test_a_missing_patch_of_one_series_is_not_filled_by_another(db, lorelab, tree, tmp_path):
    """Same author, size and hour, different trees: patch 2 of one is not patch 2 of the
    other, even while each waits for its own."""
    net = unthreaded(tree, "mm: one tree", patches=2, cover=False, start_date=START,
                     subject_prefix="PATCH mm-unstable")
    bpf = unthreaded(tree, "mm: other tree", patches=2, cover=False,
                     start_date=START + dt.timedelta(minutes=5),
                     subject_prefix="PATCH mm-hotfixes")
    ingest_mboxes(lorelab, tmp_path, [[net[0]], [bpf[1]], [net[1]], [bpf[0]]])
    assert shape(db) == {
        patch_title(net[0]): [posting(net, cover=False)],
        patch_title(bpf[0]): [posting(bpf, cover=False)],
    }


def test_threaded_series_of_one_author_stay_apart(db, lorelab, tree, tmp_path):
    """Two threaded series with the same prefix minutes apart: their roots are unthreaded
    cover letters, but their threads are not joined and their postings not mixed."""
    one = make_series(tree, SeriesSpec(title="mm: threaded one", patches=2, start_date=START))
    two = make_series(tree, SeriesSpec(title="mm: threaded two", patches=2,
                                       start_date=START + dt.timedelta(minutes=10)))
    order = [one[0], two[0], two[2], one[2], one[1], two[1]]
    ingest_mboxes(lorelab, tmp_path, [[m] for m in order])
    assert shape(db) == {"mm: threaded one": [posting(one)], "mm: threaded two": [posting(two)]}
    with db.session() as session:
        threads = {m.msgid: m.thread_id for m in session.query(Message)}
    assert threads[msgs_id(one[1])] != threads[msgs_id(two[1])]


def test_dates_decide_between_resends_in_any_batches(db, lorelab, tree, tmp_path):
    """A resend's patch 2 arrives while the first posting still lacks its own patch 2."""
    first = unthreaded(tree, "mm: raced", patches=3, start_date=START)
    again = resent(first, dt.timedelta(minutes=30))
    ingest_mboxes(lorelab, tmp_path, [[first[0], first[1], first[3]], [again[2]], again[:2],
                                 [again[3]], [first[2]]])
    assert shape(db) == {"mm: raced": sorted([posting(first), posting(again)])}



def test_patches_sent_by_hand_minutes_apart_and_out_of_order(db, lorelab, tree, tmp_path):
    mails = unthreaded(tree, "mm: sent by hand", patches=3, start_date=START)
    order = [0, 2, 1, 3]  # patch 2 went out before patch 1
    sent = [with_header(mails[i], "Date", (START + dt.timedelta(minutes=4 * k)).strftime(
        "%a, %d %b %Y %H:%M:%S %z")) for k, i in enumerate(order)]
    ingest_mboxes(lorelab, tmp_path, [[m] for m in sent])
    assert shape(db) == {"mm: sent by hand": [posting(mails)]}
