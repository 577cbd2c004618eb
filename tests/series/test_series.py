"""Series assembly on real `git format-patch` threads, on SQLite and PostgreSQL.

Each case is one that real lists produce; the assertions are what `lorelab series show --json`
would tell a maintainer.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from pathlib import Path

import pytest

from bot.config import IngestSettings
from bot.demo.threads import (
    SeriesSpec,
    default_changes,
    make_reply,
    make_series,
    make_tree,
)
from tests.series.mailing import all_series, header, msgs_id, only_series, store, with_header

REVIEWER = ("Rita Reviewer", "rita@example.org")
MAINTAINER = ("Andrew Maintainer", "akpm@example.org")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def test_cover_letter_and_shallow_threading(db, tree, ingest_settings):
    spec = SeriesSpec(title="mm: batch lru_gen counter updates", patches=3)
    msgs = make_series(tree, spec)
    summary = store(db, msgs, ingest_settings)
    assert summary.stored == 4 and summary.quarantined == 0
    s = only_series(db)
    assert s["title"] == "mm: batch lru_gen counter updates"
    assert s["author"]["email"] == "ada@example.org"
    assert s["lists"] == ["linux-mm"]
    (v1,) = s["versions"]
    assert (v1["version"], v1["expected"], v1["received"], v1["complete"]) == (1, 3, 3, True)
    assert v1["cover_message_id"] == msgs_id(msgs[0])
    assert v1["base_commit"] and len(v1["base_commit"]) == 40
    assert [p["index"] for p in v1["patches"]] == [1, 2, 3]
    assert all(p["files"] for p in v1["patches"])
    assert {f for p in v1["patches"] for f in p["files"]} <= {
        "mm/vmscan.c", "mm/swap.c", "mm/workingset.c", "include/linux/mmzone.h",
    }


@pytest.mark.parametrize("threading", ["shallow", "deep", "none"])
def test_without_cover_letter(db, tree, ingest_settings, threading):
    spec = SeriesSpec(title="mm/vmscan: tidy up", patches=3, cover=False, threading=threading)
    store(db, make_series(tree, spec), ingest_settings)
    (v1,) = only_series(db)["versions"]
    assert v1["cover_message_id"] is None
    assert (v1["received"], v1["complete"]) == (3, True)


def test_deep_threading_with_cover(db, tree, ingest_settings):
    spec = SeriesSpec(title="mm: deep thread", patches=4, threading="deep")
    store(db, make_series(tree, spec), ingest_settings)
    (v1,) = only_series(db)["versions"]
    assert v1["cover_message_id"] and v1["complete"] and v1["received"] == 4


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_patches_before_cover_letter_in_any_order(db, tree, seed):
    spec = SeriesSpec(title="mm: out of order", patches=4, threading="deep")
    msgs = make_series(tree, spec)
    random.Random(seed).shuffle(msgs)
    # One message per transaction: each arrives as a separate delivery would.
    store(db, msgs, IngestSettings(batch_size=1))
    (v1,) = only_series(db)["versions"]
    assert v1["cover_message_id"] is not None
    assert (v1["received"], v1["complete"]) == (4, True)


def test_cover_letter_arriving_last_is_attached(db, tree, ingest_settings):
    spec = SeriesSpec(title="mm: cover comes last", patches=2)
    msgs = make_series(tree, spec)
    store(db, msgs[1:], ingest_settings)
    (v1,) = only_series(db)["versions"]
    assert v1["cover_message_id"] is None and v1["complete"]
    store(db, msgs[:1], ingest_settings)
    (v1,) = only_series(db)["versions"]
    assert v1["cover_message_id"] == msgs_id(msgs[0])


def test_cover_letter_version_differs_from_patches(db, tree, ingest_settings):
    # The author regenerated the cover letter as v2 but sent patches made without -v2.
    spec = SeriesSpec(title="mm: forgot the version", patches=2, version=2)
    msgs = make_series(tree, spec)
    msgs[1:] = [m.replace(b"[PATCH v2 ", b"[PATCH ") for m in msgs[1:]]
    store(db, msgs, ingest_settings)
    (v,) = only_series(db)["versions"]
    assert (v["version"], v["received"], v["complete"]) == (2, 2, True)

    # And an explicit disagreement: cover letter v3, patches v2; the cover letter wins, noted.
    spec3 = SeriesSpec(title="mm: cover says three", patches=2, version=2)
    msgs3 = make_series(tree, spec3)
    msgs3[0] = msgs3[0].replace(b"[PATCH v2 0/2]", b"[PATCH v3 0/2]")
    store(db, msgs3, ingest_settings)
    other = next(s for s in all_series(db) if s["title"] == "mm: cover says three")
    (v,) = other["versions"]
    assert v["version"] == 3 and v["complete"]
    assert any("v3" in n and "v2" in n for n in v["notes"])


def test_new_version_threaded_under_old_one(db, tree, ingest_settings):
    v1spec = SeriesSpec(title="mm: reclaim batching", patches=2)
    v1 = make_series(tree, v1spec)
    v2spec = SeriesSpec(title="mm: reclaim batching", patches=2, version=2,
                        in_reply_to=f"<{msgs_id(v1[0])}>", same_changes_as=v1spec, revised=(2,))
    v2 = make_series(tree, v2spec)
    store(db, v1 + v2, ingest_settings)
    s = only_series(db)
    assert [v["version"] for v in s["versions"]] == [1, 2]
    assert all(v["complete"] for v in s["versions"])
    assert s["versions"][1]["cover_message_id"] == msgs_id(v2[0])


def _single_patch(tree: Path, title: str, date: dt.datetime, in_reply_to: str | None = None,
                  pick: int = 0) -> list[bytes]:
    """A `[PATCH]` titled `title` (the `pick`th of two different changes)."""
    change = dataclasses.replace(default_changes("single", 2)[pick], subject=title)
    return make_series(tree, SeriesSpec(
        title=title, patches=1, cover=False, start_date=date, changes=(change,),
        in_reply_to=f"<{in_reply_to}>" if in_reply_to else None))


def test_a_patch_sent_beside_a_version_in_reply_to_it_is_no_version_of_it(
    db, tree, ingest_settings
):
    # Coly Li's badblocks v2 (nvdimm): the run that sent `[PATCH v2 0/3]` and its patches also
    # sent the user-space test program, a `[PATCH]` of its own title, in reply to the cover
    # letter. It was the series' "v1"; it is a series of its own.
    start = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
    v2 = make_series(tree, SeriesSpec(title="badblocks: multiple ranges", patches=3, version=2,
                                      start_date=start))
    test = _single_patch(tree, "test: user space code to test badblocks APIs",
                         start + dt.timedelta(minutes=4), in_reply_to=msgs_id(v2[0]))
    store(db, v2 + test, ingest_settings)
    shown = {s["title"]: [(v["version"], v["received"], v["complete"]) for v in s["versions"]]
             for s in all_series(db)}
    assert shown == {"badblocks: multiple ranges": [(2, 3, True)],
                     "test: user space code to test badblocks APIs": [(1, 1, True)]}


def test_one_runs_unrelated_patches_threaded_together_are_series_of_their_own(
    db, tree, ingest_settings
):
    # Yang Li's two `[PATCH -next]`es (nvdimm): one `git send-email` run, the second in reply to
    # the first. Each is a series under its own title, not two versions of the second's.
    start = dt.datetime(2026, 11, 3, 9, 0, tzinfo=dt.UTC)
    first = _single_patch(tree, "nvdimm: fix some kernel-doc comments", start)
    second = _single_patch(tree, "nvdimm: make security_show() static",
                           start + dt.timedelta(seconds=1), in_reply_to=msgs_id(first[0]), pick=1)
    store(db, first + second, ingest_settings)
    shown = {s["title"]: [v["patches"][0]["message_id"] for v in s["versions"]]
             for s in all_series(db)}
    assert shown == {"nvdimm: fix some kernel-doc comments": [msgs_id(first[0])],
                     "nvdimm: make security_show() static": [msgs_id(second[0])]}


def test_a_retitled_version_threaded_under_the_last_is_one_series(db, tree, ingest_settings):
    # The same version sent again under a new title by a later run, in reply to the first (an
    # RFC made a PATCH, retitled): one series, by threading alone.
    start = dt.datetime(2026, 11, 4, 9, 0, tzinfo=dt.UTC)
    rfc_spec = SeriesSpec(title="mm: an idea", patches=2, subject_prefix="RFC PATCH",
                          start_date=start)
    rfc = make_series(tree, rfc_spec)
    patch = make_series(tree, SeriesSpec(
        title="mm/vmscan: the idea, done", patches=2, start_date=start + dt.timedelta(days=3),
        in_reply_to=f"<{msgs_id(rfc[0])}>", same_changes_as=rfc_spec))
    store(db, rfc + patch, ingest_settings)
    s = only_series(db)
    assert s["title"] == "mm/vmscan: the idea, done"
    assert [(v["version"], v["rfc"]) for v in s["versions"]] == [(1, True), (1, False)]


def test_a_cover_letter_counting_other_patches_than_were_numbered_is_theirs(
    db, tree, ingest_settings
):
    # Luis Chamberlain's `[PATCH v6 0/8]` over `1/6`..`6/6` (linux-block): two patches had gone
    # into another series, the letter kept its count. The version is complete, and says why.
    sent = make_series(tree, SeriesSpec(title="block: fix blktrace use after free", patches=3,
                                        version=6))
    sent[0] = sent[0].replace(b"[PATCH v6 0/3]", b"[PATCH v6 0/5]", 1)
    store(db, sent, ingest_settings)
    (v,) = only_series(db)["versions"]
    assert (v["version"], v["expected"], v["received"], v["complete"]) == (6, 3, 3, True)
    assert v["notes"] == ["the cover letter counts 5 patches, the patches 3"]


def test_mixed_versions_in_one_thread_without_cover(db, tree, ingest_settings):
    v1spec = SeriesSpec(title="mm: two versions, one thread", patches=2, cover=False)
    v1 = make_series(tree, v1spec)
    v2spec = SeriesSpec(title="mm: two versions, one thread", patches=2, cover=False, version=2,
                        in_reply_to=f"<{msgs_id(v1[0])}>", same_changes_as=v1spec)
    v2 = make_series(tree, v2spec)
    review = make_reply(v1[1], author=REVIEWER, body="Looks fine.",
                        trailers=["Reviewed-by: Rita Reviewer <rita@example.org>"])
    store(db, v1 + [review] + v2, ingest_settings)
    s = only_series(db)
    assert [(v["version"], v["received"], v["complete"]) for v in s["versions"]] == [
        (1, 2, True), (2, 2, True),
    ]


def test_same_series_sent_to_two_lists(db, tree, ingest_settings):
    msgs = make_series(tree, SeriesSpec(title="mm: cross-posted", patches=2))
    first = store(db, msgs, ingest_settings, list_name="linux-mm")
    second = store(db, msgs, ingest_settings, list_name="linux-kernel")
    assert (first.stored, second.stored, second.duplicates) == (3, 0, 3)
    s = only_series(db)
    assert s["lists"] == ["linux-kernel", "linux-mm"]
    assert len(s["versions"]) == 1


def test_unnumbered_single_patches_are_separate_series(db, tree, ingest_settings):
    a = make_series(tree, SeriesSpec(title="mm: one fix", patches=1, cover=False))
    b = make_series(tree, SeriesSpec(title="mm: another fix", patches=1, cover=False,
                                     author=REVIEWER))
    assert b"[PATCH] " in a[0]
    store(db, a + b, ingest_settings)
    found = all_series(db)
    assert len(found) == 2
    assert {s["author"]["email"] for s in found} == {"ada@example.org", "rita@example.org"}
    for s in found:
        (v,) = s["versions"]
        assert (v["expected"], v["received"], v["complete"]) == (1, 1, True)
        # With no cover letter the patch's own subject is the series title.
        assert v["patches"][0]["subject"].endswith(s["title"])


def test_incomplete_series(db, tree, ingest_settings):
    msgs = make_series(tree, SeriesSpec(title="mm: lost a patch", patches=3))
    store(db, [msgs[0], msgs[1], msgs[3]], ingest_settings)
    (v,) = only_series(db)["versions"]
    assert (v["received"], v["expected"], v["complete"], v["missing"]) == (2, 3, False, [2])
    store(db, [msgs[2]], ingest_settings)
    (v,) = only_series(db)["versions"]
    assert v["complete"] and v["missing"] == []


def test_resend_and_rfc(db, tree, ingest_settings):
    rfc = make_series(tree, SeriesSpec(title="mm: an idea", patches=2, subject_prefix="RFC PATCH"))
    store(db, rfc, ingest_settings)
    (v,) = only_series(db)["versions"]
    assert v["rfc"] and not v["resend"]
    spec = SeriesSpec(title="mm: nobody answered", patches=2, author=REVIEWER)
    original = make_series(tree, spec)
    resent = make_series(tree, SeriesSpec(title="mm: nobody answered", patches=2,
                                          author=REVIEWER, subject_prefix="RESEND PATCH",
                                          same_changes_as=spec))
    store(db, original + resent, ingest_settings)
    s = next(s for s in all_series(db) if s["title"] == "mm: nobody answered")
    assert [(v["version"], v["resend"]) for v in s["versions"]] == [(1, False), (1, True)]


def test_trailers_from_replies_and_carried_to_next_version(db, tree, ingest_settings):
    v1spec = SeriesSpec(title="mm: trailers travel", patches=2, change_id="20261130-trailers-1")
    v1 = make_series(tree, v1spec)
    ack_all = make_reply(v1[0], author=MAINTAINER, body="Nice.",
                         trailers=["Acked-by: Andrew Maintainer <akpm@example.org>"])
    review_2 = make_reply(v1[2], author=REVIEWER, body="One nit, otherwise",
                          trailers=["Reviewed-by: Rita Reviewer <rita@example.org>"])
    # v2 changes patch 1 only, sent as a new thread; change-id links it to v1.
    v2spec = SeriesSpec(title="mm: trailers travel further", patches=2, version=2,
                        change_id="20261130-trailers-1", same_changes_as=v1spec, revised=(1,))
    v2 = make_series(tree, v2spec)
    store(db, v1 + [ack_all, review_2] + v2, ingest_settings)
    s = only_series(db)
    assert s["title"] == "mm: trailers travel further"
    assert s["change_id"] == "20261130-trailers-1"
    v1d, v2d = s["versions"]

    def names(patch: dict, origin: str) -> set[str]:
        return {f"{t['name']}: {t['value']}" for t in patch["trailers"] if t["origin"] == origin}

    acked = "Acked-by: Andrew Maintainer <akpm@example.org>"
    reviewed = "Reviewed-by: Rita Reviewer <rita@example.org>"
    assert names(v1d["patches"][0], "cover") == {acked}
    assert names(v1d["patches"][1], "cover") == {acked}
    assert names(v1d["patches"][1], "reply") == {reviewed}
    assert names(v1d["patches"][0], "reply") == set()
    # Patch 2 did not change: its trailers come along; patch 1 changed: they do not.
    assert names(v2d["patches"][1], "carried") == {acked, reviewed}
    assert names(v2d["patches"][0], "carried") == set()



def _given(patch: dict) -> set[str]:
    """The trailers others gave a patch, as `series show` lists them."""
    return {f"{t['name']}: {t['value']}" for t in patch["trailers"] if t["origin"] != "own"}


def test_trailers_from_a_reply_whose_client_dropped_re(db, tree, ingest_settings):
    """Some clients answer with the patch's own subject, no "Re:"; b4 still takes the reply's
    trailers, and so does `series show`, in replies to the patch and to the cover letter."""
    msgs = make_series(tree, SeriesSpec(title="mm: answered without Re", patches=2))
    acked = make_reply(msgs[0], author=MAINTAINER, body="Fine by me.",
                       trailers=["Acked-by: Andrew Maintainer <akpm@example.org>"])
    reviewed = make_reply(msgs[2], author=REVIEWER, body="Looks right.",
                          trailers=["Reviewed-by: Rita Reviewer <rita@example.org>"])
    acked = with_header(acked, "Subject", header(msgs[0], "Subject"))
    reviewed = with_header(reviewed, "Subject", header(msgs[2], "Subject"))
    store(db, msgs + [acked, reviewed], ingest_settings)
    first, second = only_series(db)["versions"][0]["patches"]
    assert _given(first) == {"Acked-by: Andrew Maintainer <akpm@example.org>"}
    assert _given(second) == {"Acked-by: Andrew Maintainer <akpm@example.org>",
                              "Reviewed-by: Rita Reviewer <rita@example.org>"}


def test_a_reply_gives_only_its_senders_trailers(db, tree, ingest_settings):
    """A reply's Reviewed-by naming someone else is not that person's review (b4 leaves it
    out unless told to be sloppy); the sender's own under another address of theirs, or with
    the name written otherwise, is; a Fixes: or Closes: is nobody's and always counts."""
    msgs = make_series(tree, SeriesSpec(title="mm: whose review is it", patches=1))
    patch = msgs[0]
    replies = [
        make_reply(patch, author=REVIEWER, body="On behalf of a colleague:",
                   trailers=["Reviewed-by: Linus Torvalds <torvalds@linux-foundation.org>"]),
        make_reply(patch, author=("Rita Reviewer", "rita+lkml@example.org"), body="Works.",
                   trailers=["Tested-by: Rita Reviewer <rita@example.org>"]),
        make_reply(patch, author=("Ken Kernel", "ken@linux.intel.com"), body="Good.",
                   trailers=["Acked-by: K. Kernel <ken@intel.com>"]),
        make_reply(patch, author=("Doe, Jane", "jdoe@corp.example"), body="Right.",
                   trailers=["Reviewed-by: Jane Doe <jane@home.example>"]),
        make_reply(patch, author=("Sam Other", "sam@example.net"), body="This breaks reclaim.",
                   trailers=["Fixes: 0123456789ab (\"mm: something\")",
                             "Closes: https://lore.kernel.org/r/bug@example.net",
                             "Reported-by: Bot Robot <bot@example.com>"]),
    ]
    store(db, msgs + replies, ingest_settings)
    (only,) = only_series(db)["versions"][0]["patches"]
    assert _given(only) == {
        "Tested-by: Rita Reviewer <rita@example.org>",
        "Acked-by: K. Kernel <ken@intel.com>",
        "Reviewed-by: Jane Doe <jane@home.example>",
        'Fixes: 0123456789ab ("mm: something")',
        "Closes: https://lore.kernel.org/r/bug@example.net",
    }


def test_reingesting_is_a_no_op(db, tree, ingest_settings):
    msgs = make_series(tree, SeriesSpec(title="mm: idempotent", patches=2))
    store(db, msgs, ingest_settings)
    before = all_series(db)
    again = store(db, msgs, ingest_settings)
    assert (again.stored, again.duplicates, again.series_created) == (0, 3, 0)
    assert all_series(db) == before


def test_new_version_arriving_before_the_one_it_replies_to(db, tree, ingest_settings):
    # A v2 single patch sent in reply to v1, delivered before v1 (a slow list server): v2 first
    # hangs from the missing v1; when v1 arrives, each version keeps its own patch.
    v1spec = SeriesSpec(title="mm: single patch", patches=1, cover=False)
    v1 = make_series(tree, v1spec)
    v2spec = SeriesSpec(title="mm: single patch", patches=1, cover=False, version=2,
                        in_reply_to=f"<{msgs_id(v1[0])}>", same_changes_as=v1spec, revised=(1,))
    v2 = make_series(tree, v2spec)
    store(db, v2, ingest_settings)
    store(db, v1, ingest_settings)
    s = only_series(db)
    assert [(v["version"], v["patches"][0]["message_id"]) for v in s["versions"]] == [
        (1, msgs_id(v1[0])), (2, msgs_id(v2[0])),
    ]
