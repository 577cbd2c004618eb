"""Missing context: a poll that sees patches without their cover letter fetches the thread."""

from __future__ import annotations

import datetime as dt
import email.utils
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.demo.threads import SeriesSpec, as_mbox, make_reply, make_series, make_tree
from bot.ingest.missing_context import REFETCH_AFTER, due
from tests.series.mailing import header, msgs_id, with_header
from tests.support.pi_server import LiveLorelab, PublicInbox, missing_reason

START = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)


def test_each_thread_is_fetched_at_most_once_an_hour() -> None:
    now = START
    fetched = {
        "a@x": (now - dt.timedelta(minutes=10)).isoformat(),
        "b@x": (now - REFETCH_AFTER - dt.timedelta(seconds=1)).isoformat(),
    }
    assert due(["a@x", "b@x", "c@x"], fetched, now) == ["b@x", "c@x"]


@pytest.fixture
def pi(tmp_path: Path) -> Iterator[PublicInbox]:
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    server = PublicInbox(tmp_path / "pi")
    yield server
    server.stop()


def test_cover_letter_outside_the_feed_is_fetched_with_its_thread(
    pi: PublicInbox, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "linux")
    series = make_series(
        tree, SeriesSpec(title="mm: cover letter out of the feed", patches=2, start_date=START)
    )
    other = make_series(tree, SeriesSpec(title="mm: another topic", patches=1, cover=False,
                                         author=("Bo", "bo@example.org"), start_date=START))
    # Thirty replies dated between the cover letter and its patches push the cover letter out
    # of new.atom (public-inbox shows the newest 25 or so).
    chatter = [
        make_reply(other[0], author=("Rita Reviewer", "rita@example.org"), body=f"Note {i}.",
                   date=START + dt.timedelta(seconds=i + 1))
        for i in range(30)
    ]
    mbox = tmp_path / "archive.mbox"
    mbox.write_bytes(as_mbox([series[0], *other, *chatter, *series[1:]]))
    pi.import_mbox(mbox)
    pi.start()

    lorelab = LiveLorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    shown = lorelab.json("series", "list", "--author", "ada")
    (version,) = shown[0]["versions"]
    assert version["cover_message_id"] is not None  # fetched with the thread
    assert version["complete"]
    # The next poll does not fetch the thread again within the hour.
    again = lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    assert again["stored"] == 0 and again["duplicates"] == 0


REVIEWER = ("Rita Reviewer", "rita@example.org")


def _review(patch: bytes, i: int, when: dt.datetime, dropped_re: bool) -> bytes:
    """Rita's review of `patch`; when `dropped_re`, her client kept the patch's own subject
    and she gives her Reviewed-by (b4's sign of a reply without "Re:")."""
    if not dropped_re:
        return make_reply(patch, author=REVIEWER, body=f"Point {i}.", date=when)
    review = make_reply(patch, author=REVIEWER, body=f"Point {i}.", date=when,
                        trailers=[f"Reviewed-by: {REVIEWER[0]} <{REVIEWER[1]}>"])
    return with_header(review, "Subject", header(patch, "Subject"))


@pytest.mark.parametrize("dropped_re", [False, True], ids=["re", "no-re"])
def test_the_first_poll_fetches_the_threads_of_replies_to_unseen_patches(
    pi: PublicInbox, tmp_path: Path, dropped_re: bool
) -> None:
    """A new list's feed holds only replies: to an open series, to one older than
    `[plan] max_age_days` (14), and in a discussion. The open series is known after the first
    poll, whether or not the replies' client kept "Re:"; the old one and the discussion are
    not fetched."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    tree = make_tree(tmp_path / "linux")
    open_series = make_series(tree, SeriesSpec(title="mm: open series", patches=3,
                                               start_date=now - dt.timedelta(days=16)))
    old = make_series(tree, SeriesSpec(title="mm: long ago", patches=2, cover=False,
                                       author=("Bo", "bo@example.org"),
                                       start_date=now - dt.timedelta(days=60)))
    reviews = [_review(open_series[1 + i % 3], i, now - dt.timedelta(days=1, minutes=i),
                       dropped_re) for i in range(20)]
    late = [make_reply(old[0], author=REVIEWER, body=f"Late note {i}.",
                       date=now - dt.timedelta(days=15, minutes=i)) for i in range(3)]
    discussion = (
        "From: Bo <bo@example.org>\nTo: linux-mm@kvack.org\nSubject: kswapd wakeups on idle nodes"
        f"\nDate: {email.utils.format_datetime(now - dt.timedelta(days=20))}\n"
        "Message-ID: <question@example.org>\n\nWhy does kswapd wake up on an idle node?\n"
    ).encode()
    chat = [make_reply(discussion, author=REVIEWER, body=f"Chat {i}.",
                       date=now - dt.timedelta(hours=2, minutes=i)) for i in range(2)]
    mbox = tmp_path / "archive.mbox"
    mbox.write_bytes(as_mbox([*old, *open_series, discussion, *late, *reviews, *chat]))
    pi.import_mbox(mbox)
    pi.start()

    lorelab = LiveLorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    first = lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    listed = lorelab.json("series", "list")
    assert [s["title"] for s in listed] == ["mm: open series"]
    (version,) = listed[0]["versions"]
    assert version["cover_message_id"] == msgs_id(open_series[0])
    assert version["complete"]
    # The feed's 25 and the open series' thread (its cover letter and patches); nothing else.
    assert first["stored"] == 25 + 4
    # The next poll fetches nothing again.
    again = lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
    assert again["stored"] == 0 and again["duplicates"] == 0
