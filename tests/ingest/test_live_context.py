"""Missing context: a poll that sees patches without their cover letter fetches the thread."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.demo.threads import SeriesSpec, as_mbox, make_reply, make_series, make_tree
from bot.ingest.missing_context import REFETCH_AFTER, due
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
