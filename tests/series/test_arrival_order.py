"""Series do not depend on how the mail arrived, on SQLite and PostgreSQL.

A bot that follows a list live gets mail one message at a time, in whatever order the mail
servers deliver it (patches before their cover letter, a v2 before the v1 it replies to); a
backfill gets batches of thousands. For the same messages both must end with the same series,
versions, patches and trailers: what `lorelab series list` shows a maintainer. Compared by
natural keys (message-ids), not by row ids, which follow the order of arrival.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email.utils
import functools
import random
from typing import Any

import pytest

from bot.config import IngestSettings
from bot.db.session import Database
from bot.demo.threads import (
    DEFAULT_POOL,
    SeriesSpec,
    make_reply,
    make_series,
    make_tree,
    series_changes,
)
from tests.series.mailing import (
    discussion_mail,
    emptied,
    header,
    msgs_id,
    sent_as_addition,
    state,
    store,
    thread_partition,
    untagged,
    with_header,
)

ADA = ("Ada Reclaim", "ada@example.org")
BO = ("Bo Compact", "bo@example.org")
RITA = ("Rita Reviewer", "rita@example.org")
START = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
GONE = "<gone@example.org>"


def day(n: int) -> dt.datetime:
    return START + dt.timedelta(days=n)


def reviewed(parent: bytes, when: dt.datetime) -> bytes:
    return make_reply(parent, author=RITA, body="Looks right.", date=when,
                      trailers=[f"Reviewed-by: {RITA[0]} <{RITA[1]}>"])


def hanging(mail: bytes, root: str) -> bytes:
    """`mail` sent in reply to a message never seen, under another thread root."""
    return with_header(with_header(mail, "In-Reply-To", GONE), "References", f"{root} {GONE}")


def trimmed(reply: bytes, root: str) -> bytes:
    """`reply` with its References cut to another root and its parent, as some clients send."""
    return with_header(reply, "References", f"{root} {header(reply, 'In-Reply-To')}")


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """A fortnight of a list, in order of date: each kind of posting whose series once
    depended on the order of arrival."""
    tree = make_tree(tmp_path_factory.mktemp("tree") / "linux")
    made = functools.partial(make_series, tree)
    # v1 and v2 in threads of their own, one title (and each its own b4 change-id): one series
    # titled by either cover letter, whichever arrives first.
    lru = SeriesSpec(title="mm: batch lru updates", patches=3, start_date=day(0),
                     change_id="20261102-lru-1")
    lru1 = made(lru)
    lru2 = made(dataclasses.replace(lru, version=2, start_date=day(4), change_id="20261106-lru-2",
                                    same_changes_as=lru, revised=(2,)))
    # A program to test the series, sent by v2's run in reply to its cover letter: a series
    # of its own, not a "v1" of lru's.
    program = dataclasses.replace(next(c for c in DEFAULT_POOL if c not in series_changes(lru)),
                                  subject="tools/mm: test the lru batching")
    lru_tool = made(SeriesSpec(title="unused", patches=1, cover=False, changes=(program,),
                               start_date=day(4) + dt.timedelta(minutes=4),
                               in_reply_to=f"<{msgs_id(lru2[0])}>"))
    # A single patch, then a v2 with a cover letter of another title whose first patch is that
    # patch again, then a v3 as a single patch: the v2's patches alone look like the v1.
    fix = SeriesSpec(title="unused", patches=1, cover=False, start_date=day(1),
                     changes=series_changes(SeriesSpec(title="mm/swap: a fix", patches=1)))
    fix1 = made(fix)
    fix2 = made(dataclasses.replace(fix, title="mm/swap: a fix and a follow-up", patches=2,
                                    cover=True, version=2, start_date=day(5), changes=None,
                                    same_changes_as=fix))
    fix3 = made(dataclasses.replace(fix, version=3, start_date=day(9), same_changes_as=fix,
                                    revised=(1,)))
    # A retitled v2 threaded under v1's cover letter: one series by threading alone.
    scan = SeriesSpec(title="mm/vmscan: plan the scan", patches=2, start_date=day(2))
    scan1 = made(scan)
    scan2 = made(dataclasses.replace(scan, title="mm/vmscan: plan the scan in rounds",
                                     version=2, start_date=day(6), same_changes_as=scan,
                                     in_reply_to=f"<{msgs_id(scan1[0])}>"))
    # Another author, deep threading: each patch in reply to the one before.
    pieces = made(SeriesSpec(title="mm/compaction: in pieces", patches=4, threading="deep",
                             author=BO, start_date=day(3)))
    # Two postings in reply to one message never seen, in threads of their own (other
    # References): the one sent first is named by that message, the other by its patch.
    hung = [hanging(m, "<r1@example.org>") for m in made(SeriesSpec(
        title="mm/mlock: hung", patches=2, cover=False, start_date=day(8)))]
    hung += [hanging(m, "<r2@example.org>") for m in made(SeriesSpec(
        title="mm/mlock: hung too", patches=1, cover=False, author=BO,
        start_date=day(8) + dt.timedelta(seconds=30)))]
    # Two days later Bo adds a fifth patch, in reply to a review of the third: pieces grows.
    pieces_review = reviewed(pieces[2], day(3) + dt.timedelta(hours=2))
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(SeriesSpec(
        title="mm/compaction: in pieces", patches=4)))
    (extra,) = made(SeriesSpec(title="unused", patches=1, cover=False, author=BO,
                               start_date=day(5), changes=(spare,)))
    extra = sent_as_addition(extra, "5/4", pieces_review)
    # Sent without threading headers: a thread of their own by author, prefix and hour.
    loose = made(SeriesSpec(title="mm/workingset: loose", patches=3, threading="none",
                            author=BO, start_date=day(7)))
    # RESEND on the cover letter and patch 2 only, each patch in reply to the one before.
    resent = made(SeriesSpec(title="mm/zswap: resent", patches=3, threading="deep",
                             subject_prefix="RESEND PATCH", start_date=day(10)))
    resent = [m.replace(b"[RESEND PATCH ", b"[PATCH ", 1) if i in (1, 3) else m
              for i, m in enumerate(resent)]
    # Christoph Hellwig's way: cover letters without tags, v2's version at its end.
    bounce = SeriesSpec(title="block: bounce buffer direct I/O", patches=2, author=BO,
                        start_date=day(11))
    bounce1 = untagged(made(bounce), bounce.title)
    bounce2 = untagged(made(dataclasses.replace(bounce, version=2, start_date=day(12),
                                                same_changes_as=bounce, revised=(1,))),
                       f"{bounce.title} v2")
    reviews = [reviewed(lru1[0], day(0) + dt.timedelta(hours=5)),
               reviewed(lru1[1], day(0) + dt.timedelta(hours=6)),
               reviewed(lru1[1], day(0) + dt.timedelta(hours=7)),  # the same trailer again
               reviewed(loose[2], day(7) + dt.timedelta(hours=1)),
               reviewed(fix1[0], day(1) + dt.timedelta(hours=3)),
               pieces_review,
               reviewed(scan1[2], day(2) + dt.timedelta(hours=4)),
               # References cut to a root of another list and the patch: its thread all the same
               trimmed(reviewed(lru2[2], day(4) + dt.timedelta(hours=2)), "<away@example.org>"),
               trimmed(reviewed(pieces[3], day(3) + dt.timedelta(hours=3)), "<other@example.net>")]
    mails = (lru1 + lru2 + lru_tool + fix1 + fix2 + fix3 + scan1 + scan2 + pieces + [extra]
             + hung + loose + resent + bounce1 + bounce2 + reviews)
    return sorted(mails, key=lambda m: (email.utils.parsedate_to_datetime(header(m, "Date")),
                                        msgs_id(m)))


def arrived(db: Database, batches: list[list[bytes]]) -> dict[str, Any]:
    """The state after storing `batches` one after another in an empty database, each in
    transactions of one message when it is a list of one, else in one."""
    emptied(db)
    for batch in batches:
        store(db, batch, IngestSettings(batch_size=len(batch), parse_workers=0))
    return state(db)


def one_by_one(mails: list[bytes]) -> list[list[bytes]]:
    return [[m] for m in mails]


def covers_last(mails: list[bytes]) -> list[bytes]:
    """Each cover letter after the patches of its posting (a common delivery order)."""
    covers = [m for m in mails if "0/" in header(m, "Subject").split("]")[0]]
    return [m for m in mails if m not in covers] + covers


def test_series_do_not_depend_on_batches_or_order_of_arrival(db, traffic):
    whole = arrived(db, [traffic])
    grouped = {s[0]: s[1] for s in whole["series"]}  # anchors of its versions: title
    assert len(grouped) == 11 and len(whole["versions"]) == 15
    assert "tools/mm: test the lru batching" in grouped.values()
    lru = next(s for s in whole["series"] if s[1] == "mm: batch lru updates")
    assert len(lru[0]) == 2 and lru[5] == "20261102-lru-1"  # v1's change-id: it came first
    assert "mm/vmscan: plan the scan in rounds" in grouped.values()  # v2 under v1's cover
    assert "mm/swap: a fix and a follow-up" in grouped.values()  # not with v1 and v3
    assert sorted(v[1] for v in whole["versions"] if v[3] == "block: bounce buffer direct I/O"
                  ) == [1, 2]  # titled by their cover letters; v2 read at the end of its own
    pieces = next(v for v in whole["versions"] if v[3] == "mm/compaction: in pieces")
    assert pieces[5:8] == (5, 5, True)  # expected, received, complete: the addition is in it
    assert (GONE.strip("<>"),) in grouped  # the posting sent first is named by it
    assert whole["trailers"]
    arrangements = {
        "one by one": one_by_one(traffic),
        "reversed": one_by_one(traffic[::-1]),
        "cover letters last": one_by_one(covers_last(traffic)),
        **{f"shuffled {seed}": one_by_one(random.Random(seed).sample(traffic, len(traffic)))
           for seed in range(3)},
        **{f"split at {k}": [traffic[:k], traffic[k:]] for k in range(1, len(traffic))},
        **{f"reversed, split at {k}": [traffic[::-1][:k], traffic[::-1][k:]]
           for k in range(1, len(traffic))},
    }
    for name, batches in arrangements.items():
        got = arrived(db, batches)
        for key in whole:
            assert got[key] == whole[key], (name, key, got[key] ^ whole[key])


def test_threads_with_inconsistent_references_do_not_depend_on_order_of_arrival(db):
    """Mail clients trim References, drop them, or reply from another view of a thread, so two
    mails of one discussion can name different roots. A message belongs with every message it
    names and every message that names it, whichever of them came first: a reply stored before
    the message it answers, which names another root, still ends in that message's thread."""
    when = functools.partial(day, 0)
    mails = [
        discussion_mail("a@x", when()),
        discussion_mail("b@x", when(), "a@x", "a@x"),
        # c answers b with its References cut to an unseen message and b
        discussion_mail("c@x", when(), "b@x", "elsewhere@x b@x"),
        # d answers c with In-Reply-To only
        discussion_mail("d@x", when(), "c@x"),
        # e answers a message never seen; f answers e, its References starting at another one
        discussion_mail("e@x", when(), "gone1@x", "gone1@x"),
        discussion_mail("f@x", when(), "e@x", "gone2@x e@x"),
        # g names f's root only deep in its References: one discussion with e and f
        discussion_mail("g@x", when(), "gone3@x", "gone3@x gone2@x"),
        # h is on its own
        discussion_mail("h@x", when(), "gone4@x", "gone4@x"),
    ]
    ids = [msgs_id(m) for m in mails]
    expected = {frozenset(ids[:4]), frozenset(ids[4:7]), frozenset(ids[7:])}
    orders = {"in order": mails, "reversed": mails[::-1],
              **{f"shuffled {seed}": random.Random(seed).sample(mails, len(mails))
                 for seed in range(6)}}
    for name, order in orders.items():
        for batches in (one_by_one(order), [order], [order[:3], order[3:]]):
            emptied(db)
            for batch in batches:
                store(db, batch, IngestSettings(batch_size=len(batch), parse_workers=0))
            assert thread_partition(db) == expected, (name, [len(b) for b in batches])
