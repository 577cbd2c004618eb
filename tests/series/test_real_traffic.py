"""Series as authors really send them, on SQLite and PostgreSQL.

Each test is a pattern found where lorelab and b4 disagreed on a real vger list's archive and
lorelab was wrong; the threads are `git format-patch` output sent the way `git send-email` (or
`hg email`) sends it, with what the author did differently. The assertions are what
`lorelab series show --json` tells a maintainer.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import random
import re
from collections.abc import Callable
from email.header import Header
from email.utils import format_datetime, parsedate_to_datetime

import pytest
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import SeriesVersion
from bot.demo.threads import (
    DEFAULT_POOL,
    DEFAULT_START,
    EDITS,
    SeriesSpec,
    make_reply,
    make_series,
    make_tree,
    series_changes,
)
from bot.report.compose.from_db import series_info
from bot.series.mbox import am_ready_mbox
from tests.cli import Lorelab
from tests.series.mailing import (
    all_series,
    emptied,
    header,
    msgs_id,
    only_series,
    send_email,
    sent_as_addition,
    store,
    thread_partition,
    untagged,
    with_body,
    with_header,
)

Make = Callable[[SeriesSpec], list[bytes]]


@pytest.fixture(scope="module")
def make(tmp_path_factory: pytest.TempPathFactory) -> Make:
    """`make_series` on one tree, each spec made once for both databases."""
    tree = make_tree(tmp_path_factory.mktemp("tree") / "linux")

    @functools.cache
    def made(spec: SeriesSpec) -> tuple[bytes, ...]:
        return tuple(make_series(tree, spec))

    return lambda spec: list(made(spec))


def ids(messages: list[bytes]) -> list[str]:
    return [msgs_id(m) for m in messages]


def shape(version: dict) -> tuple:
    """A version as a maintainer sees it: number, cover letter, patches in order, complete."""
    return (
        version["version"],
        version["cover_message_id"],
        [p["message_id"] for p in version["patches"]],
        version["complete"],
    )


def reply_to(messages: list[bytes]) -> str:
    return f"<{msgs_id(messages[0])}>"


V1 = SeriesSpec(title="mm: reclaim in larger batches", patches=3)


def test_single_v2_patch_in_reply_to_the_v1_cover_letter(db, make, ingest_settings):
    v1 = make(V1)
    # v2 reworks patch 1 only and is sent alone, as a reply to the v1 cover letter.
    v2 = make(SeriesSpec(title="mm: reclaim in larger batches v2", patches=1, cover=False,
                         version=2, in_reply_to=reply_to(v1),
                         changes=(series_changes(V1)[0].revised(),)))
    assert header(v2[0], "Subject").startswith("[PATCH v2] ")
    store(db, v1 + v2, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True),
        (2, None, ids(v2), True),
    ]
    assert s["title"] == V1.title  # the cover letter's, not the lone patch's


def test_unversioned_cover_and_version_after_the_counter_in_one_thread(
    db, make, ingest_settings
):
    v1spec = SeriesSpec(title="mm: sixteen small reclaim changes", patches=16)
    v1 = make(v1spec)
    assert header(v1[0], "Subject").startswith("[PATCH 00/16] ")
    v2 = make(SeriesSpec(title="mm: sixteen small reclaim changes", patches=3, cover=False,
                         version=2, in_reply_to=reply_to(v1), same_changes_as=v1spec,
                         revised=(2,)))
    # The author's tool writes the version after the counter: [PATCH 1/3][V2].
    v2 = [m.replace(f"[PATCH v2 {i}/3]".encode(), f"[PATCH {i}/3][V2]".encode())
          for i, m in enumerate(v2, start=1)]
    assert header(v2[0], "Subject").startswith("[PATCH 1/3][V2] ")
    store(db, v1 + v2, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True),
        (2, None, ids(v2), True),
    ]


TWELVE = SeriesSpec(title="mm: batch lru updates", patches=9)


def v2_with_stale_files(make: Make) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """v1 (0/9 .. 9/9) as posted, and the one `git send-email *.patch` run that sent v2
    (00/12 .. 12/12) with v1's files still in the folder: those sort first (0000-cover-letter
    before v2-0000-cover-letter), so the stale cover letter heads the thread."""
    v1 = make(dataclasses.replace(TWELVE, threading="none"))
    v2 = make(SeriesSpec(title="mm: batch lru updates", patches=12, version=2,
                         threading="none", same_changes_as=TWELVE, revised=(4,)))
    sent = send_email(v1 + v2, start=dt.datetime(2026, 12, 14, 9, 0, tzinfo=dt.UTC))
    # v1 as it was posted a week before: threaded under its cover letter.
    posted = send_email(v1, start=dt.datetime(2026, 12, 7, 9, 0, tzinfo=dt.UTC))
    return posted, sent[:10], sent[10:]


def test_v2_sent_with_stale_files_of_an_earlier_revision(db, make, ingest_settings):
    posted, stale, v2 = v2_with_stale_files(make)
    assert header(stale[0], "Subject").startswith("[PATCH 0/9] ")
    assert header(v2[0], "Subject").startswith("[PATCH v2 00/12] ")
    store(db, posted + stale + v2, ingest_settings)
    s = only_series(db)
    # The stale files are what they are, v1 sent again; v2 is v2 alone.
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(posted[0]), ids(posted[1:]), True),
        (1, msgs_id(stale[0]), ids(stale[1:]), True),
        (2, msgs_id(v2[0]), ids(v2[1:]), True),
    ]
    assert s["title"] == "mm: batch lru updates"


def test_stale_files_in_any_order_of_arrival(db, make):
    _, stale, v2 = v2_with_stale_files(make)
    sent = stale + v2
    random.Random(7).shuffle(sent)
    # One message per transaction, the thread's first message among the last to arrive.
    store(db, sent, IngestSettings(batch_size=1))
    # The postings converge, and so does their series: one, as when they come in order.
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(stale[0]), ids(stale[1:]), True),
        (2, msgs_id(v2[0]), ids(v2[1:]), True),
    ]
    assert s["title"] == "mm: batch lru updates"


def file_name(message: bytes) -> str:
    """The name `git format-patch -v2` gave the file a message was sent from."""
    match = re.fullmatch(r"\[PATCH v2 (\d+)/\d+\] (.*)", header(message, "Subject"))
    assert match is not None
    return f"v2-{int(match[1]):04d}-{re.sub(r'[^A-Za-z0-9._]+', '-', match[2])}.patch"


def test_a_number_sent_twice_is_the_patch_the_cover_letter_lists(db, make, ingest_settings):
    """`git send-email v2-*.patch` on a folder that still holds an earlier run of the same size
    in the other order (secretmem v2 on linux-api and linux-arch, "per memcg lru lock" v10 on
    cgroups): each number twice, in file-name order, so the earlier run's copy comes first at
    one number and last at the other. The version is the patches its cover letter lists;
    before, the later copy of each number mixed the two runs into a version that does not
    apply."""
    spec = SeriesSpec(title="mm: secretmem fast path", patches=2, version=2, threading="none")
    new = make(spec)
    first, second = series_changes(spec)
    old = make(dataclasses.replace(spec, changes=(second.revised(), first)))
    # format-patch wrote the new cover letter over the old one: one `v2-0000-cover-letter`
    files = [new[0], *sorted(new[1:] + old[1:], key=file_name)]
    # the new run's copy first at one number only
    assert sorted(files.index(m) < files.index(o)
                  for m, o in zip(new[1:], old[1:], strict=True)) == [False, True]
    sent = send_email(files, start=dt.datetime(2026, 12, 14, 9, 0, tzinfo=dt.UTC))
    store(db, sent, ingest_settings)
    (version,) = only_series(db)["versions"]
    meant = [sent[files.index(m)] for m in new[1:]]
    assert shape(version) == (2, msgs_id(sent[0]), ids(meant), True)
    assert [n.endswith("the one the cover letter lists") for n in version["notes"]] == [True] * 2
    with db.session() as session:  # and a run applies them
        stored = session.scalars(sa.select(SeriesVersion)).one()
        mbox = am_ready_mbox(session, stored).decode()
    assert re.findall(r"^Subject: \[PATCH v2 (\d)/2\] (.*)$", mbox, re.M) == [
        ("1", first.subject), ("2", second.subject)]


def test_a_posting_sent_twice_by_one_run_is_its_first_copy_which_the_reviews_answer(
    db, make, ingest_settings
):
    """`git send-email` given the files twice (kasan-dev: "followups to debug_pagealloc
    improvements through page_owner"; linux-ext4, cgroups): cover letter and patches, then all
    of them again, each in reply to the first message. The review answers the first copy of
    1/3; before, the version took the later copies and the review's Acked-by was lost."""
    files = make(V1)
    sent = send_email(files + files, start=dt.datetime(2026, 12, 14, 9, 0, tzinfo=dt.UTC))
    review = make_reply(sent[1], author=("Rita Reviewer", "rita@example.org"),
                        body="Looks right.\n\nAcked-by: Rita Reviewer <rita@example.org>")
    store(db, [*sent, review], ingest_settings)
    (version,) = only_series(db)["versions"]
    assert shape(version) == (1, msgs_id(sent[0]), ids(sent[1:4]), True)
    assert version["notes"] == [f"patch {i}/3 was sent twice, the same patch; using "
                                f"{msgs_id(sent[i])}, the first copy" for i in (1, 2, 3)]
    given = version["patches"][0]["trailers"]
    assert [(t["name"], t["value"], t["origin"]) for t in given if t["origin"] != "own"] == [
        ("Acked-by", "Rita Reviewer <rita@example.org>", "reply")]


def test_every_patch_sent_again_later_under_the_cover_letter_is_a_posting_of_its_own(
    db, make, ingest_settings
):
    """The whole series sent again months later in reply to its old cover letter (Jan Kara's
    bfq fixes and "block: Make blkdev_get_by_*() return handle" on linux-block: his cover
    letters keep their Message-ID from one version to the next). Before, each later patch
    took its number's place as a correction, and the version (tested already, in a live bot)
    held patches it was not tested with; the later set was never tested."""
    first = send_email(make(V1), start=dt.datetime(2026, 6, 5, 14, 0, tzinfo=dt.UTC))
    later = send_email(make(V1)[1:], start=dt.datetime(2027, 1, 13, 10, 0, tzinfo=dt.UTC))
    later = [with_header(with_header(m, "In-Reply-To", reply_to(first)), "References",
                         reply_to(first)) for m in later]
    store(db, first + later, ingest_settings)
    shown = only_series(db)["versions"]
    assert [shape(v) for v in shown] == [(1, msgs_id(first[0]), ids(first[1:]), True),
                                         (1, None, ids(later), True)]
    assert shown[1]["notes"] == [f"all its patches were sent again, in reply to the cover letter "
                                 f"{msgs_id(first[0])} of an earlier posting: a posting of its own"]


@pytest.mark.parametrize(("cc", "arrival"), [("all", "in order"), ("patch 2", "in order"),
                                             ("all", "letter last, alone")])
def test_a_cover_letter_sent_again_under_an_earlier_versions_id_is_its_patches_cover_letter(
    db, make, ingest_settings, cc, arrival
):
    """Jan Kara's "block: Make blkdev_get_by_*() return handle": `[PATCH v4 0/29]` a month
    after v3, under v3's cover letter's Message-ID, its patches (`[PATCH 01/29]`.., no version)
    in reply to that id. lorelab keeps the v4 letter as a copy in a thread of its own, and the
    patches went to v3's thread: on linux-block v4 was a cover-less posting titled by its patch
    1, a series apart from v3; on linux-raid, Cc'd on 11/29 only, v4's 11/29 replaced v3's as a
    correction and v3 held a patch it was not sent with. Now the copy is v4's cover letter."""
    v3spec = SeriesSpec(title="block: Make blkdev_get_by_*() return handle", patches=3,
                        version=3)
    v4spec = dataclasses.replace(v3spec, version=4, same_changes_as=v3spec, revised=(2,))

    def untagged_patches(files: list[bytes], version: int) -> list[bytes]:
        return [files[0], *(m.replace(f"[PATCH v{version} ".encode(), b"[PATCH ", 1)
                            for m in files[1:])]

    v3 = send_email(untagged_patches(make(v3spec), 3),
                    start=dt.datetime(2026, 8, 23, 10, 48, tzinfo=dt.UTC))
    v4 = send_email(untagged_patches(make(v4spec), 4),
                    start=dt.datetime(2026, 9, 27, 9, 34, tzinfo=dt.UTC))
    v4 = [with_header(v4[0], "Message-ID", reply_to(v3)),
          *(with_header(with_header(m, "In-Reply-To", reply_to(v3)), "References", reply_to(v3))
            for m in v4[1:])]
    if cc == "patch 2":
        v3, v4 = [v3[0], v3[2]], [v4[0], v4[2]]
    if arrival == "in order":
        store(db, v3 + v4, ingest_settings)
    else:  # the letter's copy stored after the patches sent with it, in a batch of its own
        store(db, v3 + v4[1:], ingest_settings)
        store(db, v4[:1], ingest_settings)
    s = only_series(db)
    assert s["title"] == v3spec.title
    earlier, later = s["versions"]
    assert shape(earlier) == (3, msgs_id(v3[0]), ids(v3[1:]), cc == "all")
    assert later["version"] == 4 and later["cover_message_id"].endswith("@copy.lorelab.invalid")
    assert [p["message_id"] for p in later["patches"]] == ids(v4[1:])
    assert later["complete"] == (cc == "all")
    assert later["url"] == f"https://lore.kernel.org/r/{msgs_id(v3[0])}"  # as lore knows it
    assert (f"its cover letter was sent again under the Message-ID of an earlier posting's, "
            f"{msgs_id(v3[0])}, in a thread of its own; the patches sent with it, in reply to "
            "that id, are its own") in later["notes"]
    if cc == "all":  # what a run of v4 applies: v4's patches, with v4's letter among the mails
        with db.session() as session:
            version = session.get(SeriesVersion, later["id"])
            mbox = am_ready_mbox(session, version)
            assert version.cover.subject.startswith("[PATCH v4 0/3]")
        assert [header(b"Subject: " + m.split(b"\n\n", 1)[0], "Subject")
                for m in mbox.split(b"\nSubject: ")[1:]] == [header(m, "Subject")
                                                              for m in v4[1:]]


@pytest.mark.parametrize("how", ["written later", "files out of order"])
def test_a_cover_letter_sent_in_reply_to_a_patch_is_its_postings(db, make, ingest_settings, how):
    """Pavel Begunkov's "optimise sqe-to-req flags" (io-uring): two patches, then the cover
    letter 19 minutes later in reply to patch 1; mdadm's "Write Zeroes option" v5 (linux-raid):
    `git send-email` given the files in another order, the cover letter third, every mail in
    reply to the first file. Before, the version had no cover letter (titled by its patch 1)
    and the letter was a posting of its own with no patches."""
    files = make(V1)
    start = dt.datetime(2026, 12, 14, 9, 0, tzinfo=dt.UTC)
    if how == "written later":
        patches = send_email(files[1:], start=start)
        letter = send_email(files[:1], start=start + dt.timedelta(minutes=19))[0]
        letter = with_header(with_header(letter, "In-Reply-To", reply_to(patches)),
                             "References", reply_to(patches))
        sent, number = [*patches, letter], 1
    else:
        sent = send_email([files[2], files[0], files[1], files[3]], start=start)
        letter, patches, number = sent[1], [sent[2], sent[0], sent[3]], 2
    store(db, sent, ingest_settings)
    s = only_series(db)
    (version,) = s["versions"]
    assert shape(version) == (1, msgs_id(letter), ids(patches), True)
    assert s["title"] == V1.title
    assert version["notes"] == [f"its cover letter was sent in reply to its patch {number}, not "
                                "the patches in reply to it"]


def test_a_patch_sent_again_later_in_the_thread_is_still_the_correction(
    db, make, ingest_settings
):
    """The same patch under its number an hour later, its changelog corrected (the diff as
    before): the later copy, as rule 9 always took it; only one run's copies are duplicates."""
    files = make(V1)
    sent = send_email(files, start=dt.datetime(2026, 12, 14, 9, 0, tzinfo=dt.UTC))
    fixed = files[2].replace(b"\nSigned-off-by:", b"\nA clearer changelog.\n\nSigned-off-by:", 1)
    assert fixed != files[2]
    for name, value in (("In-Reply-To", reply_to(sent)), ("References", reply_to(sent)),
                        ("Message-ID", "<fixed-2@example.org>"),
                        ("Date", "Sun, 14 Dec 2026 10:00:00 +0000")):
        fixed = with_header(fixed, name, value)
    store(db, [*sent, fixed], ingest_settings)
    (version,) = only_series(db)["versions"]
    assert shape(version) == (1, msgs_id(sent[0]), [msgs_id(sent[1]), "fixed-2@example.org",
                                                    msgs_id(sent[3])], True)


@pytest.mark.parametrize("said", ["[PATCH v2 0/3]", "[PATCH 0/3]"])
def test_a_cover_letter_misnumbered_in_the_send_is_its_patches_cover_letter(
    db, make, ingest_settings, said
):
    """The author ran `git format-patch -v3` and left the cover letter saying v2, or no version
    (Lorenzo Stoakes's "mm: remove is_swap_[pte, pmd]()" v3 on linux-arch, Matthew Wilcox's
    `[PATCH v13b 00/18] Convert memcg to folios` over v13 patches on cgroups): v3 keeps its
    cover letter and is the third version of the series, not a series titled by its patch 1."""
    v1 = make(V1)
    v2 = make(SeriesSpec(title=V1.title, patches=3, version=2, same_changes_as=V1, revised=(1,)))
    v3 = make(SeriesSpec(title=V1.title, patches=3, version=3, same_changes_as=V1, revised=(2,)))
    v3[0] = v3[0].replace(b"[PATCH v3 0/3]", said.encode(), 1)
    assert header(v3[0], "Subject") == f"{said} {V1.title}"
    store(db, v1 + v2 + v3, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True),
        (2, msgs_id(v2[0]), ids(v2[1:]), True),
        (3, msgs_id(v3[0]), ids(v3[1:]), True),
    ]
    assert s["title"] == V1.title


@pytest.mark.parametrize(("letter", "numbered"), [("[PATCH v3 0/3]", 1), ("[PATCH v3]", 0)])
def test_patches_sent_without_numbers_are_numbered_as_their_cover_letter_lists_them(
    db, make, ingest_settings, letter, numbered
):
    """The author lost the numbers of some patches (memcg, writeback on cgroups: `[PATCH 0/3]`
    over `1/3` and two `[PATCH]`es), or of all and the cover letter's too (`[PATCH v3]
    mm/memfd: ...` over six `[PATCH v3]`es, linux-kselftest): one version, numbered as the
    cover letter's shortlog lists them, not a version per patch. A `[PATCH]` to another project
    sent beside them, which the letter does not list, stays a version of its own."""
    spec = SeriesSpec(title="mm: lost numbers", patches=3, version=3)
    sent = make(spec)
    sent[0] = sent[0].replace(b"[PATCH v3 0/3]", letter.encode(), 1)
    for i in range(numbered + 1, 4):
        sent[i] = sent[i].replace(f"[PATCH v3 {i}/3]".encode(), b"[PATCH v3]", 1)
    assert [header(m, "Subject")[:10] for m in sent[1:]] == (
        ["[PATCH v3 "] * numbered + ["[PATCH v3]"] * (3 - numbered))
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(spec))
    (beside,) = make(SeriesSpec(title="unused", patches=1, cover=False, changes=(spare,),
                                version=3, in_reply_to=reply_to(sent)))
    store(db, [*sent[:2], beside, *sent[:1:-1]], ingest_settings)  # 3 before 2
    versions = [shape(v) for s in all_series(db) for v in s["versions"]]
    assert sorted(versions, key=str) == sorted([
        (3, None, ids([beside]), True),
        (3, msgs_id(sent[0]), ids(sent[1:]), True),
    ], key=str)


def test_a_stale_single_patch_file_does_not_take_a_numbered_patchs_place(
    db, make, ingest_settings
):
    """`git send-email` of `0/5`..`5/5` in a folder that still held two `[PATCH v2 1/1]` files
    of an earlier split, one of them 5/5's patch under its title (Michael Tsirkin's "virtio:
    drop sizing vqs during init" v2, virtualization): the version is the five numbered patches,
    as sent, and each stale file a version of its own, not patch 5/5 "sent without a number"."""
    spec = SeriesSpec(title="virtio: drop sizing vqs", patches=5, version=2, threading="none")
    files = make(spec)
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(spec))
    stale = [make(SeriesSpec(title="unused", patches=1, cover=False, version=2,
                             threading="none", changes=(change,)))[0]
             for change in (spare, series_changes(spec)[4])]
    stale = [m.replace(b"[PATCH v2] ", b"[PATCH v2 1/1] ", 1) for m in stale]
    assert header(stale[1], "Subject") == header(files[5], "Subject").replace(" 5/5]", " 1/1]")
    sent = send_email([files[0], stale[0], files[1], stale[1], *files[2:]],
                      start=dt.datetime(2026, 12, 14, 9, 0, tzinfo=dt.UTC))
    numbered = [sent[2], *sent[4:]]
    store(db, sent, ingest_settings)
    versions = [shape(v) for s in all_series(db) for v in s["versions"]]
    assert sorted(versions, key=str) == sorted([
        (2, msgs_id(sent[0]), ids(numbered), True),
        (2, None, ids(sent[1:2]), True),
        (2, None, ids(sent[3:4]), True),
    ], key=str)


def test_one_patch_from_the_authors_other_address(db, make, ingest_settings):
    v1 = make(V1)
    # Patch 2 was sent from the author's work account: same name, another address.
    v1[2] = with_header(v1[2], "From", "Ada Reclaim <ada.reclaim@work.example.com>")
    store(db, v1, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [(1, msgs_id(v1[0]), ids(v1[1:]), True)]
    assert s["author"]["email"] == "ada@example.org"


RELAYS = {
    # kasan-dev's archive: Google Groups sends mail of strict-DMARC domains in its own name.
    "google-groups": lambda name, address: {
        "From": f"\"'{name}' via kasan-dev\" <kasan-dev@googlegroups.com>",
        "X-Original-From": f"{name} <{address}>",
        "Reply-To": f"{name} <{address}>",
    },
    # cgroups' archive: b4's web relay sends in its own name, with a devnull address.
    "b4-relay": lambda name, address: {
        "From": f"{name} via B4 Relay <devnull+{address.replace('@', '.')}@kernel.org>",
        "X-Original-From": f"{name} <{address}>",
        "Reply-To": address,
    },
}


@pytest.mark.parametrize("relay", RELAYS)
def test_series_sent_through_a_relay_are_their_authors(db, make, ingest_settings, relay):
    """Each author's series is the author's, not the relay's: apart from one another (Google
    Groups gives every author the group's address), and with the address a reply reaches."""
    bob = ("Bob Other", "bob@example.com")
    spare = tuple(c for c in DEFAULT_POOL if c not in series_changes(V1))[:3]
    v1 = make(V1)
    # Bob answers Ada's cover letter with three patches of his own, without a cover letter.
    other = make(SeriesSpec(title="unused", author=bob, patches=3, cover=False, changes=spare,
                            in_reply_to=reply_to(v1),
                            start_date=dt.datetime(2026, 12, 1, tzinfo=dt.UTC)))

    def relayed(mails: list[bytes], person: tuple[str, str]) -> list[bytes]:
        for name, value in RELAYS[relay](*person).items():
            mails = [with_header(m, name, value) for m in mails]
        return mails

    # Rita's review through the same relay gives her trailer: the sender is Rita, not the relay.
    review = make_reply(v1[2], author=("Rita Reviewer", "rita@example.org"), body="Fine.",
                        trailers=["Reviewed-by: Rita Reviewer <rita@example.org>"])
    store(db, relayed(v1, ("Ada Reclaim", "ada@example.org")) + relayed(other, bob)
          + relayed([review], ("Rita Reviewer", "rita@example.org")), ingest_settings)
    found = {s["author"]["email"]: s for s in all_series(db)}
    assert set(found) == {"ada@example.org", "bob@example.com"}
    assert found["ada@example.org"]["author"]["name"] == "Ada Reclaim"
    assert [shape(v) for v in found["ada@example.org"]["versions"]] == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True)
    ]
    assert [shape(v) for v in found["bob@example.com"]["versions"]] == [
        (1, None, ids(other), True)
    ]
    given = found["ada@example.org"]["versions"][0]["patches"][1]["trailers"]
    assert [(t["name"], t["value"]) for t in given if t["origin"] != "own"] == [
        ("Reviewed-by", "Rita Reviewer <rita@example.org>")
    ]


def test_patches_marked_for_tools_to_ignore_are_no_series(db, make, ingest_settings):
    """Sasha's AUTOSEL backports (148 of cgroups' archive's patches) ask patchwork to ignore
    them: no series, so nothing for the planner to test on the mm tree and answer."""
    autosel = make(SeriesSpec(title="unused", patches=3, cover=False,
                              subject_prefix="PATCH AUTOSEL 6.1"))
    assert header(autosel[0], "Subject").startswith("[PATCH AUTOSEL 6.1 1/3] ")
    store(db, [with_header(m, "X-Patchwork-Hint", "ignore") for m in autosel], ingest_settings)
    assert all_series(db) == []
    # The same patch unmarked is a patch.
    store(db, [with_header(autosel[0], "Message-ID", "<unmarked@example.org>")], ingest_settings)
    assert [len(v["patches"]) for s in all_series(db) for v in s["versions"]] == [1]


def test_a_trees_notice_and_an_answer_quoting_it_are_no_series(db, make, ingest_settings):
    """Greg's notices without patchwork's hint (stable's until 2021, `FAILED: patch "[PATCH] x"
    failed to apply to 4.9-stable tree`; his trees' still, `patch "x" added to usb-linus`; the
    commit below the note), linux-next's (`linux-next: manual merge of the X tree with the Y
    tree`, the fix-up below), and an answer from Chinese Outlook (`回复:`), which quotes the
    notice unquoted below `-----邮件原件-----` (linux-pm, linux-scsi, linux-usb,
    linux-wireless): none is a posting, so no series for the planner to test on the mm tree
    and answer. The patch itself is one."""
    patch = make(SeriesSpec(title="unused", patches=1, cover=False))[0]
    title = header(patch, "Subject").removeprefix("[PATCH] ")
    commit = patch.split(b"\n\n", 1)[1].decode()
    failed = f'FAILED: patch "[PATCH] {title}" failed to apply to 4.9-stable tree'
    notice = with_body(
        with_header(with_header(patch, "Subject", failed), "Message-ID", "<failed@example.org>"),
        "The patch below does not apply to the 4.9-stable tree.\n\nthanks,\n\ngreg k-h\n\n"
        "------------------ original commit in Linus's tree ------------------\n\n" + commit,
    )
    added = with_header(with_header(notice, "Subject", f'patch "{title}" added to usb-linus'),
                        "Message-ID", "<added@example.org>")
    merged = with_header(with_header(
        notice, "Subject", "linux-next: manual merge of the mm tree with the net tree"),
        "Message-ID", "<merged@example.org>")
    answer = with_body(
        with_header(with_header(with_header(
            notice, "Subject", Header(f"回复: {failed}", "utf-8").encode()),
            "Message-ID", "<answer@example.org>"), "In-Reply-To", "<failed@example.org>"),
        "Hi Greg,\n\nThis patch should go to 4.9 too.\n\n-----邮件原件-----\n"
        f"发件人: Greg KH <gregkh@example.org>\n主题: {failed}\n\n" + commit,
    )
    store(db, [notice, added, merged, answer], ingest_settings)
    assert all_series(db) == []
    store(db, [patch], ingest_settings)
    assert [len(v["patches"]) for s in all_series(db) for v in s["versions"]] == [1]


def test_counterless_patch_in_a_thread_of_numbered_patches(db, make, ingest_settings):
    v1 = make(V1)
    # A fix-up sent as a plain [PATCH] in reply to the cover letter: not patch 1 of 3.
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(V1))
    fixup = make(SeriesSpec(title="mm: a fix-up", patches=1, cover=False, changes=(spare,),
                            in_reply_to=reply_to(v1),
                            start_date=dt.datetime(2026, 12, 1, tzinfo=dt.UTC)))
    assert header(fixup[0], "Subject") == f"[PATCH] {spare.subject}"
    store(db, v1 + fixup, ingest_settings)
    versions = [shape(v) for s in all_series(db) for v in s["versions"]]
    assert sorted(versions, key=repr) == sorted([
        (1, msgs_id(v1[0]), ids(v1[1:]), True),
        (1, None, ids(fixup), True),
    ], key=repr)
    assert {s["title"] for s in all_series(db)} == {V1.title}


def test_next_version_keeps_its_own_cover_letter_and_the_series_its_title(
    db, make, ingest_settings
):
    v1 = make(V1)
    # v2 without a cover letter, in reply to v1's: it must not take v1's cover letter (nor
    # v1's place), and its first patch's subject must not become the series' title.
    v2 = make(SeriesSpec(title=V1.title, patches=3, cover=False, version=2,
                         in_reply_to=reply_to(v1), same_changes_as=V1, revised=(1, 3)))
    # v3 with a cover letter of its own, retitled: that is the series' title now.
    v3 = make(SeriesSpec(title="mm: reclaim in batches of 64", patches=3, version=3,
                         in_reply_to=reply_to(v1), same_changes_as=V1, revised=(1,)))
    store(db, v1 + v2, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True),
        (2, None, ids(v2), True),
    ]
    assert s["title"] == V1.title
    store(db, v3, ingest_settings)
    s = only_series(db)
    assert [shape(v)[:2] for v in s["versions"]] == [
        (1, msgs_id(v1[0])), (2, None), (3, msgs_id(v3[0])),
    ]
    assert s["title"] == "mm: reclaim in batches of 64"


@pytest.mark.parametrize("parent", ["review", "off the list"])
def test_a_cover_letter_sent_beside_its_patches_is_their_cover_letter(
    db, make, ingest_settings, parent
):
    """`git format-patch --no-thread --in-reply-to=<review>`: the cover letter and every patch
    reply to the review (cgroups: memcg accounting v1..v3), or to a message this list never
    got. Each version keeps its cover letter, the title is the cover letter's, one series."""
    v1 = make(V1)
    review = make_reply(v1[0], author=("Rita Reviewer", "rita@example.org"), body="Split it.")
    hook = f"<{msgs_id(review)}>" if parent == "review" else "<20261201.42@elsewhere.example>"
    v2 = make(SeriesSpec(title=V1.title, patches=3, version=2, threading="none",
                         in_reply_to=hook, same_changes_as=V1, revised=(2,)))
    assert {header(m, "In-Reply-To") for m in v2} == {hook}
    for batches in ([v1 + [review] + v2], [v1 + [review] + v2[1:], v2[:1]]):
        for batch in batches:  # at once, or the cover letter after its patches were stored
            store(db, batch, ingest_settings)
        s = only_series(db)
        assert [shape(v) for v in s["versions"]] == [
            (1, msgs_id(v1[0]), ids(v1[1:]), True),
            (2, msgs_id(v2[0]), ids(v2[1:]), True),
        ]
        assert s["title"] == V1.title
        emptied(db)


def test_a_diffstat_sent_as_a_patch_is_the_cover_letter_of_its_one_patch(
    db, make, ingest_settings
):
    """linux-pm and cgroups: `[PATCH v2] title` carrying the cover letter's text and diffstat,
    and the one `[PATCH v2] subsystem: change` in reply to it: one version, its cover letter
    and title that letter's."""
    spec = SeriesSpec(title="mm: one change, explained", patches=1, version=2)
    sent = [re.sub(rb"^(Subject: \[PATCH v2) [01]/1\]", rb"\1]", m, flags=re.M)
            for m in make(spec)]
    assert [header(m, "Subject")[:11] for m in sent] == ["[PATCH v2] "] * 2
    store(db, sent, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [(2, msgs_id(sent[0]), ids(sent[1:]), True)]
    assert s["title"] == spec.title


def test_mercurial_style_counters(db, make, ingest_settings):
    spec = SeriesSpec(title="mm: sent with hg email", patches=2, version=2)
    msgs = make(spec)
    # `hg email --flag V2` numbers "0 of 2", "1 of 2" and puts the flag last.
    msgs = [m.replace(f"[PATCH v2 {i}/2]".encode(), f"[PATCH {i} of 2 V2]".encode())
            for i, m in enumerate(msgs)]
    assert header(msgs[1], "Subject").startswith("[PATCH 1 of 2 V2] ")
    store(db, msgs, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [(2, msgs_id(msgs[0]), ids(msgs[1:]), True)]
    assert s["title"] == "mm: sent with hg email"


def test_a_patch_that_forgot_the_version_continues_its_sibling(db, make, ingest_settings):
    v3 = make(SeriesSpec(title="memcg: flush stats in the background", patches=2, cover=False,
                         version=3, threading="deep"))
    # The author retyped the second subject and left the version out.
    v3[1] = v3[1].replace(b"[PATCH v3 2/2]", b"[PATCH 2/2]")
    assert header(v3[1], "Subject").startswith("[PATCH 2/2] ")
    store(db, v3, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [(3, None, ids(v3), True)]


RESENT = SeriesSpec(title="ext4: drop the stale extent cache", patches=3,
                    subject_prefix="RESEND PATCH")


@pytest.mark.parametrize("threading", ["shallow", "deep"])
def test_patches_that_forgot_resend_continue_the_resent_posting(
    db, make, ingest_settings, threading
):
    """RESEND on the cover letter only (ext4's `[RESEND RFC PATCH v4 00/34]` with `[PATCH v4
    01/34]`...), or left off one patch (`[PATCH 6/8]` among `[PATCH RESEND i/8]`): one posting,
    its cover letter kept, which the bot's reply answers."""
    sent = make(dataclasses.replace(RESENT, threading=threading))
    assert header(sent[0], "Subject").startswith("[RESEND PATCH 0/3] ")
    forgot = [1, 2, 3] if threading == "shallow" else [2]
    for i in forgot:
        sent[i] = sent[i].replace(b"[RESEND PATCH ", b"[PATCH ", 1)
    store(db, sent, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [(1, msgs_id(sent[0]), ids(sent[1:]), True)]
    assert s["title"] == RESENT.title


def test_patches_that_forgot_resend_sent_after_stale_files_keep_their_cover_letter(
    db, make, ingest_settings
):
    """One `git send-email` run over v1's stale files and `[RESEND PATCH v2 0/2]` with `[PATCH
    v2 1/2]`.. that left RESEND off, every mail in reply to the first (Nikolay Borisov's
    "Refactor snapshot vs nocow writers locking", linux-btrfs): v2 keeps its cover letter,
    which the bot's reply answers, as when its patches reply to it."""
    v1 = make(dataclasses.replace(V1, patches=2, threading="none"))
    v2 = make(SeriesSpec(title=V1.title, patches=2, version=2, threading="none",
                         subject_prefix="RESEND PATCH", same_changes_as=V1, revised=(1,)))
    v2[1:] = [m.replace(b"[RESEND PATCH v2 ", b"[PATCH v2 ", 1) for m in v2[1:]]
    assert header(v2[0], "Subject").startswith("[RESEND PATCH v2 0/2] ")
    assert header(v2[2], "Subject").startswith("[PATCH v2 2/2] ")
    sent = send_email(v1 + v2, start=dt.datetime(2026, 12, 14, 9, 0, tzinfo=dt.UTC))
    store(db, sent, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(sent[0]), ids(sent[1:3]), True),
        (2, msgs_id(sent[3]), ids(sent[4:]), True),
    ]


def test_a_resent_patch_in_reply_to_the_posting_stays_apart(db, make, ingest_settings):
    """`[PATCH RESEND 2/3]` in reply to 2/3 sends that patch again: not a part of v1."""
    v1 = make(V1)
    (again,) = make(SeriesSpec(title="unused", patches=1, cover=False,
                               changes=(series_changes(V1)[1],), in_reply_to=reply_to(v1[2:])))
    again = again.replace(b"[PATCH] ", b"[PATCH RESEND 2/3] ", 1)
    store(db, [*v1, again], ingest_settings)
    versions = only_series(db)["versions"]
    assert shape(versions[0]) == (1, msgs_id(v1[0]), ids(v1[1:]), True)
    assert [[p["message_id"] for p in v["patches"]] for v in versions[1:]] == [[msgs_id(again)]]


def test_a_series_resent_in_reply_to_its_last_patch_stays_apart(db, make, ingest_settings):
    """The whole series sent again (`[RESEND PATCH 1/3]`..., deep) in reply to v1's 3/3 is a
    posting of its own, not v1 with its patches sent twice."""
    v1 = make(V1)
    resent = make(SeriesSpec(title=V1.title, patches=3, cover=False, threading="deep",
                             subject_prefix="RESEND PATCH", same_changes_as=V1,
                             in_reply_to=reply_to(v1[3:]),
                             start_date=dt.datetime(2026, 12, 20, tzinfo=dt.UTC)))
    store(db, [*v1, *resent], ingest_settings)
    versions = only_series(db)["versions"]
    assert [shape(v) for v in versions] == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True), (1, None, ids(resent), True)
    ]


@pytest.mark.parametrize("references", ["whole", "cut"])
def test_additions_sent_later_extend_the_version(db, make, ingest_settings, references):
    """`[PATCH 4/3]`, sent days later in reply to a review of 3/3: the series is four patches
    now (b4 reads it so too), not a second v1 that waits forever for patches 1 to 3. Sent by
    `git send-email --in-reply-to=<review>`, its References name the review alone (`cut`):
    the review's lead to the posting."""
    v1 = make(V1)
    review = make_reply(v1[3], author=("Rita Reviewer", "rita@example.org"),
                        body="This leaves the iterator stale.")
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(V1))
    (addition,) = make(SeriesSpec(title="unused", patches=1, cover=False, changes=(spare,),
                                  start_date=dt.datetime(2026, 12, 20, tzinfo=dt.UTC)))
    addition = sent_as_addition(addition, "4/3", review)
    if references == "cut":
        addition = with_header(addition, "References", f"<{msgs_id(review)}>")
    expected = [(1, msgs_id(v1[0]), ids(v1[1:]) + [msgs_id(addition)], True)]
    for order in ([*v1, review, addition], [addition, review, *v1[::-1]]):
        emptied(db)
        for mail in order:  # one delivery at a time
            store(db, [mail], ingest_settings)
        s = only_series(db)
        assert [shape(v) for v in s["versions"]] == expected
        assert s["versions"][0]["expected"] == 4


def added(raw: bytes) -> list[str]:
    """The lines a mail's or an mbox's diffs add."""
    return [line for line in raw.decode().splitlines()
            if line.startswith("+") and not line.startswith("+++")]


def reroll_of(make: Make, earlier: list[bytes], number: int, version: int) -> bytes:
    """`[PATCH vN i/3]` alone, in reply to the patch `i/3` it replaces (b4's partial reroll)."""
    change = series_changes(V1)[number - 1]
    for _ in range(version - 1):
        change = change.revised()
    (patch,) = make(SeriesSpec(title="unused", patches=1, cover=False, version=version,
                               changes=(change,), in_reply_to=f"<{msgs_id(earlier[number])}>"))
    subject = f"[PATCH v{version} {number}/3] ".encode()
    return patch.replace(f"[PATCH v{version}] ".encode(), subject, 1)


def test_a_partial_reroll_takes_the_other_patches_from_the_version_before(
    db, db_url, make, ingest_settings, tmp_path
):
    """v2 re-sends patch 2 alone in reply to v1's 2/3, v3 patch 2 again in reply to v2's: each is
    the whole series, as b4 reads it (nvdimm's maintainers send series so), so each is complete
    and tested with v1's other patches, and `series mbox` gives b4's am-ready mbox of them."""
    v1 = make(V1)
    v2 = [reroll_of(make, v1, 2, 2)]
    v3 = [reroll_of(make, [b""] * 2 + v2, 2, 3)]
    assert header(v3[0], "Subject").startswith("[PATCH v3 2/3] ")

    def applied(version: dict) -> list[tuple[str, int]]:
        return [(p["message_id"], p["from_version"]) for p in version["patches"]]

    for order in ([*v1, *v2, *v3], [*v3, *v2, *v1[::-1]]):
        emptied(db)
        for mail in order:
            store(db, [mail], ingest_settings)
        s = only_series(db)
        assert [(v["version"], v["complete"], v["reroll_of"], v["received"]) for v in
                s["versions"]] == [(1, True, None, 3), (2, True, 1, 1), (3, True, 2, 1)]
        assert applied(s["versions"][1]) == [(msgs_id(v1[1]), 1), (msgs_id(v2[0]), 2),
                                             (msgs_id(v1[3]), 1)]
        assert applied(s["versions"][2]) == [(msgs_id(v1[1]), 1), (msgs_id(v3[0]), 3),
                                             (msgs_id(v1[3]), 1)]

    lorelab = Lorelab(tmp_path, db_url)
    mbox = lorelab.run("series", "mbox", str(s["id"]), "--version", "3").stdout.decode()
    subjects = [line for line in mbox.splitlines() if line.startswith("Subject: ")]
    assert len(subjects) == 3 and "[PATCH v3 2/3]" in subjects[1], subjects
    shown = lorelab.run("series", "show", str(s["id"])).stdout.decode()
    assert "a partial reroll of v2" in shown and "(v1)" in shown


def test_a_partial_reroll_stands_beside_the_whole_version_sent_later(
    db, db_url, make, ingest_settings, tmp_path
):
    """io_uring's and ext4's authors send `[PATCH v2 2/3]` in reply to 2/3, then days later the
    whole v2 in a thread of its own: the reroll is v1 with 2/3 replaced, as b4 reads its
    thread, and complete; the whole v2 is a posting of its own. `series mbox --version 2`
    does not pick one of the two silently: a message-id of a posting names it."""
    v1 = make(V1)
    reroll = reroll_of(make, v1, 2, 2)
    whole = make(SeriesSpec(title=V1.title, patches=3, version=2, same_changes_as=V1,
                            revised=(2,), start_date=dt.datetime(2026, 12, 20, tzinfo=dt.UTC)))
    for order in ([*v1, reroll, *whole], [*whole, reroll, *v1[::-1]]):
        emptied(db)
        for mail in order:
            store(db, [mail], ingest_settings)
        versions = sorted(only_series(db)["versions"], key=lambda v: (v["version"], v["received"]))
        assert [(v["version"], v["complete"], v["reroll_of"], v["received"])
                for v in versions] == [(1, True, None, 3), (2, True, 1, 1), (2, True, None, 3)]
        assert [p["message_id"] for p in versions[1]["patches"]] == [
            msgs_id(v1[1]), msgs_id(reroll), msgs_id(v1[3])]

    lorelab = Lorelab(tmp_path, db_url)
    series_id = str(only_series(db)["id"])
    refused = lorelab.run("series", "mbox", series_id, "--version", "2", check=False)
    said = refused.stderr.decode()
    assert refused.returncode == 1 and "2 postings of v2" in said, said
    assert f"<{msgs_id(reroll)}> (v2, 1 patch, a partial reroll of v1)" in said
    assert f"<{msgs_id(whole[0])}> (v2, 3 patches)" in said

    def subjects(ref: str) -> list[str]:
        mbox = lorelab.run("series", "mbox", ref).stdout.decode()
        return [line.split("] ")[0] + "]" for line in mbox.splitlines()
                if line.startswith("Subject: ")]

    assert subjects(msgs_id(reroll)) == [
        "Subject: [PATCH 1/3]", "Subject: [PATCH v2 2/3]", "Subject: [PATCH 3/3]"]
    assert subjects(f"https://lore.kernel.org/all/{msgs_id(whole[2])}/") == [
        f"Subject: [PATCH v2 {i}/3]" for i in (1, 2, 3)]


def test_a_point_release_rerolls_the_release_before_it(
    db, db_url, make, ingest_settings, tmp_path
):
    """Darrick Wong's respin of one patch (linux-xfs, 813 such postings): `[PATCH v4.1 3/3]` in
    reply to v4's 3/3. It is v4 with patch 3 replaced, complete and tested so, and it says
    `v4.1` wherever lorelab names it: b4 reads no version there (1), lorelab read it as v1."""
    v4 = make(dataclasses.replace(V1, version=4))
    point = reroll_of(make, v4, 3, 2).replace(b"[PATCH v2 3/3] ", b"[PATCH v4.1 3/3] ", 1)
    assert header(point, "Subject").startswith("[PATCH v4.1 3/3] ")
    for order in ([*v4, point], [point, *v4[::-1]]):
        emptied(db)
        for mail in order:
            store(db, [mail], ingest_settings)
        s = only_series(db)
        assert [(v["label"], v["version"], v["complete"], v["reroll_of_label"], v["received"])
                for v in s["versions"]] == [("v4", 4, True, None, 3), ("v4.1", 4, True, "v4", 1)]
        assert [(p["message_id"], p["from_label"]) for p in s["versions"][1]["patches"]] == [
            (msgs_id(v4[1]), "v4"), (msgs_id(v4[2]), "v4"), (msgs_id(point), "v4.1")]

    lorelab = Lorelab(tmp_path, db_url)
    shown = lorelab.run("series", "show", str(s["id"])).stdout.decode()
    assert "v4.1 " in shown and "a partial reroll of v4:" in shown and "(v4)" in shown, shown
    mbox = lorelab.run("series", "mbox", str(s["id"])).stdout.decode()  # the newest: v4.1

    assert mbox.count("\nSubject: ") == 3
    assert all(line in mbox for line in added(v4[1]) + added(v4[2]) + added(point))
    assert not any(line in mbox for line in added(v4[3]))  # the respin, not v4's patch 3
    with db.session() as session:
        version = session.get(SeriesVersion, s["versions"][1]["id"])
        said = series_info(version).describe().replace("\x1f", " ")  # glued for wrapping
        assert said.endswith(" (v4.1, 3 patches)"), said  # what a reply calls it


def test_a_point_release_sent_minutes_after_its_release_rerolls_it(db, make, ingest_settings):
    """The respin of one patch sent within minutes of v4, in reply to v4's 3/3: a later
    release of the series, not a posting sent beside it (`bot.series.membership`)."""
    v4 = make(dataclasses.replace(V1, version=4))
    point = reroll_of(make, v4, 3, 2).replace(b"[PATCH v2 3/3] ", b"[PATCH v4.1 3/3] ", 1)
    sent = parsedate_to_datetime(header(v4[-1], "Date")) + dt.timedelta(minutes=5)
    point = with_header(point, "Date", format_datetime(sent))
    store(db, [*v4, point], ingest_settings)
    assert [(v["label"], v["reroll_of_label"]) for v in only_series(db)["versions"]] == [
        ("v4", None), ("v4.1", "v4")]


def test_a_lettered_variant_of_a_version_is_that_version(db, make, ingest_settings):
    """Greg Joyce's `[PATCH v3a 0/2]` (keyrings), Roberto Sassu's `[RFC][PATCH v3a 00/11]`
    (linux-fscrypt), Steven Rostedt's `[PATCH v4a 00/38]` (linux-parisc): a variant of v3,
    between v3 and v4. b4 reads no version there (1), and lorelab read it as v1: a second "v1",
    before v3. It is version 3, named `v3a`; a tree's release in the tags is no version
    (`[PATCH v4 rebased on v6.4 0/2]`, `[PATCH for v5.9]`)."""
    spec = SeriesSpec(title="generic and PowerPC accessor functions for arch keystore",
                      patches=2)
    v3, variant, v4 = (make(dataclasses.replace(spec, version=n, same_changes_as=spec,
                                                revised=revised))
                       for n, revised in ((3, ()), (4, (1,)), (5, (1, 2))))
    variant = [raw.replace(b"[PATCH v4 ", b"[PATCH v3a ", 1) for raw in variant]
    v4 = [raw.replace(b"[PATCH v5 ", b"[PATCH v4 rebased on v6.4 ", 1) for raw in v4]
    assert header(variant[0], "Subject").startswith("[PATCH v3a 0/2] ")
    store(db, [*v3, *variant, *v4], ingest_settings)
    s = only_series(db)
    assert [(v["label"], v["version"], v["complete"], v["received"]) for v in s["versions"]] == [
        ("v3", 3, True, 2), ("v3a", 3, True, 2), ("v4", 4, True, 2)]
    with db.session() as session:
        version = session.get(SeriesVersion, s["versions"][1]["id"])
        said = series_info(version).describe().replace("\x1f", " ")  # glued for wrapping
        assert said.endswith(" (v3a, 2 patches)"), said  # what a reply calls it


def test_the_mbox_holds_the_patches_lorelab_lists_where_b4_reads_otherwise(
    db, make, ingest_settings
):
    """mm's fix-up, `[PATCH 2/3] ... (fix)` in reply to 2/3, is to fold into 2/3: lorelab keeps
    v1's three patches and the fix apart. The mbox a run applies holds what lorelab lists (and
    its replies name), whichever of the two b4 would take."""
    v1 = make(V1)
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(V1))
    (fix,) = make(SeriesSpec(title="unused", patches=1, cover=False, changes=(spare,),
                             in_reply_to=f"<{msgs_id(v1[2])}>",
                             start_date=dt.datetime(2026, 12, 20, tzinfo=dt.UTC)))
    title = header(v1[2], "Subject").split("] ", 1)[1]
    fix = with_header(fix, "Subject", f"[PATCH 2/3] {title} (fix)")
    store(db, [*v1, fix], ingest_settings)
    with db.session() as session:
        (version,) = session.scalars(sa.select(SeriesVersion).where(
            SeriesVersion.complete.is_(True)))
        assert [p.message.msgid for p in version.applied_patches] == ids(v1[1:])
        mbox = " ".join(am_ready_mbox(session, version).decode().split())  # headers unfolded
    assert mbox.count("Subject: [PATCH") == 3
    assert f"Subject: [PATCH 2/3] {title}" in mbox and "(fix)" not in mbox


@pytest.mark.parametrize("tag", ["-fix", "fix2"])
def test_a_fix_up_tagged_under_the_patchs_title_does_not_replace_it(
    db, make, ingest_settings, tag
):
    """Aneesh Kumar's `[PATCH v6 10/13 -fix] <10/13's title>` (linuxppc-dev, linux-mm) and
    Hugh Dickins's `fix2`: a fix-up to fold into the patch, sent in reply to it or to the cover
    letter. The version keeps its patches and its mbox applies them, not a fix-up in the
    patch's place, which would not apply without it (rules edition 17 took them so)."""
    v1 = make(V1)
    title = header(v1[2], "Subject").split("] ", 1)[1]
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(V1))
    fixes = []
    for number, parent in ((2, v1[2]), (1, v1[0])):
        (fix,) = make(SeriesSpec(title=f"unused {number}", patches=1, cover=False,
                                 changes=(spare,), in_reply_to=f"<{msgs_id(parent)}>",
                                 start_date=dt.datetime(2026, 12, 20 + number, tzinfo=dt.UTC)))
        patch_title = header(v1[number], "Subject").split("] ", 1)[1]
        fixes.append(with_header(fix, "Subject", f"[PATCH {number}/3 {tag}] {patch_title}"))
    assert header(fixes[0], "Subject") == f"[PATCH 2/3 {tag}] {title}"
    store(db, [*v1, *fixes], ingest_settings)
    with db.session() as session:
        (version,) = session.scalars(sa.select(SeriesVersion).where(
            SeriesVersion.cover_message_id.is_not(None)))
        assert [p.message.msgid for p in version.applied_patches] == ids(v1[1:])
        assert version.complete and not version.notes
        mbox = " ".join(am_ready_mbox(session, version).decode().split())
    assert mbox.count("Subject: [PATCH") == 3 and tag not in mbox


def test_fix_ups_are_the_versions_and_shown_with_it(
    db, db_url, make, ingest_settings, tmp_path
):
    """Nhat Pham's `[PATCH v8 3/6] zswap: make shrinking memcg-aware (fix)` in reply to 3/6
    (cgroups, linux-mm) and Aneesh Kumar's `[PATCH v6 10/13 -fix]` in reply to the cover
    letter (linuxppc-dev): one version, its fix-ups listed by the number each fixes, and no
    incomplete second version of their own. Its mbox is the patches as sent."""
    v1 = make(V1)
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(V1))
    fixes = []
    for number, subject, parent in ((2, "{title} (fix)", v1[2]), (3, "[-fix] {title}", v1[0])):
        (fix,) = make(SeriesSpec(title=f"unused {number}", patches=1, cover=False,
                                 changes=(spare,), in_reply_to=f"<{msgs_id(parent)}>",
                                 start_date=dt.datetime(2026, 12, 20 + number, tzinfo=dt.UTC)))
        title = header(v1[number], "Subject").split("] ", 1)[1]
        tags, _, title = subject.format(title=title).rpartition("] ")
        fixes.append(with_header(fix, "Subject",
                                 f"[PATCH {number}/3{tags.replace('[', ' ')}] {title}"))
    assert header(fixes[1], "Subject").startswith("[PATCH 3/3 -fix] ")
    assert header(fixes[0], "Subject").endswith(" (fix)")
    store(db, [*v1, *fixes], ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [(1, msgs_id(v1[0]), ids(v1[1:]), True)]
    assert [(f["message_id"], f["fixes"]) for f in s["versions"][0]["fix_ups"]] == [
        (msgs_id(fixes[0]), 2), (msgs_id(fixes[1]), 3)]
    lorelab = Lorelab(tmp_path, db_url)
    shown = lorelab.run("series", "show", str(s["id"])).stdout.decode()
    assert "fix-ups sent for it, which lorelab's runs do not apply:" in shown, shown
    assert f"of 2/3: <{msgs_id(fixes[0])}>" in shown and f"of 3/3: <{msgs_id(fixes[1])}>" in shown
    mbox = lorelab.run("series", "mbox", str(s["id"])).stdout.decode()
    assert mbox.count("\nSubject: ") == 3 and "(fix)" not in mbox and "-fix]" not in mbox


BOUNCE = SeriesSpec(title="block: bounce buffer direct I/O", patches=3)


def bounce_v1_v2(make: Make, ending: str) -> tuple[list[bytes], list[bytes]]:
    v1 = untagged(make(BOUNCE), BOUNCE.title)
    v2 = untagged(make(dataclasses.replace(BOUNCE, version=2, same_changes_as=BOUNCE,
                                           revised=(2,))), f"{BOUNCE.title} {ending}")
    assert [header(m, "Subject")[:12] for m in v2[:2]] == [BOUNCE.title[:12], "[PATCH 1/3] "]
    return v1, v2


@pytest.mark.parametrize(("ending", "resend"), [("v2", False), ("V2 (resend)", True)])
def test_a_cover_letter_without_tags_gives_the_version_and_the_title(
    db, make, ingest_settings, ending, resend
):
    v1, v2 = bounce_v1_v2(make, ending)
    store(db, v1 + v2, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True),
        (2, msgs_id(v2[0]), ids(v2[1:]), True),
    ]
    assert [v["title"] for v in s["versions"]] == [BOUNCE.title, BOUNCE.title]
    assert s["title"] == BOUNCE.title  # not patch 1's subject
    assert s["versions"][1]["resend"] is resend


def test_a_cover_letter_without_tags_found_after_its_patches(db, make, ingest_settings):
    v1, v2 = bounce_v1_v2(make, "v2")
    store(db, v1 + v2[1:], ingest_settings)
    store(db, v2[:1], ingest_settings)  # the cover letter comes last (a slow relay)
    assert [shape(v) for v in only_series(db)["versions"]] == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True),
        (2, msgs_id(v2[0]), ids(v2[1:]), True),
    ]


def test_a_cover_letter_without_tags_or_version_takes_its_patches_version(
    db, make, ingest_settings
):
    v4 = make(dataclasses.replace(BOUNCE, version=4))
    v4 = [with_header(v4[0], "Subject", "fixed the commit message"), *v4[1:]]  # linux-block
    assert header(v4[1], "Subject").startswith("[PATCH v4 1/3] ")
    store(db, v4, ingest_settings)
    assert [shape(v) for v in only_series(db)["versions"]] == [
        (4, msgs_id(v4[0]), ids(v4[1:]), True)]


def test_a_report_answered_with_a_fix_series_is_not_its_cover_letter(
    db, make, ingest_settings
):
    report = (b"From: Rita Reporter <rita@example.org>\nTo: linux-mm@kvack.org\n"
              b"Subject: kswapd spins at 100% CPU on 6.18\n"
              b"Date: Mon, 30 Nov 2026 08:00:00 +0000\nMessage-ID: <spin@example.org>\n\n"
              b"kswapd0 takes a whole CPU after an hour of kernel builds.\n")
    fix = make(dataclasses.replace(V1, cover=False, in_reply_to="<spin@example.org>"))
    assert header(fix[0], "Subject").startswith("[PATCH 1/3] ")
    store(db, [report] + fix, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [(1, None, ids(fix), True)]
    assert s["title"] == series_changes(V1)[0].subject  # the fix's, not the report's


def test_a_patch_bomb_is_one_series_per_patch_set(db, make, ingest_settings):
    """Darrick Wong's way (linux-ext4, linux-xfs): an overview, and in reply to it one
    `[PATCHSET RFC v5 i/N] title` per sub-series, each over its own `[PATCH j/M]`s."""
    overview = (b"From: Ada Reclaim <ada@example.org>\nTo: linux-mm@kvack.org\n"
                b"Subject: [RFC v5] mm: reclaim in a contained service\n"
                b"Date: Sun, 29 Nov 2026 08:00:00 +0000\nMessage-ID: <bomb@example.org>\n\n"
                b"Here are the patch sets of this round.\n")
    titles = {"mm: move reclaim into a service": 2, "mm: let the service batch": 3,
              "mm: contain the service": 2}
    sets = []
    for i, (title, patches) in enumerate(titles.items(), start=1):
        # `i/3` numbers the patch sets, not the patches: two patches complete set 1
        posting = untagged(make(SeriesSpec(title=title, patches=patches, version=5)),
                           f"[PATCHSET RFC v5 {i}/3] {title}")
        posting[0] = with_header(with_header(posting[0], "In-Reply-To", "<bomb@example.org>"),
                                 "References", "<bomb@example.org>")
        sets.append(posting)
    assert header(sets[0][1], "Subject").startswith("[PATCH 1/2] ")
    store(db, [overview, *(m for posting in sets for m in posting)], ingest_settings)
    found = all_series(db)
    expected = [(title, (5, msgs_id(p[0]), ids(p[1:]), True))
                for title, p in zip(titles, sets, strict=True)]
    assert sorted((s["title"], *[shape(v) for v in s["versions"]]) for s in found) == sorted(
        expected)


@pytest.mark.parametrize("cover_subject", ["[PATCHv3 0/{n}]", None])
def test_a_cover_letter_without_a_title_leaves_the_title_to_patch_1(
    db, make, ingest_settings, cover_subject
):
    """io_uring: `[PATCHv3 0/3]` with nothing after it, and a cover letter sent with no
    Subject at all. The version and its series are named by patch 1, not left untitled, and
    the author's other untitled posting stays a series of its own."""
    other = SeriesSpec(title="mm: drain the LRU batch early", patches=2, version=3)
    postings = [make(dataclasses.replace(V1, version=3)), make(other)]
    for posting in postings:
        subject = cover_subject and cover_subject.format(n=len(posting) - 1)
        posting[0] = with_header(posting[0], "Subject", subject)
    store(db, [m for posting in postings for m in posting], ingest_settings)
    found = sorted(all_series(db), key=lambda s: s["title"])
    firsts = sorted(postings, key=lambda p: header(p[1], "Subject"))
    assert [(s["title"], [shape(v) for v in s["versions"]]) for s in found] == [
        (series_changes(spec)[0].subject, [(3, msgs_id(p[0]), ids(p[1:]), True)])
        for spec, p in zip(sorted([V1, other], key=lambda s: series_changes(s)[0].subject),
                           firsts, strict=True)
    ]
    assert all(v["title"] == s["title"] for s in found for v in s["versions"])


def test_patches_without_a_title_are_not_one_series(db, make, ingest_settings):
    """Two unrelated fixes one author sent as a bare `[PATCH]` (nvdimm): an empty title says
    nothing of which series a posting is of."""
    fixes = [make(dataclasses.replace(spec, cover=False, patches=1))[0]
             for spec in (V1, SeriesSpec(title="mm: drain the LRU batch early", version=2))]
    fixes = [with_header(fix, "Subject", "[PATCH]") for fix in fixes]
    store(db, fixes, ingest_settings)
    assert sorted([shape(v) for v in s["versions"]] for s in all_series(db)) == sorted(
        [[(1, None, [msgs_id(fix)], True)] for fix in fixes])


@pytest.mark.parametrize(("subject", "version"), [
    ("[NDCTL PATCH v7 4/4] {title}", 7),  # nvdimm: `git send-email` given a stale file name
    ("[PATCH 1/4 v2] {title}", 2),  # linux-xfs, over patches that forgot `-v`
])
def test_a_cover_letter_numbered_as_a_patch_is_the_cover_letter(
    db, make, ingest_settings, subject, version
):
    """A cover letter sent with a patch's number and no diffstat: it is no patch (lorelab would
    otherwise apply it, and `git am` stop at it as at a patch that does not apply), but the
    cover letter of the patches that reply to it."""
    spec = SeriesSpec(title="cxl: list the qos_class", patches=4,
                      version=7 if version == 7 else 1)
    posting = make(spec)
    posting[0] = with_body(with_header(posting[0], "Subject", subject.format(title=spec.title)),
                           "The series adds support for the qos_class of CXL devices.\n")
    if version == 7:
        posting[1:] = [m.replace(b"Subject: [PATCH v7", b"Subject: [NDCTL PATCH v7", 1)
                       for m in posting[1:]]
    store(db, posting, ingest_settings)
    s = only_series(db)
    assert [shape(v) for v in s["versions"]] == [(version, msgs_id(posting[0]),
                                                   ids(posting[1:]), True)]
    assert s["title"] == spec.title and s["versions"][0]["notes"] == []
    with db.session() as session:
        (stored,) = session.scalars(sa.select(SeriesVersion))
        mbox = am_ready_mbox(session, stored).decode()
    assert mbox.count("\nSubject: ") == 4 and "qos_class of CXL devices" not in mbox


def test_a_patch_without_a_diff_leaves_the_version_incomplete(
    db, db_url, make, ingest_settings, tmp_path
):
    """A patch whose diff a mail client ate: the version lacks its number and says why; it is
    incomplete, so no run tests it (a reply would have said that the series does not apply)."""
    posting = make(V1)
    posting[2] = with_body(posting[2], "The diff was eaten by my mail client, sorry.\n")
    store(db, posting, ingest_settings)
    s = only_series(db)
    (version,) = s["versions"]
    assert (version["complete"], version["missing"], version["received"]) == (False, [2], 2)
    note = (f"patch 2/3 carries no diff that git can apply, so its number stays missing: "
            f"{msgs_id(posting[2])}")
    assert version["notes"] == [note]
    shown = Lorelab(tmp_path, db_url).run("series", "show", str(s["id"])).stdout.decode()
    assert "2/3 incomplete, missing 2 " in shown and note in " ".join(shown.split()), shown


@pytest.mark.parametrize("first_subject", ["", "[PATCH 0/3]"], ids=["no subject", "no title"])
def test_a_cover_letter_sent_again_to_give_its_title_is_its_postings(
    db, make, ingest_settings, first_subject
):
    """Dave Chinner's LARP v3 (linux-xfs): the cover letter went out with an empty subject over
    `[PATCH 01/17]`.. without a version, and 13 hours later `[PATCH 00/17 V3] XFS: LARP state
    machine and recovery rework` in reply to it. Before, v3 was read as a v1 titled by its
    patch 1, a series apart from v1, v2 and v4, and the letter a posting with no patches."""
    earlier = [*make(V1), *make(dataclasses.replace(V1, version=2))]
    files = make(dataclasses.replace(V1, version=3))
    sent = [with_header(f, "Subject", header(f, "Subject").replace("PATCH v3 ", "PATCH "))
            for f in files]
    sent[0] = with_header(sent[0], "Subject", first_subject)
    again = files[0]
    for name, value in (("Subject", f"[PATCH 0/3 V3] {V1.title}"),
                        ("Message-ID", "<retitled@example.org>"),
                        ("In-Reply-To", reply_to(sent)), ("References", reply_to(sent)),
                        ("Date", format_datetime(parsedate_to_datetime(header(sent[0], "Date"))
                                                 + dt.timedelta(hours=13)))):
        again = with_header(again, name, value)
    store(db, [*earlier, *sent, again], ingest_settings)
    s = only_series(db)
    assert s["title"] == V1.title
    assert [shape(v) for v in s["versions"]][2] == (3, "retitled@example.org", ids(sent[1:]), True)
    assert s["versions"][2]["notes"] == [
        "its cover letter was sent again with a title, in reply to the first, which had none: "
        + msgs_id(sent[0])]


def test_a_v2_sent_in_reply_to_a_letter_over_one_patch_leaves_v1_its_letter(
    db, make, ingest_settings
):
    """`git format-patch --cover-letter -N` over one commit: `[PATCH] title` with the diffstat
    and `[PATCH] title` in reply; v2 a day later as `[PATCH v2] title` in reply to the letter
    (linux-nfs, "nfs: Fix security label length not being reset"). Before, v1 lost its cover
    letter when v2 came: two `[PATCH]`es replied to it, and neither was taken for its patch."""
    spec = SeriesSpec(title="mm: one patch with a letter", patches=1)
    letter, patch = make(spec)
    title = header(patch, "Subject").split("] ", 1)[1]
    letter = with_header(letter, "Subject", f"[PATCH] {title}")
    patch = with_header(patch, "Subject", f"[PATCH] {title}")
    (_, v2) = make(dataclasses.replace(spec, version=2))
    v2 = with_header(v2, "Subject", f"[PATCH v2] {title}")
    for name in ("In-Reply-To", "References"):
        v2 = with_header(v2, name, f"<{msgs_id(letter)}>")
    store(db, [letter, patch], ingest_settings)
    first = shape(only_series(db)["versions"][0])
    assert first == (1, msgs_id(letter), [msgs_id(patch)], True)
    store(db, [v2], ingest_settings)
    assert [shape(v) for v in only_series(db)["versions"]] == [
        first, (2, None, [msgs_id(v2)], True)]


@pytest.mark.parametrize("subject", [
    "[PATCH 2/3 REPLACE] {title}", "[PATCH 2/3 - revised] {title}",
    "[PATCH 2/3] {title} (repost)", "[PATCH 2/3] {title}  (repost with fix)"])
def test_a_patch_sent_again_changed_in_reply_to_itself_corrects_it(
    db, make, ingest_settings, subject
):
    """`[PATCH v5 3/6 REPLACE]` in reply to 3/6, two days after a `(fix)` to fold into it
    (Nhat Pham's zswap series, linux-mm and linux-kselftest), Neil Brown's `[PATCH 01/21 -
    revised]`, or Mimi Zohar's `[PATCH v9 4/7] ... templates (repost)` and `(repost with fix)`
    (linux-fscrypt): the version's patch is the replacement (b4 and Andrew Morton read it so),
    and the fix-up stays apart. Before, the replacement was a posting of one patch never
    tested, and the version kept the patch it replaced; a remark after the title was read as
    another title until rules edition 39."""
    v1 = make(V1)
    title = header(v1[2], "Subject").split("] ", 1)[1]
    changed = make(dataclasses.replace(V1, version=2, same_changes_as=V1, revised=(2,)))[2]
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(V1))
    (fix,) = make(SeriesSpec(title="unused", patches=1, cover=False, changes=(spare,),
                             in_reply_to=f"<{msgs_id(v1[2])}>",
                             start_date=dt.datetime(2026, 12, 20, tzinfo=dt.UTC)))
    fix = with_header(fix, "Subject", f"[PATCH 2/3] {title} (fix)")
    replacement = changed
    for name, value in (("Subject", subject.format(title=title)),
                        ("In-Reply-To", f"<{msgs_id(v1[2])}>"),
                        ("References", f"<{msgs_id(v1[0])}> <{msgs_id(v1[2])}>"),
                        ("Date", "Tue, 22 Dec 2026 09:00:00 +0000")):
        replacement = with_header(replacement, name, value)
    store(db, [*v1, fix], ingest_settings)
    store(db, [replacement], ingest_settings)
    s = only_series(db)  # the fix-up is v1's, not a version of its own
    assert [shape(v) for v in s["versions"]] == [
        (1, msgs_id(v1[0]), [msgs_id(v1[1]), msgs_id(replacement), msgs_id(v1[3])], True)]
    versions = s["versions"]
    said = ("was replaced; using {}, sent as its replacement" if "REPLACE" in subject
            else "was sent twice; using {}")
    assert versions[0]["notes"] == ["patch 2/3 " + said.format(msgs_id(replacement))]
    assert [(f["message_id"], f["fixes"]) for f in versions[0]["fix_ups"]] == [
        (msgs_id(fix), 2)]
    with db.session() as session:
        version = session.get(SeriesVersion, versions[0]["id"])
        mbox = " ".join(am_ready_mbox(session, version).decode().split()).lower()
    assert mbox.count("subject: [patch") == 3 and "(fix)" not in mbox
    assert f"message-id: <{msgs_id(replacement)}>".lower() in mbox
    assert f"message-id: <{msgs_id(v1[2])}>".lower() not in mbox


@pytest.mark.parametrize("tag", ["replacement", "REPLACE", "update", None])
@pytest.mark.parametrize("sent", ["to the patch", "to an answer", "--in-reply-to an answer"])
def test_a_patch_its_tags_call_a_replacement_takes_its_numbers_place(
    db, make, ingest_settings, tag, sent
):
    """Hugh Dickins' `[PATCH v2 07/23 replacement] mips: add pte_unmap() to balance
    pte_offset_map()`, a week after v2, in reply to his answer to a review of 07/23 `mips:
    update_mmu_cache() can replace __update_tlb()` (linux-ia64): a new patch under a new title
    that takes 07/23's place (Andrew Morton swapped it so in mm), whatever the cover letter's
    shortlog lists. Before, it was a "v2" of its own, 1 of 23 received and never tested, and
    v2 kept the patch it replaced. `git send-email --in-reply-to=<answer>` gives the patch
    the answer's id alone for References (Tianyu Lan's `[Update RFC PATCH V6 2/4]`,
    linux-arch): the answer's own lead to the posting. Without the tag, such a patch stays a
    posting of its own."""
    v1 = make(V1)
    parent = v1[2]
    answered = sent != "to the patch"
    if answered:
        review = make_reply(v1[2], author=("Rita Reviewer", "rita@example.org"),
                            body="This breaks the walk on mips.",
                            date=V1.date + dt.timedelta(days=1))
        parent = make_reply(review, author=V1.author, body="Right, a replacement follows.",
                            date=V1.date + dt.timedelta(days=2))
    spare = next(c for c in DEFAULT_POOL if c not in series_changes(V1))
    (new,) = make(SeriesSpec(title="mm: keep the lru walk bounded", patches=1, cover=False,
                             changes=(spare,), start_date=V1.date + dt.timedelta(days=7)))
    tags = f"PATCH 2/3 {tag}" if tag else "PATCH 2/3"
    new = with_header(new.replace(b"[PATCH] ", f"[{tags}] ".encode(), 1),
                      "In-Reply-To", f"<{msgs_id(parent)}>")
    new = with_header(new, "References", {
        "to the patch": f"<{msgs_id(v1[0])}> <{msgs_id(v1[2])}>",
        "to an answer": f"{header(parent, 'References')} <{msgs_id(parent)}>",
        "--in-reply-to an answer": f"<{msgs_id(parent)}>"}[sent])
    replies = [review, parent] if answered else []
    expected = ([(1, msgs_id(v1[0]), ids(v1[1:]), True), (1, None, [msgs_id(new)], False)]
                if tag is None else
                [(1, msgs_id(v1[0]), [msgs_id(v1[1]), msgs_id(new), msgs_id(v1[3])], True)])
    for order in ([*v1, *replies, new], [new, *replies[::-1], *v1[::-1]]):
        emptied(db)
        for mail in order:  # one delivery at a time
            store(db, [mail], ingest_settings)
        versions = sorted((shape(v) for s in all_series(db) for v in s["versions"]), key=str)
        assert versions == expected
    if tag is None:
        return
    (version,) = only_series(db)["versions"]
    assert version["notes"] == [
        f"patch 2/3 was replaced; using {msgs_id(new)}, sent as its replacement"]
    with db.session() as session:
        mbox = am_ready_mbox(session, session.get(SeriesVersion, version["id"])).decode()
    assert msgs_id(new) in mbox and msgs_id(v1[2]) not in mbox


def test_a_patch_for_another_project_sent_in_reply_to_its_kernel_patch_replaces_nothing(
    db, make, ingest_settings
):
    """Tony Battersby's qla2xxx series (target-devel): after some of its patches, `[SCST PATCH
    08/15]` under the same title in reply to the kernel's 08/15, the change for the
    out-of-tree SCST project, which touches none of the kernel patch's files. Before, it
    replaced the kernel's patch as a correction (rule 9): the version held four patches a
    kernel tree cannot apply. A patch sent so that changes the same files still replaces it."""
    v1 = make(V1)
    title = header(v1[2], "Subject").split("] ", 1)[1]
    other = next(c for c in EDITS if c.path not in {c.path for c in series_changes(V1)})
    (scst,) = make(SeriesSpec(title="unused", patches=1, cover=False, changes=(other,),
                              in_reply_to=f"<{msgs_id(v1[2])}>",
                              start_date=V1.date + dt.timedelta(minutes=1)))
    scst = with_header(scst, "Subject", f"[SCST PATCH 2/3] {title}")
    store(db, [*v1, scst], ingest_settings)
    assert sorted((shape(v) for s in all_series(db) for v in s["versions"]), key=str) == [
        (1, msgs_id(v1[0]), ids(v1[1:]), True), (1, None, [msgs_id(scst)], False)]


def test_series_of_several_projects_sent_by_one_run_are_each_a_version(
    db, make, ingest_settings
):
    """One `git send-email` run of a cover letter, the kernel's `[RFC PATCH v3 1/3]`..`3/3`
    and makedumpfile's `[RFC PATCH makedumpfile v3 1/3]`..`3/3`, every mail in reply to the
    letter (nvdimm, Li Zhijian's "pmem memmap dump support" v2 and v3). Before, makedumpfile's
    patches took the kernel's numbers as later copies (rule 9): the version a run would test
    held makedumpfile's C files, and the kernel's series was in no version. Then they were a
    second "v1" of the kernel's series; they are a series of their own."""
    v1 = make(V1)
    spare = tuple(c for c in DEFAULT_POOL if c not in series_changes(V1))[:3]
    tools = make(SeriesSpec(title="unused", patches=3, cover=False, changes=spare,
                            subject_prefix="PATCH makedumpfile",
                            start_date=DEFAULT_START + dt.timedelta(minutes=4)))
    for name in ("In-Reply-To", "References"):
        tools = [with_header(m, name, reply_to(v1)) for m in tools]
    store(db, [*v1, *tools], ingest_settings)
    # A series each: sent beside the kernel's, in reply to its cover letter, makedumpfile's set
    # is no version of it (`bot.series.membership`, rules edition 46).
    kernel, makedumpfile = all_series(db)
    assert kernel["title"] == V1.title
    assert [shape(v) for v in kernel["versions"]] == [(1, msgs_id(v1[0]), ids(v1[1:]), True)]
    (version,) = makedumpfile["versions"]
    assert makedumpfile["title"] == spare[0].subject
    assert shape(version) == (1, None, ids(tools), True)
    assert version["notes"] == [
        f"sent by one run with 1 other series numbered 1/3..3/3 in the same place "
        f"({msgs_id(v1[0])}): a posting of its own"]


def test_a_version_sent_a_patch_at_a_time_is_its_last_piece(
    db, db_url, make, ingest_settings, tmp_path
):
    """`[PATCH v2 2/3]` in reply to the review of v1's 2/3, and later `[PATCH v2 3/3]` in reply
    to the review of 3/3 (LTP's signalfd v2; Linus Torvalds's `[PATCH 4/7 v2]` and `6/7 v2` on
    linux-arch; Shiyang Ruan's `v10.1 1/9` and `8/9` on nvdimm). b4 reads them as one
    revision. The last piece is v2, with the earlier piece's 2/3 and v1's 1/3; the earlier
    piece is not a version to test. Before, each piece was an incomplete v2 of one patch and
    v2 was never tested. Sent within minutes of each other, the pieces are one posting (rule
    4), with v1's 1/3."""
    v1 = make(V1)
    rita = ("Rita Reviewer", "rita@example.org")
    reviews = [make_reply(v1[i], author=rita, body="This needs a change.") for i in (2, 3)]
    pieces = []
    for number, review, minutes in ((2, reviews[0], 0), (3, reviews[1], 40)):
        piece = reroll_of(make, v1, number, 2)
        for name, value in (
                ("In-Reply-To", f"<{msgs_id(review)}>"),
                ("References", f"<{msgs_id(v1[0])}> <{msgs_id(v1[number])}> "
                               f"<{msgs_id(review)}>"),
                ("Message-ID", f"<piece-{number}@example.org>"),
                ("Date", format_datetime(DEFAULT_START + dt.timedelta(days=3, minutes=minutes)))):
            piece = with_header(piece, name, value)
        pieces.append(piece)
    first, last = (msgs_id(p) for p in pieces)
    for order in ([*v1, *reviews, *pieces], [*pieces[::-1], *reviews, *v1[::-1]]):
        emptied(db)
        for mail in order:
            store(db, [mail], ingest_settings)
        s = only_series(db)
        assert [(v["label"], v["complete"], v["reroll_of_label"], v["received"])
                for v in s["versions"]] == [
            ("v1", True, None, 3), ("v2", False, "v1", 1), ("v2", True, "v2", 1)]
        assert s["versions"][1]["continued_by"] == s["versions"][2]["id"]
        assert [(p["message_id"], p["from_label"]) for p in s["versions"][2]["patches"]] == [
            (msgs_id(v1[1]), "v1"), (first, "v2"), (last, "v2")]

    lorelab = Lorelab(tmp_path, db_url)
    shown = " ".join(lorelab.run("series", "show", str(s["id"])).stdout.decode().split())
    assert "v2 1/3 a piece of v2, whose rest was sent later (below)" in shown, shown
    assert "the last piece of v2, sent a few patches at a time" in shown, shown
    assert "are the earlier pieces' and v1's" in shown, shown  # 1/3 is v1's

    assert f"[2/3] {header(pieces[0], 'Subject')} (an earlier piece)" in shown, shown
    mbox = lorelab.run("series", "mbox", last).stdout.decode()

    assert mbox.count("\nSubject: ") == 3
    assert all(line in mbox for line in added(v1[1]) + added(pieces[0]) + added(pieces[1]))
    assert not any(line in mbox for line in added(v1[2]) + added(v1[3]))
    with db.session() as session:
        version = session.get(SeriesVersion, s["versions"][2]["id"])
        said = series_info(version).describe().replace("\x1f", " ")
        assert said.endswith(" (v2, 3 patches)"), said  # what a reply calls it

    # LTP's pieces name only the review in References: each is filed as a series of its own
    # (titled by its patch), and the thread still reads them as v2.
    emptied(db)
    store(db, [*v1, *reviews, *(with_header(p, "References", header(p, "In-Reply-To"))
                                for p in pieces)], ingest_settings)
    assert len(all_series(db)) == 3
    found = {v["url"].rsplit("/", 1)[-1]: (s["id"], v)
             for s in all_series(db) for v in s["versions"]}
    (_, piece), (series_of_last, version) = found[first], found[last]
    assert (piece["complete"], piece["continued_by"], piece["continued_in_series"]) == (
        False, version["id"], series_of_last)
    assert version["complete"] and version["reroll_of_label"] == "v2"

    # sent two minutes apart, the pieces are one posting (rule 4), with v1's 1/3
    minutes_apart = [with_header(pieces[1], "Date", format_datetime(
        DEFAULT_START + dt.timedelta(days=3, minutes=2))), pieces[0]]
    emptied(db)
    store(db, [*v1, *reviews, *minutes_apart], ingest_settings)
    s = only_series(db)
    assert [(v["label"], v["complete"], v["reroll_of_label"], v["received"])
            for v in s["versions"]] == [("v1", True, None, 3), ("v2", True, "v1", 2)]
    assert [(p["message_id"], p["from_label"]) for p in s["versions"][1]["patches"]] == [
        (msgs_id(v1[1]), "v1"), (first, "v2"), (last, "v2")]


def test_postings_sent_in_reply_to_their_senders_address_are_not_one_thread(
    db, make, ingest_settings
):
    """Mark Pearson's thinkpad_acpi and think-lmi patches (platform-driver-x86, 2020-2025)
    went out with `In-Reply-To: <his address>`, as `git send-email` was given it for the id
    to reply to: every posting was one thread under that id, and his two-patch series of
    2023 and 2025, of one size, were read as one posting sent again, the later patches
    taking the earlier ones' places; neither 2023 posting was in a version."""
    mark = ("Mark Pearson", "mpearson-lenovo@squebb.example")
    postings = []
    for title, start in [("think-lmi: possible values", dt.datetime(2023, 3, 12, 2, 46)),
                         ("think-lmi: missing type", dt.datetime(2023, 3, 13, 18, 45)),
                         ("thinkpad_acpi: hotkeys", dt.datetime(2025, 5, 7, 19, 4))]:
        files = make(SeriesSpec(title=title, author=mark, patches=2, cover=False))
        sent = send_email(files, start=start.replace(tzinfo=dt.UTC), domain="squebb.example")
        first = with_header(with_header(sent[0], "In-Reply-To", f"<{mark[1]}>"),
                            "References", f"<{mark[1]}>")
        postings.append([first, with_header(sent[1], "References",
                                            f"<{mark[1]}> <{msgs_id(first)}>")])
    store(db, [m for p in postings for m in p], ingest_settings)
    versions = [v for s in all_series(db) for v in s["versions"]]
    assert sorted(shape(v) for v in versions) == sorted(
        (1, None, ids(p), True) for p in postings)
    assert not any("sent twice" in n for v in versions for n in v["notes"])


@pytest.mark.parametrize(("version", "retagged", "note"), [
    (1, {2: ("] ", "] [RESEND^2] "), 3: ("] ", "] [v2] ")}, "2/3 (RESEND), 3/3 (v2); read as v1"),
    (2, {1: ("v2 ", "v2.5 ")}, "1/3 (v2.5); read as v2"),
], ids=["revisions", "point release"])
def test_patches_tagging_their_own_revisions_are_one_posting(
    db, make, ingest_settings, version: int, retagged: dict, note: str
):
    """Arnd Bergmann's `[PATCH 00/22] -Wmissing-prototype warning fixes` over `[PATCH 01/22]
    [RESEND^2] ida: ...`, `[PATCH 08/22] [v2] arch: ...` and untagged patches, one run
    (linux-kbuild, linux-usb, linux-mips); Tero Kristo's `[PATCHv2 00/15]` over `[PATCHv2.5
    01/15]` and `[PATCHv2 02/15]`.. (linux-remoteproc): before, the tags split the version into
    incomplete postings, and none was tested."""
    sent = make(SeriesSpec(title="-Wmissing-prototype warning fixes", patches=3,
                           version=version))
    tagged = list(sent)
    for number, (old, new) in retagged.items():
        subject = header(sent[number], "Subject").replace(old, new, 1)
        tagged[number] = with_header(sent[number], "Subject", subject)
    store(db, tagged, ingest_settings)
    (version_read,) = only_series(db)["versions"]
    assert shape(version_read) == (version, msgs_id(sent[0]), ids(sent[1:]), True)
    assert version_read["notes"] == [
        f"patches sent with the cover letter tag their own revisions: {note}"]


def test_patches_of_one_number_sent_by_one_run_are_each_kept(db, make, ingest_settings):
    """Allen Pais's tasklet conversions (linux-mmc): one run of single patches, each in reply
    to the first, among them `[PATCH 1/2] hsi: ...` and `[PATCH 1/2] mailbox: ...`, patches
    1/2 of different series. Before, the later took the earlier's place (rule 9): a patch in
    no version."""
    sent = make(SeriesSpec(title="tasklet conversions", patches=3, cover=False))
    renumbered = [with_header(sent[0], "Subject",
                              header(sent[0], "Subject").replace("PATCH 1/3", "PATCH"))]
    renumbered += [with_header(raw, "Subject", re.sub(r"PATCH \d/3", "PATCH 1/2",
                                                      header(raw, "Subject")))
                   for raw in sent[1:]]
    store(db, renumbered, ingest_settings)
    versions = [v for s in all_series(db) for v in s["versions"]]
    assert sorted(shape(v) for v in versions) == sorted(
        [(1, None, ids(sent[:1]), True), (1, None, ids(sent[1:2]), False),
         (1, None, ids(sent[2:]), False)])


def wrapped_by_list(raw: bytes, n: int) -> bytes:
    """`raw` as Mailman's DMARC mitigation sends it on: a mail of the list's own, the author's
    inside (alsa-devel, 2023)."""
    outer = [
        "From: Ada Reclaim via Alsa-devel <alsa-devel@alsa-project.org>",
        "Reply-To: Ada Reclaim <ada@example.org>",
        f"Subject: {header(raw, 'Subject')}",
        f"Date: {header(raw, 'Date')}",
        f"Message-ID: <16788877{n}.26.1@mailman-core.alsa-project.org>",
        "MIME-Version: 1.0",
        "Content-Type: message/rfc822",
        "Content-Disposition: inline",
    ]
    if b"\nIn-Reply-To:" in raw.split(b"\n\n", 1)[0]:
        outer.append(f"In-Reply-To: {header(raw, 'In-Reply-To')}")
    return "\n".join(outer).encode() + b"\n\n" + raw


def test_a_series_the_list_sent_wrapped_is_a_version_b4_applies(db, make, ingest_settings):
    """Mailman's DMARC "wrap message" (alsa-devel, March to May 2023): each part came as a
    mail of the list's, with the author's inside. Before, every patch was "without a diff"
    under the list server's Message-ID, and none of those months' series was in a version."""
    sent = make(SeriesSpec(title="ASoC: wrapped", patches=2))
    store(db, [wrapped_by_list(raw, n) for n, raw in enumerate(sent)], ingest_settings)
    (version,) = only_series(db)["versions"]
    assert shape(version) == (1, msgs_id(sent[0]), ids(sent[1:]), True)
    with db.session() as session:
        stored = session.scalars(sa.select(SeriesVersion)).one()
        mbox = " ".join(am_ready_mbox(session, stored).decode().split())
    assert mbox.count("Subject: [PATCH") == 2 and mbox.count("diff --git") >= 2


def test_a_later_version_renumbered_in_reply_to_the_cover_letter_stays_apart(
    db, make, ingest_settings
):
    """Nikita Shubin's ep93xx conversion (linux-pwm): June's `[PATCH v1 15/43]` and `16/43`,
    in reply to April's `[PATCH 00/43]`, are April's 14/43 and 15/43 moved on by one. Before,
    they took April's places 15 and 16 as corrections: April's version applied one patch twice
    and lost one."""
    april = make(SeriesSpec(title="ep93xx device tree conversion", patches=3))
    june = []
    for raw in april[1:3]:
        subject = header(raw, "Subject")
        number = int(re.search(r"(\d)/3\]", subject)[1])
        moved = with_header(raw, "Subject", subject.replace(f"{number}/3]", f"{number + 1}/3]"))
        moved = with_header(moved, "Message-ID", f"<june-{number + 1}@example.org>")
        june.append(with_header(moved, "Date", f"Thu, 01 Jun 2027 05:34:0{number} +0000"))
    store(db, [*april, *june], ingest_settings)
    versions = {v["cover_message_id"]: v for v in only_series(db)["versions"]}
    assert shape(versions[msgs_id(april[0])]) == (1, msgs_id(april[0]), ids(april[1:]), True)
    assert shape(versions[None]) == (1, None, ["june-2@example.org", "june-3@example.org"],
                                     False)


def rewritten(sent: list[bytes], server_id: str, mail: int = 1) -> list[bytes]:
    """A `git send-email` run sent through Outlook: the first mail under the server's id, the
    others in reply to the id send-email gave it (its sending time, a process id, the sender):
    send-email dates the run's mails from before it starts, the last about when it starts.
    `mail`: the first mail's place in the run (a run may send others elsewhere first)."""
    last = parsedate_to_datetime(header(sent[-1], "Date")).astimezone(dt.UTC)
    sender = re.search(r"<(.+)>", header(sent[0], "From"))[1]
    run_id = f"<{last + dt.timedelta(seconds=1):%Y%m%d%H%M%S}.6429-{mail}-{sender}>"
    rest = [with_header(with_header(raw, "In-Reply-To", run_id), "References", run_id)
            for raw in sent[1:]]
    return [with_header(sent[0], "Message-ID", f"<{server_id}>"), *rest]


@pytest.mark.parametrize("arrival", ["together", "newest first", "first mail first",
                                     "first mail last"])
def test_patches_replying_to_the_id_their_run_gave_a_rewritten_first_mail_are_its(
    db, make, ingest_settings, arrival
):
    """Outlook rewrites the Message-ID of every mail sent through it, and `git send-email`
    threads a run under the id it gave the first mail: Jonathan Bakker's cover letters
    (linux-samsung-soc) came under Outlook's ids and their patches in reply to ids no archive
    holds; Chris Morgan's rk817 codec v4..v6 (alsa-devel), sent without a cover letter, had 1/3
    in one thread and 2/3, 3/3 in another. Before, each was two threads: a version without its
    cover letter (named by patch 1's title, the letter in no version), or two incomplete ones.
    Whichever arrives first, in one batch or two."""
    with_letter = rewritten(make(SeriesSpec(title="S5PV210 and Aries DTS improvements")),
                            "BN6PR04MB0660A@BN6PR04MB0660.namprd04.prod.outlook.com")
    without = rewritten(make(SeriesSpec(title="Add Rockchip rk817 audio CODEC", cover=False,
                                        start_date=DEFAULT_START + dt.timedelta(days=1))),
                        "CY4PR04MB0567B@CY4PR04MB0567.namprd04.prod.outlook.com")
    # Tencent kept In-Reply-To naming 1/2 as the third mail of its run (Edward Adam Davis's
    # `[PATCH V4 2/2]`, linux-wireless)
    third = rewritten(make(SeriesSpec(title="wifi: ath6kl: Replace ath6kl_usb_submit_ctrl_in",
                                      cover=False, patches=2,
                                      start_date=DEFAULT_START + dt.timedelta(days=2))),
                      "tencent_A037749680365C4BCC750776D566183C4509@qq.com", mail=3)
    # another sender's run through Outlook in the same minutes: a thread of its own
    beside = rewritten(make(SeriesSpec(title="Exynos DTS improvements",
                                       author=("Rita Writeback", "rita@example.org"))),
                       "BN6PR04MB0660R@BN6PR04MB0660.namprd04.prod.outlook.com")
    for sent in (with_letter, without, third, beside):
        if arrival == "together":
            store(db, sent, ingest_settings)
        elif arrival == "newest first":  # an archive read backwards
            store(db, sent[::-1], ingest_settings)
        elif arrival == "first mail first":
            store(db, sent[:1], ingest_settings)
            store(db, sent[1:], ingest_settings)
        else:
            store(db, sent[1:], ingest_settings)
            store(db, sent[:1], ingest_settings)
    runs = (with_letter, without, third, beside)
    assert {frozenset(ids(sent)) for sent in runs} <= thread_partition(db)
    assert [[shape(v) for v in s["versions"]] for s in all_series(db)] == [
        [(1, msgs_id(with_letter[0]), ids(with_letter[1:]), True)],
        [(1, None, ids(without), True)],
        [(1, None, ids(third), True)],
        [(1, msgs_id(beside[0]), ids(beside[1:]), True)],
    ]


def test_unversioned_patches_replying_to_the_id_their_run_gave_a_rewritten_letter_are_its(
    db, make, ingest_settings
):
    """Hao Xu sent `[PATCH v4 RESEND 0/4]` and, minutes later, `[PATCH v5 0/4]` (io-uring)
    through Exchange, which gave each mail an id of its own; the patches, `[PATCH 1/4]`..`4/4`
    without a version as in all his versions, replied to the ids their runs gave the letters.
    Before, a letter was looked for at the patches' version only: each letter alone, each run's
    patches a version 1 of their own."""
    title = "fast poll multishot mode"
    runs = []
    exchange = "SG2PR01MB2411.prod.exchangelabs.com"
    for version, minutes, server_id in ((4, 0, f"SG2PR01MB2411F802@{exchange}"),
                                        (5, 15, f"SG2PR01MB241138ED@{exchange}")):
        sent = make(SeriesSpec(title=title, version=version, patches=4,
                               start_date=DEFAULT_START + dt.timedelta(minutes=minutes)))
        sent[1:] = [with_header(raw, "Subject", header(raw, "Subject").replace(
            f"[PATCH v{version} ", "[PATCH ")) for raw in sent[1:]]
        runs.append(rewritten(sent, server_id))
    store(db, [*runs[0], *runs[1]], ingest_settings)
    (series,) = all_series(db)
    assert [shape(v) for v in series["versions"]] == [
        (number, msgs_id(run[0]), ids(run[1:]), True)
        for number, run in zip((4, 5), runs, strict=True)]


def test_every_patch_sent_again_later_each_in_reply_to_itself_is_a_posting_of_its_own(
    db, make, ingest_settings
):
    """Four months after his `[PATCH 1/3]`..`3/3`, the author of the ax88179_178a fixes
    (linux-usb) sent all three again, changed, by one run: 2/3 and 3/3 in reply to the
    patches they replace, 1/3 in reply to a review. Before, the later 2/3 and 3/3 took the
    earlier ones' places as corrections, a version tested before holding patches it was not
    sent with, and the later 1/3 was an incomplete version of its own."""
    spec = SeriesSpec(title="ax88179_178a: improve tx stability", cover=False)
    first = make(spec)
    review = make_reply(first[0], author=("Rita Reviewer", "rita@example.org"), body="Why?")
    later = make(dataclasses.replace(spec, same_changes_as=spec, revised=(1, 2, 3),
                                     start_date=spec.date + dt.timedelta(days=120)))
    parents = [review, *first[1:]]
    later = [with_header(with_header(raw, "In-Reply-To", reply_to([parent])), "References",
                         f"{reply_to(first)} {reply_to([parent])}")
             for raw, parent in zip(later, parents, strict=True)]
    store(db, [*first, review, *later], ingest_settings)
    (series,) = all_series(db)
    assert [shape(v) for v in series["versions"]] == [
        (1, None, ids(first), True), (1, None, ids(later), True)]
    assert series["versions"][1]["notes"] == [
        f"every patch of the posting {msgs_id(first[0])} was sent again by a later run: a "
        "posting of its own"]


def test_patches_of_one_run_that_disagree_on_resend_are_one_version(db, make, ingest_settings):
    """AMD's `[PATCH v5 1/6]` and `[RESEND PATCH v5 2/6]`..`6/6`, one `git send-email` run in
    reply to a cover letter the list never had (alsa-devel, seven versions): before, two
    incomplete versions."""
    sent = make(SeriesSpec(title="ASoC: amd: Refactoring of DAI from DMA driver", version=5))
    patches = [sent[1], *(with_header(raw, "Subject", header(raw, "Subject").replace(
        "[PATCH v5", "[RESEND PATCH v5")) for raw in sent[2:])]
    store(db, patches, ingest_settings)
    (version,) = only_series(db)["versions"]
    assert shape(version) == (5, None, ids(patches), True)


def test_patches_sent_in_one_sitting_in_reply_to_the_reviews_of_their_last_version_are_one(
    db, make, ingest_settings
):
    """Rishi Gupta sent his veml6030 v3 (linux-iio) a patch a run, each in reply to the review
    of its v2, within three minutes: before, three versions of one patch each."""
    v2 = make(SeriesSpec(title="Add driver for veml6030 ambient light sensor", version=2))
    reviews = [make_reply(raw, author=("Jonathan Cameron", "jic23@example.org"), body="Why?")
               for raw in v2[1:]]
    v3 = make(SeriesSpec(title="Add driver for veml6030 ambient light sensor", version=3,
                         cover=False))
    v3 = [with_header(with_header(raw, "In-Reply-To", reply_to([review])), "References",
                      reply_to([review])) for raw, review in zip(v3, reviews, strict=True)]
    store(db, [*v2, *reviews, *v3], ingest_settings)
    versions = [shape(v) for s in all_series(db) for v in s["versions"]]
    assert sorted(versions) == [(2, msgs_id(v2[0]), ids(v2[1:]), True), (3, None, ids(v3), True)]


def test_a_rewritten_first_mail_in_reply_to_a_review_is_found_by_a_later_mails_id(
    db, make, ingest_settings
):
    """Edward Adam Davis's `[PATCH V4 1/2]` (Tencent's id) replied to a review of v3 and
    `2/2` to `<...-3-eadavis@qq.com>`, 1/2's id in its run (linux-wireless): the two come
    together, the review stored before. Before, 1/2 was no candidate, as it replied to a stored
    mail, and 2/2 stayed in a thread of its own."""
    v3 = make(SeriesSpec(title="wifi: ath6kl: Replace ath6kl_usb_submit_ctrl_in", version=3,
                         cover=False, patches=2))
    review = make_reply(v3[0], author=("Greg Kroah-Hartman", "greg@example.org"), body="No.")
    store(db, [*v3, review], ingest_settings)
    v4 = rewritten(make(SeriesSpec(title="wifi: ath6kl: Replace ath6kl_usb_submit_ctrl_in",
                                   version=4, cover=False, patches=2)),
                   "tencent_A037749680365C4BCC750776D566183C4509@qq.com", mail=3)
    v4[0] = with_header(with_header(v4[0], "In-Reply-To", reply_to([review])), "References",
                        reply_to([review]))
    store(db, v4, ingest_settings)
    found = [shape(v) for s in all_series(db) for v in s["versions"]]
    assert (4, None, ids(v4), True) in found, found


def test_patches_replying_to_an_id_outlook_rewrote_are_their_cover_letters(
    db, make, ingest_settings
):
    """Outlook's servers give each mail sent through them a Message-ID of their own: Jonas
    Karlman's `[PATCH 02/15]`..`04/15`, sent by one `git send-email` run after `01/15`, replied
    to the id that run gave `01/15`, which no archive holds, and named the cover letter in
    References (linux-rockchip). Before, the version was five incomplete postings."""
    sent = make(SeriesSpec(title="Support more HDMI modes", patches=3))
    rewritten = [*sent[:2]] + [
        with_header(with_header(raw, "In-Reply-To", "<20200106204723.5889-1-jonas@example.org>"),
                    "References", f"<{msgs_id(sent[0])}>") for raw in sent[2:]]
    store(db, rewritten, ingest_settings)
    (version,) = only_series(db)["versions"]
    assert shape(version) == (1, msgs_id(sent[0]), ids(sent[1:]), True)
