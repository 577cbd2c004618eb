"""The grouping rules on their own (no database): threads shaped as real archives have them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import random

from bot.series.grouping import (
    ThreadMessage,
    group_postings,
    sent_again_in_reply,
    series_title,
)
from bot.series.rewritten_ids import first_mail

START = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)
_clock = itertools.count()


def msg(msgid: str, reply: str | None = None, *, kind: str = "patch", counter: int = 1,
        total: int = 1, version: int = 1, explicit: bool = False, author: str = "ada@example.org",
        name: str = "Ada Reclaim", refs: tuple[str, ...] = ()) -> ThreadMessage:
    return ThreadMessage(
        msgid=msgid, in_reply_to=reply, references=refs or ((reply,) if reply else ()),
        author=author, author_name=name, date=START + dt.timedelta(minutes=next(_clock)),
        kind=kind, version=version, version_explicit=explicit, counter=counter, total=total,
        resend=False, title=f"title of {msgid}",
    )


def cover(msgid: str, total: int, **kw) -> ThreadMessage:
    return msg(msgid, kind="cover", counter=0, total=total, **kw)


def series(prefix: str, n: int, reply: str | None = None, **kw) -> list[ThreadMessage]:
    """A cover letter and n patches replying to it (shallow threading)."""
    head = cover(f"{prefix}0", n, reply=reply, **kw)
    return [head] + [msg(f"{prefix}{i}", head.msgid, counter=i, total=n, **kw)
                     for i in range(1, n + 1)]


def found(messages: list[ThreadMessage],
          resent_covers: dict[str, list[ThreadMessage]] | None = None) -> list[tuple]:
    return [(p.version, p.cover, p.members) for p in group_postings(messages, resent_covers)]


def test_a_patch_from_another_person_is_not_part_of_the_series():
    thread = series("a", 2)
    thread.append(msg("b2", "a0", counter=2, total=2, author="rita@example.org", name="Rita"))
    assert found(thread)[0] == (1, "a0", ["a0", "a1", "a2"])
    # One person is one address, or one display name; another address and no name is not.
    unnamed = dataclasses.replace(thread[2], author_name="")
    assert found([*thread[:2], unnamed])[0] == (1, "a0", ["a0", "a1", "a2"])
    elsewhere = dataclasses.replace(unnamed, author="ada@home.example")
    assert found([*thread[:2], elsewhere])[0] == (1, "a0", ["a0", "a1"])


def test_a_name_with_a_role_or_company_added_is_the_same_person():
    """Russell King's cover letters came from "Russell King - ARM Linux admin"
    <linux@armlinux.org.uk>, their patches from "Russell King" <rmk+kernel@armlinux.org.uk>
    (linux-i2c, linux-mips, netdev): the letters were left alone, and a posting sent again in
    reply to the first letter was mixed with the first into one coverless version."""
    def russell(m: ThreadMessage, name: str, address: str) -> ThreadMessage:
        return dataclasses.replace(m, author_name=name, author=address)

    cover, *patches = series("a", 2)
    thread = [russell(cover, "Russell King - ARM Linux admin", "linux@armlinux.example"),
              *[russell(p, "Russell King", "rmk+kernel@armlinux.example") for p in patches]]
    assert found(thread) == [(1, "a0", ["a0", "a1", "a2"])]
    oracle = [russell(thread[0], "Russell King (Oracle)", "linux@armlinux.example"), *thread[1:]]
    assert found(oracle) == [(1, "a0", ["a0", "a1", "a2"])]
    # another person of the same first name is not
    other = [russell(thread[0], "Russell Currey - IBM", "linux@armlinux.example"), *thread[1:]]
    assert found(other)[0] == (1, "a0", ["a0"])


def test_a_partial_reroll_replying_patch_by_patch_is_one_posting():
    v1 = series("a", 3)
    v2 = [msg(f"b{i}", f"a{i}", counter=i, total=3, version=2, explicit=True)
          for i in range(1, 4)]
    assert found(v1 + v2) == [(1, "a0", ["a0", "a1", "a2", "a3"]), (2, None, ["b1", "b2", "b3"])]


def test_a_patch_that_forgot_its_version_continues_its_sibling():
    """`[PATCH v3 1/2]`, then `[PATCH 2/2]` in reply to it (the author retyped the subject)."""
    first = msg("a1", counter=1, total=2, version=3, explicit=True)
    thread = [first, msg("a2", "a1", counter=2, total=2)]
    assert found(thread) == [(3, None, ["a1", "a2"])]
    # A patch that says another version is that version's, as before.
    other = msg("b2", "a1", counter=2, total=2, version=2, explicit=True)
    assert found([first, other]) == [(3, None, ["a1"]), (2, None, ["b2"])]


def test_additions_sent_later_extend_the_posting():
    """`[PATCH 4/3]` days later in reply to a review of 3/3 (a deep chain under a message not
    archived here), and `[PATCH 5/3]` in reply to it; `[PATCH v5 4/4]` in reply to the `v5 0/3`
    posting's first patch. Each posting grows; patches apply in their numbers' order."""
    deep = [msg("a1", "gone", counter=1, total=3)]
    deep += [msg(f"a{i}", f"a{i - 1}", counter=i, total=3, refs=("gone", *(f"a{j}" for j in
             range(1, i)))) for i in (2, 3)]  # fmt: skip
    review_path = ("gone", "a1", "a2", "a3", "review-of-a3")  # the review is not a posting part
    four = msg("a4", "review-of-a3", counter=4, total=3, refs=review_path)
    five = msg("a5", "a4", counter=5, total=3, refs=(*review_path, "a4"))
    for thread in (deep + [four, five], [five, four] + deep[::-1]):
        (posting,) = group_postings(thread)
        assert (posting.anchor, posting.members, posting.expected) == (
            "gone", ["a1", "a2", "a3", "a4", "a5"], 5)
        assert posting.complete
    v5 = series("b", 3, version=5, explicit=True)
    later = msg("b4", "b1", counter=4, total=4, version=5, explicit=True)
    (posting,) = group_postings(v5 + [later])
    assert (posting.cover, posting.members[1:], posting.expected) == ("b0", ["b1", "b2", "b3",
                                                                             "b4"], 4)


def test_later_patches_that_are_not_additions_stay_postings_of_their_own():
    v1 = series("a", 3)
    cases = {
        # a later version of one patch (a partial reroll) is not v1
        "v2": msg("v2", "a3", counter=3, total=3, version=2, explicit=True),
        # mm's fix-up to fold into 3/3 keeps its number: not a replacement of 3/3
        "fix": msg("fix", "a3", counter=3, total=3),
        # another person's
        "rita": msg("rita", "a3", counter=4, total=3, author="rita@example.org", name="Rita"),
        # another version's addition
        "v2add": msg("v2add", "a3", counter=4, total=4, version=2, explicit=True),
    }
    for name, later in cases.items():
        assert found(v1 + [later])[0] == (1, "a0", ["a0", "a1", "a2", "a3"]), name
    # Numbered patches sent into a single patch's posting are not its additions (a series
    # whose first subjects lost their counters); `[PATCH 2/1]` is.
    single = msg("s1")
    assert len(group_postings([single, msg("s3", "s1", counter=3, total=4)])) == 2
    (posting,) = group_postings([single, msg("s2", "s1", counter=2, total=1)])
    assert posting.members == ["s1", "s2"]


def test_versions_hanging_from_a_missing_cover_letter_stay_apart_in_any_order():
    v1 = series("a", 2)[1:]  # the cover letter a0 never arrived
    v2 = [msg(f"b{i}", "a0", counter=i, total=3, version=2, explicit=True) for i in (1, 2, 3)]
    expected = [(1, None, ["a1", "a2"]), (2, None, ["b1", "b2", "b3"])]
    for seed in range(5):
        thread = v1 + v2
        random.Random(seed).shuffle(thread)
        assert found(thread) == expected
    assert [p.anchor for p in group_postings(v1 + v2)] == ["a0", "b1"]


def test_single_patches_hanging_from_one_missing_message_are_postings_of_their_own():
    """Two `[PATCH]`es sent in reply to one message never seen are two patches, not one sent
    twice: the first is named by that message, the other by itself."""
    one, two = msg("p1", "gone"), msg("p2", "gone")
    for thread in ([one, two], [two, one]):
        postings = group_postings(thread)
        assert [(p.anchor, p.members) for p in postings] == [("gone", ["p1"]), ("p2", ["p2"])]
        assert not any(p.notes for p in postings)


def sent_beside(prefix: str, n: int, parent: str, version: int = 2,
                **kw) -> list[ThreadMessage]:
    """`git send-email --no-thread --in-reply-to=<parent>`: the cover letter and each patch
    in reply to `parent`, none to the cover letter."""
    return [cover(f"{prefix}0", n, reply=parent, version=version, explicit=True, **kw)] + [
        msg(f"{prefix}{i}", parent, counter=i, total=n, version=version, explicit=True, **kw)
        for i in range(1, n + 1)]


def test_a_cover_letter_sent_beside_its_patches_is_their_cover_letter_in_any_order():
    """cgroups: memcg accounting v1..v3 were sent with the cover letter and every patch in
    reply to a review, or to a message the list never saw: the cover letter was left without
    patches, and the patches hung from the review as from a missing cover letter."""
    v1 = series("a", 3)
    review = msg("r", "a0", kind="review", author="rita@example.org", name="Rita")
    for parent, extra in (("r", [review]), ("elsewhere", [])):
        v2 = sent_beside("b", 3, parent)
        for seed in range(4):
            thread = v1 + extra + v2
            random.Random(seed).shuffle(thread)
            assert found(thread) == [(1, "a0", ["a0", "a1", "a2", "a3"]),
                                     (2, "b0", ["b0", "b1", "b2", "b3"])], (parent, seed)


def test_a_cover_letter_sent_under_another_message_id_takes_its_patches():
    """The patches reply to the Message-ID `git format-patch` gave the cover letter; the cover
    letter went out from a mail client under a new one, in reply to the same message as that
    (cgroups, memcg accounting v3). It is theirs: the only cover letter of their author,
    version and size in the thread without patches."""
    v1 = series("a", 3)
    head = cover("b0", 3, reply="a0", version=2, explicit=True)
    parts = [msg(f"b{i}", "cover.b0", counter=i, total=3, version=2, explicit=True,
                 refs=("a0", "cover.b0")) for i in (1, 2, 3)]
    assert found(v1 + [head, *parts])[1] == (2, "b0", ["b0", "b1", "b2", "b3"])


def test_a_single_patch_sent_beside_its_cover_letter_is_its_posting():
    """`[PATCH v2 0/1]` and `[PATCH v2 1/1]`, both in reply to v1's patch: one posting."""
    v1 = msg("a1")
    v2 = sent_beside("b", 1, "a1")
    assert found([v1, *v2]) == [(1, None, ["a1"]), (2, "b0", ["b0", "b1"])]


def test_only_a_cover_letter_of_the_same_posting_is_taken_beside_patches():
    """Beside the patches, a cover letter of another version, size or author stays alone."""
    v1 = series("a", 3)
    for parent in ("a0", "elsewhere"):  # v1's cover letter, or a message never seen
        patches = sent_beside("b", 3, parent)[1:]
        for other in (cover("c", 3, reply=parent, version=3, explicit=True),
                      cover("c", 4, reply=parent, version=2, explicit=True),
                      cover("c", 3, reply=parent, version=2, explicit=True,
                            author="rita@example.org", name="Rita")):
            postings = found(v1 + [other, *patches])
            assert (2, None, ["b1", "b2", "b3"]) in postings
            assert (other.version, "c", ["c"]) in postings


def test_a_cover_letter_known_by_its_diffstat_takes_numbered_patches_only():
    head = msg("a0", kind="cover")  # "[PATCH] mm: foo" with a diffstat and no diff
    thread = [head, msg("a1", "a0", counter=1, total=2), msg("a2", "a0", counter=2, total=2),
              msg("fix", "a0")]
    assert found(thread) == [(1, "a0", ["a0", "a1", "a2"]), (1, None, ["fix"])]


def test_a_letter_that_numbers_no_patches_takes_its_one_single_patch():
    """`[PATCH v2] title` with a diffstat and one `[PATCH v2]` in reply (linux-pm, cgroups), or
    Darrick Wong's `[PATCHSET v29.0 07/28]` over a lone `[PATCH 1/1]` (linux-xfs): one posting.
    Two `[PATCH]`es in reply, or `[PATCH]`es over a `0/9`, are none of them its patch 1."""
    diffstat = msg("d0", kind="cover", version=2, explicit=True)
    patchset = msg("s0", kind="cover", counter=7, total=28, version=29, explicit=True)
    for head in (diffstat, patchset):
        (posting,) = group_postings([head, msg("p1", head.msgid)])
        assert (posting.version, posting.cover, posting.members) == (head.version, head.msgid,
                                                                     [head.msgid, "p1"])
        two = found([head, msg("p1", head.msgid), msg("p2", head.msgid)])
        assert (head.version, head.msgid, [head.msgid]) in two
    unnumbered = [cover("c0", 9)] + [msg(f"c{i}", "c0") for i in range(1, 4)]
    assert found(unnumbered) == [(1, "c0", ["c0"])] + [(1, None, [f"c{i}"]) for i in (1, 2, 3)]


def test_a_later_version_or_someone_elses_patch_replying_leaves_the_letter_its_patch():
    """`git format-patch --cover-letter -N`: `[PATCH] title` over its diffstat and one
    `[PATCH] title` in reply, then `[PATCH v2]` sent in reply to that letter a day later
    (linux-nfs, "nfs: Fix security label length not being reset"), or a reviewer's fix-up
    `[PATCH]` in reply to it. Neither could be its patch: the letter keeps its own. Before, v1
    lost its cover letter when v2 came."""
    letter = msg("d0", kind="cover")
    later = msg("v2", "d0", version=2, explicit=True)
    other = msg("o1", "d0", author="rita@example.org", name="Rita")
    for also in (later, other):
        postings = found([letter, msg("p1", "d0"), also])
        assert (1, "d0", ["d0", "p1"]) in postings
        assert (also.version, None, [also.msgid]) in postings


def test_a_cover_letter_that_miscounts_keeps_its_patches():
    # The cover letter says 0/4, the patches were regenerated as x/5.
    thread = [cover("a0", 4)] + [msg(f"a{i}", "a0", counter=i, total=5) for i in range(1, 6)]
    assert found(thread) == [(1, "a0", ["a0", "a1", "a2", "a3", "a4", "a5"])]


def test_a_reference_loop_does_not_hang():
    a = msg("a1", "a2", counter=1, total=2)
    b = msg("a2", "a1", counter=2, total=2)
    postings = group_postings([a, b])
    assert sorted(m for p in postings for m in p.members) == ["a1", "a2"]


def test_series_title_prefers_the_newest_cover_letter():
    v1 = (1, True, START, "mm: the series")
    v2 = (2, False, START + dt.timedelta(days=7), "mm/vmscan: one patch of it")
    assert series_title([v1, v2]) == "mm: the series"
    assert series_title([v1, v2, (3, True, None, "mm: renamed")]) == "mm: renamed"
    assert series_title([v2]) == "mm/vmscan: one patch of it"
    assert series_title([]) == ""


def unthreaded(prefix: str, n: int, start: dt.datetime, **kw) -> list[ThreadMessage]:
    """`git format-patch` without `--thread`: a cover letter and n patches a second apart,
    none replying to anything."""
    made = [cover(f"{prefix}0", n, **kw)] + [msg(f"{prefix}{i}", counter=i, total=n, **kw)
                                            for i in range(1, n + 1)]
    return [dataclasses.replace(m, date=start + dt.timedelta(seconds=i))
            for i, m in enumerate(made)]


def test_unthreaded_sends_are_split_by_number_and_date_in_any_order():
    """Sent, then sent again 20 minutes later, then a series of another size and one of
    another tree: four postings, each named by its cover letter, whatever the order."""
    first = unthreaded("a", 3, START)
    again = unthreaded("b", 3, START + dt.timedelta(minutes=20))
    pair = unthreaded("c", 2, START + dt.timedelta(seconds=1))
    tagged = [dataclasses.replace(m, prefixes=("mm-hotfixes",))
              for m in unthreaded("d", 3, START + dt.timedelta(seconds=2))]
    expected = sorted((1, p[0].msgid, [m.msgid for m in p])
                      for p in (first, again, pair, tagged))
    for seed in range(6):
        thread = first + again + pair + tagged
        random.Random(seed).shuffle(thread)
        assert sorted(found(thread)) == expected


def test_unthreaded_parts_an_hour_apart_or_out_of_order_are_not_one_posting():
    parts = unthreaded("a", 3, START)
    late = dataclasses.replace(parts[3], date=START + dt.timedelta(hours=2))
    assert found([*parts[:3], late]) == [(1, "a0", ["a0", "a1", "a2"]), (1, None, ["a3"])]
    # Patch 2 sent by hand five minutes before the cover letter and patch 1: the same send;
    # half an hour before, another one.
    early = dataclasses.replace(parts[2], date=START - dt.timedelta(minutes=5))
    assert found([parts[0], parts[1], early]) == [(1, "a0", ["a0", "a1", "a2"])]
    earlier = dataclasses.replace(parts[2], date=START - dt.timedelta(minutes=30))
    assert found([parts[0], parts[1], earlier]) == [(1, None, ["a2"]), (1, "a0", ["a0", "a1"])]


def test_point_releases_are_postings_of_their_own():
    """Darrick Wong respins patches of v4 as `[PATCH v4.1 i/N]` and `v4.2`, each in reply to the
    patch it replaces: read as version 4, each point release is a posting apart from v4's and
    from the other's, not one posting of v4 with two patches."""
    v4 = series("a", 3, version=4, explicit=True)
    respins = [dataclasses.replace(msg(f"p{point}", f"a{point + 1}", counter=point + 1, total=3,
                                       version=4, explicit=True), prefixes=(f"v4.{point}",))
               for point in (1, 2)]
    assert found(v4 + respins) == [(4, "a0", ["a0", "a1", "a2", "a3"]), (4, None, ["p1"]),
                                   (4, None, ["p2"])]


def test_an_untagged_cover_letter_takes_its_patches_point_release():
    """linux-pm: `[RFC] GPU-bound energy efficiency ... (v2.99)` over `[PATCHv2.99 01/11]`..:
    the cover letter without a posting tag takes its patches' version, v2.99, not v2, and so
    is their cover letter."""
    head = msg("c", kind="other")
    parts = [dataclasses.replace(msg(f"p{i}", "c", counter=i, total=3, version=2, explicit=True),
                                 prefixes=("v2.99",)) for i in range(1, 4)]
    (posting,) = group_postings([head, *parts])
    assert (posting.version, posting.cover, posting.members, posting.complete) == (
        2, "c", ["c", "p1", "p2", "p3"], True)
    assert posting.prefixes == ("v2.99",)  # the version is named v2.99, as its author did


def diffless(m: ThreadMessage) -> ThreadMessage:
    return dataclasses.replace(m, has_diff=False)


def test_a_cover_letter_numbered_as_a_patch_is_the_cover_letter():
    """nvdimm's `[NDCTL PATCH v7 4/4]` over `v7 1/4`..`4/4`, and linux-xfs's `[PATCH 1/8 v2]`
    over unversioned `1/8`..`8/8`: a numbered patch without a diff to which patches of its
    author and size reply, one at or below its number, is their cover letter, in any order of
    arrival."""
    ndctl = [diffless(msg("c", counter=4, total=4, version=7, explicit=True))] + [
        msg(f"n{i}", "c", counter=i, total=4, version=7, explicit=True) for i in range(1, 5)]
    xfs = [diffless(msg("x", counter=1, total=3, version=2, explicit=True))] + [
        msg(f"x{i}", "x", counter=i, total=3) for i in range(1, 4)]
    for thread, version in ((ndctl, 7), (xfs, 2)):
        (posting,) = group_postings(reversed(thread))
        assert (posting.version, posting.cover, posting.members, posting.complete) == (
            version, thread[0].msgid, [m.msgid for m in thread], True)
        assert posting.title == thread[0].title and not posting.notes


def test_a_patch_without_a_diff_leaves_its_number_missing():
    """A patch whose diff a mail client ate, in a shallow thread, a deep one, and at the top of
    one without a cover letter (where its siblings reply to it, numbered above it): the
    posting lacks that number and says why; nothing becomes a cover letter."""
    shallow = series("s", 3)
    shallow[2] = diffless(shallow[2])
    deep = [msg("d1", counter=1, total=3), diffless(msg("d2", "d1", counter=2, total=3)),
            msg("d3", "d2", counter=3, total=3)]
    top = [diffless(msg("t1", counter=1, total=3)), msg("t2", "t1", counter=2, total=3),
           msg("t3", "t1", counter=3, total=3)]
    for thread, cover in ((shallow, "s0"), (deep, None), (top, None)):
        lost = next(m for m in thread if not m.has_diff)
        (posting,) = group_postings(thread)
        assert posting.cover == cover and not posting.complete
        assert lost.msgid not in posting.members and len(posting.patches) == 2
        assert posting.notes == [f"patch {lost.counter}/3 carries no diff that git can apply, "
                                 f"so its number stays missing: {lost.msgid}"]


def test_a_later_patch_without_a_diff_does_not_replace_its_number():
    """b4 prep's empty cover commit sent as `[PATCH v6 1/7]` beside the real cover letter and
    patch 1 sent again: the patch with a diff keeps number 1."""
    thread = series("a", 2)
    thread.append(diffless(msg("e", "a0", counter=1, total=2)))
    (posting,) = group_postings(thread)
    assert posting.members == ["a0", "a1", "a2"] and posting.complete


def titled(message: ThreadMessage, title: str) -> ThreadMessage:
    return dataclasses.replace(message, title=title)


GUP, FAST = "secretmem/gup: check the page with a reference", "secretmem: a faster page test"


def sent_with_stale_files() -> list[ThreadMessage]:
    """`git send-email v2-*.patch` on a folder that still held an earlier run of the same size
    in the other order (Mike Rapoport's secretmem v2): by file name, the cover letter (the new
    run's, written over the old), then 0001 of each run, then 0002 of each, all in reply to
    the cover letter."""
    head = cover("c0", 2, version=2, explicit=True)
    sent = [(1, GUP, "new1"), (1, FAST, "old1"), (2, GUP, "old2"), (2, FAST, "new2")]
    return [head] + [titled(msg(m, "c0", counter=n, total=2, version=2, explicit=True), t)
                     for n, t, m in sent]


def test_a_number_sent_twice_is_the_patch_the_cover_letter_lists():
    thread = sent_with_stale_files()
    # Rows alone cannot tell which run is the new one: the later copy of each number is taken,
    # and the posting asks for its cover letter's shortlog.
    (unread,) = group_postings(thread)
    assert unread.patches == {1: "old1", 2: "new2"} and unread.needs_shortlog
    thread[0] = dataclasses.replace(thread[0], shortlog=((GUP, FAST),))
    (posting,) = group_postings(thread)
    assert posting.patches == {1: "new1", 2: "new2"} and not posting.needs_shortlog
    assert posting.notes == [
        "patch 1/2 was sent twice, as different patches; using new1, the one the cover letter "
        "lists",
        "patch 2/2 was sent twice, as different patches; using new2, the one the cover letter "
        "lists",
    ]
    # in any order of arrival
    for seed in range(4):
        random.Random(seed).shuffle(thread)
        assert group_postings(thread)[0].patches == {1: "new1", 2: "new2"}


def test_a_shortlog_of_several_authors_names_the_copy_it_lists():
    """Alex Shi's "per memcg lru lock" v10 (cgroups): 13 patches of his and 2 of Hugh
    Dickins's, so the shortlog's blocks go by author and not by number; `10/15` sent twice,
    the stale one under a title the shortlog does not list."""
    thread = series("a", 3)
    thread.insert(3, titled(msg("stale2", "a0", counter=2, total=3), "mm/mlock: old way"))
    blocks = (("title of a1", "title of a3"), ("title of a2",))
    thread[0] = dataclasses.replace(thread[0], shortlog=blocks)
    assert group_postings(thread)[0].patches == {1: "a1", 2: "a2", 3: "a3"}


def test_a_number_sent_twice_as_one_patch_is_the_later_copy():
    """A patch sent again with the same title (a correction, or the whole run sent twice):
    the later one, as before; the shortlog cannot tell them apart and is not asked for."""
    thread = series("a", 2)
    thread.append(titled(msg("again1", "a0", counter=1, total=2), "title of a1"))
    (posting,) = group_postings(thread)
    assert posting.patches == {1: "again1", 2: "a2"} and not posting.needs_shortlog
    assert posting.notes == ["patch 1/2 was sent twice; using again1"]
    # A cover letter whose shortlog lists neither copy (it was edited by hand) changes nothing.
    stale = titled(msg("stale2", "a0", counter=2, total=2), "something else")
    thread = [dataclasses.replace(thread[0], shortlog=(("x", "y"),)), *thread[1:3], stale]
    assert group_postings(thread)[0].patches == {1: "a1", 2: "stale2"}


def test_a_cover_letter_misnumbered_in_the_send_is_its_patches_cover_letter():
    """Lorenzo Stoakes's `[PATCH v2 00/16]` over `[PATCH v3 01/16]`.. (linux-arch), sent by one
    `git send-email` run: the letter is theirs, at their version; so is a letter without a
    version (`[PATCH 0/2]` over `[PATCH v2 1/2]`.., cgroups, linux-arch)."""
    for said, explicit, note in ((2, True, "says v2"), (1, False, "gives no version")):
        thread = series("a", 3, version=3, explicit=True)
        thread[0] = dataclasses.replace(thread[0], version=said, version_explicit=explicit)
        (posting,) = group_postings(thread)
        assert (posting.version, posting.cover, posting.members) == (3, "a0", ["a0", "a1", "a2",
                                                                                "a3"])
        assert posting.notes == [f"the cover letter {note}, the patches sent with it v3: read "
                                 "as v3"]


def test_a_later_version_under_an_old_cover_letter_stays_apart():
    """v2 sent days after, in reply to v1's cover letter (whose own patches went to another
    list); or minutes after, with v1's own patches in the thread; or patches of two versions
    under one letter: the letter keeps its version, the patches are postings of their own."""
    v1 = series("a", 2)[:1]
    later = [dataclasses.replace(m, date=m.date + dt.timedelta(days=3))
             for m in (msg(f"b{i}", "a0", counter=i, total=2, version=2, explicit=True)
                       for i in (1, 2))]
    assert found(v1 + later) == [(1, "a0", ["a0"]), (2, None, ["b1", "b2"])]
    with_own = series("c", 2)
    soon = [msg(f"d{i}", "c0", counter=i, total=2, version=2, explicit=True) for i in (1, 2)]
    assert found(with_own + soon) == [(1, "c0", ["c0", "c1", "c2"]), (2, None, ["d1", "d2"])]
    mixed = [cover("e0", 2), msg("e1", "e0", counter=1, total=2, version=3, explicit=True),
             msg("e2", "e0", counter=2, total=2, version=2, explicit=True)]
    assert [p.cover for p in group_postings(mixed)] == ["e0", None, None]


def unnumbered(msgid: str, title: str, **kw) -> ThreadMessage:
    """A `[PATCH]` sent in reply to the cover letter `c0`."""
    return titled(msg(msgid, "c0", **kw), title)


def test_patches_sent_without_numbers_take_the_places_the_shortlog_gives():
    """`[PATCH 0/3]` over `1/3` and two `[PATCH]`es (memcg, writeback on cgroups): the letter's
    shortlog numbers them; a `[PATCH]` to xfstests sent beside stays a posting of its own; the
    letter's shortlog is asked for while unread."""
    head = cover("c0", 3)
    thread = [head, titled(msg("p1", "c0", counter=1, total=3), "one"),
              unnumbered("p3", "three"), unnumbered("p2", "two"), unnumbered("x", "fstests")]
    (posting, *rest) = group_postings(thread)
    assert posting.members == ["c0", "p1"] and posting.needs_shortlog
    thread[0] = dataclasses.replace(head, shortlog=(("one", "two", "three"),))
    (posting, extra) = group_postings(thread)
    assert (posting.cover, posting.patches, posting.complete) == (
        "c0", {1: "p1", 2: "p2", 3: "p3"}, True)
    assert posting.notes == [
        "patch 2/3 was sent without a number; numbered as the cover letter lists it: p2",
        "patch 3/3 was sent without a number; numbered as the cover letter lists it: p3",
    ]
    assert (extra.cover, extra.members) == (None, ["x"])


def test_unnumbered_patches_of_several_authors_go_in_the_order_sent():
    """`[PATCH v3] mm/memfd: ...` (a letter numbering none, with its diffstat) over six `[PATCH
    v3]`es, two by Daniel Verkamp, four by Jeff Xu (linux-kselftest): the shortlog's blocks go
    by author, so the order they were sent in numbers them, when it keeps each block's."""
    letter = dataclasses.replace(msg("c0", version=3, explicit=True), kind="cover",
                                 shortlog=(("d1", "d2"), ("j1", "j2", "j3")))
    order = ["d1", "j1", "d2", "j2", "j3"]
    patches = [unnumbered(t, t, version=3, explicit=True) for t in order]
    (posting,) = group_postings([letter, *patches])
    assert posting.patches == dict(enumerate(order, start=1)) and posting.expected == 5
    # sent against a block's order (j2 before j1), the order tells nothing: postings of their own
    swapped = [unnumbered(t, t, version=3, explicit=True) for t in ["d1", "j2", "d2", "j1", "j3"]]
    assert [p.cover for p in group_postings([letter, *swapped])] == ["c0"] + [None] * 5


def test_a_copy_of_the_cover_letter_takes_the_later_patches_sent_with_it():
    """Rule 13: v4's cover letter under v3's Message-ID, kept as a copy elsewhere, and v4's
    patches in reply to that id a month later: the copy's posting, all of them or one. A copy
    of another author, or patches sent long after the copy, change nothing."""
    v3 = series("a", 2)
    v3[0] = dataclasses.replace(v3[0], version=3, version_explicit=True)
    month = dt.timedelta(days=30)

    def later(m: ThreadMessage, name: str) -> ThreadMessage:
        return dataclasses.replace(m, msgid=name, date=m.date + month)

    letter = dataclasses.replace(later(v3[0], "copy@copy.lorelab.invalid"), version=4)
    alone = (4, letter.msgid, [letter.msgid])  # a cover letter alone: no posting (assembly)
    v4 = [later(v3[1], "b1"), later(v3[2], "b2")]
    assert found(v3 + v4, {"a0": [letter]}) == [
        (3, "a0", ["a0", "a1", "a2"]), (4, "copy@copy.lorelab.invalid",
                                        ["copy@copy.lorelab.invalid", "b1", "b2"])]
    assert found(v3 + v4[1:], {"a0": [letter]}) == [
        (3, "a0", ["a0", "a1", "a2"]), (4, "copy@copy.lorelab.invalid",
                                        ["copy@copy.lorelab.invalid", "b2"])]
    # Without the copy: all of them are a posting of their own (rule 12), one a correction.
    assert found(v3 + v4, {}) == [(3, "a0", ["a0", "a1", "a2"]), (1, None, ["b1", "b2"])]
    assert found(v3 + v4[1:], {}) == [(3, "a0", ["a0", "a1", "b2"])]
    mallory = dataclasses.replace(letter, author="mallory@evil.example", author_name="Mallory")
    assert found(v3 + v4[1:], {"a0": [mallory]}) == [(3, "a0", ["a0", "a1", "b2"]), alone]
    early = dataclasses.replace(letter, date=letter.date - dt.timedelta(hours=1))
    assert found(v3 + v4[1:], {"a0": [early]}) == [(3, "a0", ["a0", "a1", "b2"]), alone]


def test_a_later_run_renumbered_in_reply_to_the_cover_letter_is_a_posting_of_its_own():
    """Rule 12 for a list's share of a later version: Nikita Shubin's ep93xx conversion
    (linux-pwm) sent June's `[PATCH v1 15/43]` and `16/43` in reply to April's `[PATCH 00/43]`,
    whose 14/43 and 15/43 they are, moved on by one; they took April's places as corrections
    (rule 9), mixing two versions. A correction under its own number stays one."""
    april = [cover("a0", 43), *(dataclasses.replace(
        msg(f"a{i}", "a0", counter=i, total=43), title=f"t{i}") for i in (14, 15, 36))]
    june = [dataclasses.replace(msg(f"b{i}", "a0", counter=i, total=43), title=f"t{i - 1}",
                                date=april[1].date + dt.timedelta(days=38, minutes=i))
            for i in (15, 16)]
    postings = group_postings([*april, *june])
    assert [(p.cover, p.members) for p in postings] == [
        ("a0", ["a0", "a14", "a15", "a36"]), (None, ["b15", "b16"])]
    assert postings[1].notes == [
        "sent later in reply to the cover letter a0 of an earlier posting, renumbered "
        "(15/43 is 14/43, 16/43 is 15/43): a posting of its own"]
    corrected = dataclasses.replace(june[0], title="t15")
    assert found([*april, corrected]) == [(1, "a0", ["a0", "a14", "b15", "a36"])]


def test_patches_replying_to_a_rewritten_id_go_with_the_cover_letter_they_name():
    """Outlook's servers give each mail a Message-ID of their own: Jonas Karlman's `[PATCH
    02/15]`..`04/15` replied to the id their `git send-email` run gave `01/15`, which no archive
    holds, and named the cover letter in References (linux-rockchip). Before, each such run
    was an incomplete posting of its own and the version was never tested (rule 3)."""
    letter = cover("c0", 3)
    first = msg("p1", "c0", counter=1, total=3)
    rest = [msg(f"p{i}", "gone-1", refs=("c0",), counter=i, total=3) for i in (2, 3)]
    assert found([letter, first, *rest]) == [(1, "c0", ["c0", "p1", "p2", "p3"])]
    # a letter sent days before them, or another posting's patch nearer: they hang as before
    # (sent half an hour after the patch 1 beside them: not with it, as rule 4 would join them)
    later = [dataclasses.replace(m, date=m.date + dt.timedelta(minutes=30)) for m in rest]
    old = dataclasses.replace(letter, date=first.date - dt.timedelta(days=2))
    assert found([old, first, *later])[1:] == [(1, None, ["p2", "p3"])]
    nearer = msg("q1", "c0", counter=1, total=3)
    via_patch = [dataclasses.replace(msg(f"p{i}", "gone-1", refs=("c0", "q1"), counter=i,
                                         total=3), date=nearer.date + dt.timedelta(minutes=30))
                 for i in (2, 3)]
    assert found([letter, nearer, *via_patch]) == [
        (1, "c0", ["c0", "q1"]), (1, None, ["p2", "p3"])]


def run_id(first: ThreadMessage, pid: int = 4242) -> str:
    """The id `git send-email` gave the first mail of its run: when it began sending (a second
    a file after the first mail's Date), its process id and its sender."""
    assert first.date is not None
    when = first.date + dt.timedelta(seconds=first.total)
    return f"{when:%Y%m%d%H%M%S}.{pid}-1-{first.author}"


def test_patches_replying_to_the_id_their_run_gave_its_first_mail_go_with_it():
    """Outlook rewrites the Message-ID of every mail sent through it: Jonathan Bakker's cover
    letters (linux-samsung-soc) came under Outlook's ids and their patches in reply to the id
    `git send-email` gave them; Chris Morgan's rk817 codec `[PATCH v4 2/3]` and `3/3`
    (alsa-devel), sent without one, to the id of `1/3`. Before, the letter was in no version
    (the version named by patch 1's title), and 1/3 and 2/3..3/3 two incomplete postings."""
    letter = cover("BN6PR04MB0660@outlook.com", 3)
    patches = [msg(f"p{i}", run_id(letter), counter=i, total=3) for i in (1, 2, 3)]
    assert found([letter, *patches]) == [(1, letter.msgid, [letter.msgid, "p1", "p2", "p3"])]
    one = msg("CY4PR04MB0567@outlook.com", counter=1, total=3)
    rest = [msg(f"q{i}", run_id(one), counter=i, total=3) for i in (2, 3)]
    assert found([one, *rest]) == [(1, None, [one.msgid, "q2", "q3"])]
    # a later mail's id of the run: Tencent kept Edward Adam Davis's `[PATCH V4 2/2]` in reply
    # to `-3-`, his 1/2, which replied to a review (linux-wireless, linux-usb)
    two = msg("tencent_A0377@qq.com", "review", counter=1, total=2)
    second = msg("tencent_6E587@qq.com", run_id(two).replace("-1-", "-3-"), counter=2, total=2)
    assert found([two, second]) == [(1, None, [two.msgid, second.msgid])]
    # a patch without a Date goes with them too
    undated = dataclasses.replace(patches[2], msgid="u3", date=None)
    assert found([letter, *patches[:2], undated])[0][2] == [letter.msgid, "p1", "p2", "u3"]
    # the old form of send-email's ids (before git 2.9): seconds since 1970
    stamp = int(letter.date.timestamp()) + 3
    old = [msg(f"r{i}", f"{stamp}-77-1-git-send-email-ada@example.org", counter=i, total=3)
           for i in (1, 2, 3)]
    assert found([letter, *old]) == [(1, letter.msgid, [letter.msgid, "r1", "r2", "r3"])]


def test_runs_of_a_patch_or_a_few_each_in_reply_to_the_run_before_are_one_posting():
    """Jonathan Bakker sent his onenand series through Outlook by hand, a run a patch or a
    few, each with `--in-reply-to` the first mail of the run before (linux-samsung-soc): 2/5
    replied to the id of 1/5's run, 3/5..5/5 to the id of their own run's first, 2/5, which is
    no cover letter or patch 1. They go with the patch 1 dated nearest, and it with the letter
    (rule 4: 1/5 replied to an id of the letter's run that no archive holds)."""
    when = START + dt.timedelta(days=400)

    def sent(m: ThreadMessage, seconds: int) -> ThreadMessage:
        return dataclasses.replace(m, date=when + dt.timedelta(seconds=seconds))

    letter = sent(cover("CY4PR04MB0567C@outlook.com", 5), 0)
    one = sent(msg("CY4PR04MB0567P1@outlook.com", "20261130100005.1-2-ada@example.org",
                   counter=1, total=5), 133)
    two = sent(msg("CY4PR04MB0567P2@outlook.com", run_id(one, 2), counter=2, total=5), 188)
    rest = [sent(msg(f"CY4PR04MB0567P{i}@outlook.com", f"{two.date:%Y%m%d%H%M%S}.3-1-ada@"
                     "example.org", counter=i, total=5), 186 + i) for i in (3, 4, 5)]
    (posting,) = group_postings([letter, one, two, *rest])
    assert (posting.cover, posting.complete) == (letter.msgid, True)


def test_a_mail_the_id_of_a_run_does_not_name_is_not_its_first():
    """Another sender, size or version (but a cover letter's, for patches that give none), a
    mail dated away from the time the id gives, or one under send-email's own id (not
    rewritten, so not the mail the id names), or a patch 2: not the mail the id names."""
    one = msg("CY4PR04MB0567@outlook.com", counter=1, total=3)
    gone = run_id(one)
    part = msg("q2", gone, counter=2, total=3)
    assert first_mail(gone, part, [one]) == one
    for other in (
        dataclasses.replace(one, author="rita@example.org", author_name="Rita"),
        dataclasses.replace(one, total=4),
        dataclasses.replace(one, version=2, version_explicit=True),
        dataclasses.replace(one, date=one.date + dt.timedelta(minutes=20)),
        dataclasses.replace(one, date=one.date - dt.timedelta(minutes=20)),
        dataclasses.replace(one, msgid="20261130100003.99-1-ada@example.org"),
        dataclasses.replace(one, counter=2),
    ):
        assert first_mail(gone, part, [other]) is None, other
    # a cover letter gives a version its unversioned patches may lack; patch 1 gives theirs
    letter = dataclasses.replace(one, kind="cover", counter=0, version=5, version_explicit=True)
    assert first_mail(gone, part, [letter]) == letter
    # patches hanging from it, 20 minutes away from patch 1: two postings
    away = dataclasses.replace(one, date=one.date + dt.timedelta(minutes=20))
    assert sorted(p.members for p in group_postings([away, part])) == [[one.msgid], ["q2"]]


def test_a_cover_letter_sent_in_reply_to_a_patch_of_its_posting_is_its_cover_letter():
    """Rule 14: written after its patches and sent in reply to patch 1; or sent among them by
    one `git send-email` run given the files in another order, everything in reply to the
    first file. A letter of another size, version or author stays apart."""
    one = msg("p1", counter=1, total=2)
    two = msg("p2", "p1", counter=2, total=2)
    letter = cover("c0", 2, reply="p1")
    assert found([one, two, letter]) == [(1, "c0", ["c0", "p1", "p2"])]
    scrambled = [msg("q2", counter=2, total=2), cover("d0", 2, reply="q2"),
                 msg("q1", "q2", counter=1, total=2)]
    assert found(scrambled) == [(1, "d0", ["d0", "q1", "q2"])]
    for other in (cover("e0", 3, reply="p1"), cover("e0", 2, reply="p1", version=2,
                                                   explicit=True),
                  cover("e0", 2, reply="p1", author="bob@example.org", name="Bob")):
        assert [p.cover for p in group_postings([one, two, other])] == [None, "e0"]


def test_a_cover_letter_sent_again_with_the_title_the_first_lacked_takes_its_place():
    """Rule 15: the first letter had no title (an empty subject, read as the cover letter of the
    patches replying to it by rule 7); the author sent it again with one, and the version, in
    reply to it. Another author or size, a letter over a first that gave its version as
    another, or one sent days later, stays apart."""
    untitled = dataclasses.replace(cover("c0", 2), title="")
    patches = [msg("p1", "c0", counter=1, total=2), msg("p2", "c0", counter=2, total=2)]
    letter = dataclasses.replace(cover("c1", 2, reply="c0", version=3, explicit=True),
                                 date=untitled.date + dt.timedelta(hours=13))
    (posting,) = group_postings([untitled, *patches, letter])
    assert (posting.anchor, posting.cover, posting.version, posting.title) == (
        "c0", "c1", 3, "title of c1")
    assert sorted(posting.members) == ["c1", "p1", "p2"]
    late = dataclasses.replace(letter, date=untitled.date + dt.timedelta(days=3))
    said = dataclasses.replace(untitled, version=2, version_explicit=True)
    for other, first in ((dataclasses.replace(letter, total=3), untitled),
                         (dataclasses.replace(letter, author="bob@example.org",
                                              author_name="Bob"), untitled),
                         (late, untitled), (letter, said)):
        # the letter alone, a posting with no patches (assembly stores none)
        assert [p.cover for p in group_postings([first, *patches, other])] == ["c0", "c1"]


def test_a_patch_sent_again_changed_in_reply_to_itself_replaces_it():
    """Rule 9: under its title and number, another diff, in reply to the patch: a correction.
    A `(fix)` (another title), the same diff (a RESEND of that patch), or another version
    stays apart."""
    thread = [dataclasses.replace(m, fingerprint=f"diff of {m.msgid}") for m in series("a", 3)]

    def again(msgid: str, **changes) -> ThreadMessage:
        sent = msg(msgid, "a2", counter=2, total=3)
        return dataclasses.replace(sent, **{"title": "title of a2", "fingerprint": "new",
                                            **changes})

    assert found([*thread, again("r2")]) == [(1, "a0", ["a0", "a1", "r2", "a3"])]
    for other in (again("f2", title="title of a2 (fix)"),
                  again("t2", prefixes=("-fix",)),  # mm's `[PATCH v6 2/3 -fix] title`
                  again("u2", prefixes=("fix2",), in_reply_to="a0", references=("a0",)),
                  again("s2", fingerprint="diff of a2"),
                  again("v2", version=2, version_explicit=True)):
        assert found([*thread, other])[0] == (1, "a0", ["a0", "a1", "a2", "a3"])
    # The files it changes, where read: one of the patch's (a correction), or none of them
    # (Tony Battersby's `[SCST PATCH 08/15]`, the change for another project: apart).
    kernel = {m.msgid: dataclasses.replace(m, paths=frozenset({"drivers/scsi/qla_target.c"}))
              for m in thread}
    fixed, scst = again("r2", paths=frozenset({"drivers/scsi/qla_target.c", "x.h"})), again(
        "k2", prefixes=("SCST",), paths=frozenset({"qla2x00t-32gbit/scst_qla2xxx.c"}))
    assert sent_again_in_reply([*kernel.values(), scst]) == {"a2", "k2"}
    assert found([*kernel.values(), fixed]) == [(1, "a0", ["a0", "a1", "r2", "a3"])]
    assert found([*kernel.values(), scst])[0] == (1, "a0", ["a0", "a1", "a2", "a3"])


def test_every_patch_sent_again_later_each_in_reply_to_itself_is_a_posting_of_its_own():
    """Rule 12, patch by patch: four months after his `[PATCH 1/3]`..`3/3` (no cover letter),
    the author of the ax88179_178a fixes sent all three again by one run, 2/3 and 3/3 in reply
    to the patches they replace and 1/3 in reply to a review (linux-usb); Xin Ji's anx7625 v11
    share of a list (2/4..4/4) came again two months on, each in reply to its own
    (driverdev-devel). Before, the later patches took the earlier ones' places as corrections
    (or some did): a version tested before would hold patches it was not sent with."""
    def later(m: ThreadMessage, msgid: str, reply: str, days: int = 120) -> ThreadMessage:
        again = msg(msgid, reply, counter=m.counter, total=m.total)
        return dataclasses.replace(again, date=again.date + dt.timedelta(days=days),
                                   title=m.title, fingerprint=f"new diff of {m.msgid}")

    def diff(m: ThreadMessage) -> ThreadMessage:
        return dataclasses.replace(m, fingerprint=f"diff of {m.msgid}")

    first = [diff(msg("p1", counter=1, total=3)), diff(msg("p2", "p1", counter=2, total=3)),
             diff(msg("p3", "p1", counter=3, total=3))]
    review = msg("r1", "p1", kind="review", author="rita@example.org", name="Rita")
    resent = [later(first[0], "q1", "r1"), later(first[1], "q2", "p2"),
              later(first[2], "q3", "p3")]
    postings = group_postings([*first, review, *resent])
    assert [(p.cover, p.members) for p in postings] == [
        (None, ["p1", "p2", "p3"]), (None, ["q1", "q2", "q3"])]
    assert postings[1].notes == [
        "every patch of the posting p1 was sent again by a later run: a posting of its own"]
    # a list's share of a posting with a cover letter: 2/4..4/4, each in reply to its own
    share = [cover("a0", 4), *(diff(msg(f"a{i}", "a0", counter=i, total=4)) for i in (2, 3, 4))]
    again = [later(m, f"b{m.counter}", m.msgid, days=70) for m in share[1:]]
    assert found([*share, *again]) == [(1, "a0", ["a0", "a2", "a3", "a4"]),
                                       (1, None, ["b2", "b3", "b4"])]
    # fewer than every number the posting holds stay corrections (rule 9)
    assert found([*share, *again[:2]]) == [(1, "a0", ["a0", "b2", "b3", "a4"])]


def test_an_undated_patch_under_a_cover_letter_is_its_part():
    """A patch whose Date could not be read, in reply to a cover letter sent with no threading
    headers (as every `git send-email` cover letter is): before, grouping stopped on an
    assertion (the undated patch sorted ahead of the letter that heads its chain)."""
    letter, one, two = series("a", 2)
    undated = dataclasses.replace(two, date=None)
    assert found([letter, one, undated]) == [(1, "a0", ["a0", "a1", "a2"])]


def test_patches_of_one_run_that_disagree_on_resend_are_one_posting():
    """Rule 1 lets siblings disagree on RESEND (an author left it off one patch), and so do
    patches hanging from one missing message or strays: AMD's `[PATCH v5 1/6]` and `[RESEND
    PATCH v5 2/6]`..`6/6`, one `git send-email` run in reply to a cover letter the list never
    had (alsa-devel, seven versions), were two incomplete postings. The same patches sent
    again days later with RESEND stay a posting of their own."""
    run = [msg(f"p{i}", "gone", counter=i, total=6, version=5, explicit=True)
           for i in range(1, 7)]
    run[1:] = [dataclasses.replace(m, resend=True) for m in run[1:]]
    assert found(run) == [(5, None, [m.msgid for m in run])]
    for days in (3, 0):  # days later, or minutes (Aditya Garg's v7, linux-bluetooth)
        later = [dataclasses.replace(m, msgid=f"r{m.counter}", resend=True,
                                     date=m.date + dt.timedelta(days=days, minutes=9))
                 for m in run]
        assert [p.members for p in group_postings([*run, *later])] == [
            [m.msgid for m in run], [m.msgid for m in later]]
    # strays, sent in reply to a review of the thread, likewise
    review = msg("review", kind="review", author="rita@example.org", name="Rita")
    strays = [dataclasses.replace(m, in_reply_to="review", references=("review",)) for m in run]
    assert [p.members for p in group_postings([review, *strays])] == [
        [m.msgid for m in strays]]


def test_patches_sent_in_one_sitting_in_reply_to_different_reviews_are_one_posting():
    """Rishi Gupta sent his veml6030 v3 (linux-iio) a patch a run, each in reply to the review
    of its v2, within three minutes: three postings before, each of one patch. Patches of one
    author, version and size, other numbers, sent within minutes in reply to different
    messages, are one posting; with the cover letter of either, and not two letters' patches."""
    reviews = [msg(f"r{i}", kind="review", author="jic@example.org", name="Jonathan")
               for i in (1, 2, 3)]
    v3 = [msg(f"p{i}", f"r{i}", counter=i, total=3, version=3, explicit=True) for i in (1, 2, 3)]
    assert found([*reviews, *v3]) == [(3, None, ["p1", "p2", "p3"])]
    # half an hour apart, they stay apart
    apart = [dataclasses.replace(m, date=m.date + dt.timedelta(minutes=30 * i))
             for i, m in enumerate(v3)]
    assert len(group_postings([*reviews, *apart])) == 3
    # 3/3 sent a second after 2/3, in reply to the id of a run that no archive holds, while
    # the cover letter took 1/3 and 2/3 (Jonathan Bakker's, linux-samsung-soc)
    letter = cover("c0", 3)
    with_letter = [msg("q1", "c0", counter=1, total=3), msg("q2", "q1", counter=2, total=3),
                   msg("q3", "gone-1", counter=3, total=3)]
    assert found([letter, *with_letter]) == [(1, "c0", ["c0", "q1", "q2", "q3"])]
    # a0 with 1/2 and b0 with 2/2: two letters' postings stay two
    two_letters = [*series("a", 2)[:2], *(m for m in series("b", 2) if m.counter != 1)]
    assert [(p.cover, p.members) for p in group_postings(two_letters)] == [
        ("a0", ["a0", "a1"]), ("b0", ["b0", "b2"])]


def test_a_resend_cover_letter_takes_strays_that_left_resend_off_only_from_its_run():
    """Patches of v2 that continue nothing (sent in reply to v1's letter) are the RESEND v2
    letter's when one run sent them with it; v2 sent days before the letter is not its."""
    v1 = series("a", 2)
    letter = cover("b0", 2, reply="a0", version=2, explicit=True)
    letter = dataclasses.replace(letter, resend=True)
    v2 = [msg(f"b{i}", "a0", counter=i, total=2, version=2, explicit=True) for i in (1, 2)]
    assert found(v1 + [letter, *v2])[1] == (2, "b0", ["b0", "b1", "b2"])
    days_before = [dataclasses.replace(m, date=m.date - dt.timedelta(days=3)) for m in v2]
    assert sorted(found(v1 + [letter, *days_before]), key=str) == [
        (1, "a0", ["a0", "a1", "a2"]), (2, "b0", ["b0"]), (2, None, ["b1", "b2"])]


def test_a_series_of_fixes_tagged_so_keeps_its_cover_letter():
    """`[PATCH fix 1/2]`.. under `[PATCH 0/2]`: every patch says fix, none fixes a patch of the
    posting (rule 6 reads a fix-up tag against the patch it would replace)."""
    thread = series("a", 2)
    tagged = [thread[0], *(dataclasses.replace(m, prefixes=("fix",)) for m in thread[1:])]
    assert found(tagged) == [(1, "a0", ["a0", "a1", "a2"])]


def test_fix_ups_of_a_postings_patches_are_its_own_not_a_posting():
    """mm's fix-ups: `title (fix)` and `(fix 2)` under 3/3's number, in reply to it; a `-fix`
    tag under 1/3's own title, in reply to the cover letter (rule 16). They are the posting's,
    by the number each fixes, not an incomplete posting of their own."""
    thread = series("a", 3)
    fix = dataclasses.replace(msg("f1", "a3", counter=3, total=3), title="title of a3 (fix)")
    fix2 = dataclasses.replace(msg("f2", "f1", counter=3, total=3), title="title of a3 (fix 2)")
    tagged = dataclasses.replace(msg("t1", "a0", counter=1, total=3), title="title of a1",
                                 prefixes=("-fix",), fingerprint="a fix-up's diff")
    (posting,) = group_postings([*thread, fix, fix2, tagged])
    assert posting.members == ["a0", "a1", "a2", "a3"]
    assert list(posting.fix_ups.items()) == [("t1", 1), ("f1", 3), ("f2", 3)]
    # another person's, or one under no title of the posting's patches, is a posting
    others = [dataclasses.replace(fix, author="rita@example.org", author_name="Rita"),
              dataclasses.replace(fix, title="title of nothing (fix)")]
    for other in others:
        postings = group_postings([*thread, other])
        assert [p.members for p in postings] == [["a0", "a1", "a2", "a3"], ["f1"]]
        assert postings[0].fix_ups == {}
    # a counterless `[PATCH] title (fix)` fixes the patch it replies to
    counterless = dataclasses.replace(msg("c1", "a2"), title="title of a2 (fix)")
    assert group_postings([*thread, counterless])[0].fix_ups == {"c1": 2}


def test_several_series_sent_by_one_run_are_a_posting_each():
    """Rule 17: the kernel's `1/3`..`3/3`, then makedumpfile's `[PATCH makedumpfile 1/3]`..,
    one run, all in reply to one cover letter (nvdimm, "pmem memmap dump support"): two
    postings, the letter with the set of its tags. Before, makedumpfile's later numbers
    replaced the kernel's (rule 9) and the kernel's series was lost."""
    letter, *kernel = series("a", 3)
    tools = [dataclasses.replace(msg(f"m{i}", "a0", counter=i, total=3),
                                 prefixes=("makedumpfile",)) for i in (1, 2, 3)]
    postings = group_postings([letter, *kernel, *tools])
    assert [(p.cover, p.members) for p in postings] == [
        ("a0", ["a0", "a1", "a2", "a3"]), (None, ["m1", "m2", "m3"])]
    assert "a posting of its own" in postings[1].notes[0]
    # sent the other way round, the letter still goes with the kernel's set
    swapped = [dataclasses.replace(m, date=m.date + dt.timedelta(minutes=shift))
               for shift, sent in ((-3, tools), (3, kernel)) for m in sent]
    assert sorted(found([letter, *swapped]), key=str) == [
        (1, "a0", ["a0", "a1", "a2", "a3"]), (1, None, ["m1", "m2", "m3"])]


def test_sets_without_a_cover_letter_sent_by_one_run_stay_apart():
    """LTP: `[PATCH 1/3]`..`3/3`, then two different `[PATCH 1/2]`, `2/2` sets, every mail in
    reply to the first (`git send-email` given three folders): three postings."""
    first = msg("a1", counter=1, total=3)
    thread = [first, *(msg(f"a{i}", "a1", counter=i, total=3) for i in (2, 3))]
    thread += [msg(f"{s}{i}", "a1", counter=i, total=2) for s in "bc" for i in (1, 2)]
    assert found(thread) == [(1, None, ["a1", "a2", "a3"]), (1, None, ["b1", "b2"]),
                             (1, None, ["c1", "c2"])]


def test_different_patches_of_one_number_sent_by_one_run_are_a_posting_each():
    """Allen Pais's tasklet conversions (linux-mmc): one run, each mail in reply to the first
    `[PATCH]`, among them `[PATCH 1/2] hsi: ...`, `[PATCH 1/2] mailbox: ...` and `[PATCH 1/2]
    memstick: ...`, patches 1/2 of three series: rule 9 kept the last and lost two (rule 19)."""
    def sent(msgid: str, counter: int, total: int, title: str) -> ThreadMessage:
        return dataclasses.replace(msg(msgid, "a1", counter=counter, total=total),
                                   title=title, fingerprint=f"diff of {title}")

    first = dataclasses.replace(msg("a1"), title="arch: um: convert", fingerprint="um")
    ones = [sent(f"b{i}", 1, 2, f"{area}: convert") for i, area in
            enumerate(("hsi", "mailbox", "memstick"))]
    postings = group_postings([first, *ones])
    assert [(p.cover, p.members, p.complete) for p in postings] == [
        (None, ["a1"], True), (None, ["b0"], False), (None, ["b1"], False),
        (None, ["b2"], False)]
    assert [p.notes for p in postings[:2]] == [[], []]
    assert postings[2].notes == ["one of 3 different patches numbered 1/2 that one run sent "
                                 "without a cover letter (beside b0): a posting of its own"]
    # rule 9's still: a stale file under its new version's title, one beside another number,
    # copies sent by two runs
    stale = [dataclasses.replace(m, title="hsi: convert") for m in ones[:2]]
    assert found([first, *stale])[1:] == [(1, None, ["b1"])]
    second = sent("c2", 2, 2, "mailbox: convert, part 2")
    assert found([first, *ones[:2], second])[1:] == [(1, None, ["b1", "c2"])]
    later = dataclasses.replace(ones[1], date=ones[0].date + dt.timedelta(hours=2))
    assert found([first, ones[0], later])[1:] == [(1, None, ["b1"])]


def test_stale_files_and_one_set_sent_twice_stay_one_posting():
    """What rule 17 leaves to rule 9: a folder's stale files go by number (`1/2`, `1/2`,
    `2/2`, `2/2`: the later of each), and the same patches sent twice by one run are one
    posting of the first copies."""
    letter = cover("a0", 2)
    stale = [msg(f"{s}{i}", "a0", counter=i, total=2) for i in (1, 2) for s in "on"]
    assert found([letter, *stale]) == [(1, "a0", ["a0", "n1", "n2"])]
    sets = [dataclasses.replace(msg(f"{s}{i}", "a0", counter=i, total=2), title=f"t{i}",
                                fingerprint=f"diff {i}") for s in "xy" for i in (1, 2)]
    assert found([letter, *sets]) == [(1, "a0", ["a0", "x1", "x2"])]


def test_patches_tagging_their_own_revisions_are_the_unversioned_cover_letters():
    """Arnd Bergmann's `[PATCH 00/22] -Wmissing-prototype warning fixes` over `[PATCH 01/22]
    [RESEND^2] ida: ...`, `[PATCH 08/22] [v2] arch: ...` and untagged patches, one run
    (linux-kbuild, linux-usb, linux-mips): each tag is that patch's history, and the version
    was three incomplete postings, never tested (rule 18)."""
    head, *patches = series("a", 4)
    patches[0] = dataclasses.replace(patches[0], resend=True)
    patches[1] = dataclasses.replace(patches[1], version=2, version_explicit=True)
    patches[2] = dataclasses.replace(patches[2], version=3, version_explicit=True)
    (posting,) = group_postings([head, *patches])
    assert (posting.version, posting.cover, posting.members, posting.complete) == (
        1, "a0", ["a0", "a1", "a2", "a3", "a4"], True)
    assert posting.notes == ["patches sent with the cover letter tag their own revisions: "
                             "1/4 (RESEND), 2/4 (v2), 3/4 (v3); read as v1"]
    # a cover letter that says its version: the same (Sam Shih's `[v3,0/9]` over `[v3,1/9]`,
    # `[RESEND,v2,3/9]`, `[v4,6/9]`)
    at_v3 = [dataclasses.replace(m, version=3, version_explicit=True) for m in [head, *patches]]
    at_v3[1] = dataclasses.replace(at_v3[1], version=2)
    at_v3[3] = dataclasses.replace(at_v3[3], version=4)
    (posting,) = group_postings(at_v3)
    assert (posting.version, posting.members, posting.complete) == (
        3, ["a0", "a1", "a2", "a3", "a4"], True)
    assert posting.notes == ["patches sent with the cover letter tag their own revisions: "
                             "1/4 (RESEND v2), 3/4 (v4); read as v3"]
    # a point release's tag is a revision too: Tero Kristo's `[PATCHv2 00/15]` over
    # `[PATCHv2.5 01/15]` and `[PATCHv2 02/15]`.. (linux-remoteproc) was 1/15 alone and 14/15
    at_v2 = [dataclasses.replace(m, version=2, version_explicit=True) for m in [head, *patches]]
    at_v2[1] = dataclasses.replace(at_v2[1], prefixes=("v2.5",), resend=False)
    (posting,) = group_postings(at_v2)
    assert (posting.version, posting.members, posting.complete, posting.prefixes) == (
        2, ["a0", "a1", "a2", "a3", "a4"], True, ())
    assert posting.notes == ["patches sent with the cover letter tag their own revisions: "
                             "1/4 (v2.5); read as v2"]
    # all one higher version: the letter forgot it (rule 10); a later run in reply to the
    # letter is a posting of its own
    v2 = [dataclasses.replace(p, version=2, version_explicit=True) for p in series("a", 4)[1:]]
    assert [(p.version, p.cover) for p in group_postings([head, *v2])] == [(2, "a0")]
    later = dataclasses.replace(patches[1], msgid="b2", date=START + dt.timedelta(days=3))
    assert [(p.version, p.members) for p in group_postings([head, *patches, later])
            ] == [(1, ["a0", "a1", "a2", "a3", "a4"]), (2, ["b2"])]


def test_a_lone_patch_is_grouped_as_in_a_thread_of_more():
    """A thread's one part, a patch, takes a shortcut (most threads of kernel-janitors): its
    posting is the one the rules give it among other messages that change nothing (a review
    of another thread's), whatever its threading, numbers, tags and diff."""
    unrelated = msg("elsewhere", "another-thread", kind="review", author="rita@example.org")
    shapes = [
        {}, {"in_reply_to": "missing-review", "references": ("missing-review",)},
        {"in_reply_to": None, "references": ("missing-cover", "missing-review")},
        {"counter": 2, "total": 5}, {"counter": 3, "total": 3, "in_reply_to": "c0",
                                     "references": ("c0",)},
        {"has_diff": False}, {"title": "title (fix)"}, {"prefixes": ("-fix",)},
        {"prefixes": ("v4.1",), "version": 4, "version_explicit": True},
        {"version": 2, "version_explicit": True, "resend": True, "rfc": True},
        {"date": None}, {"counter": 2, "total": 4, "date": None},
        # in reply to the id `git send-email` gave its run's first mail (rule 3's rewritten ids)
        {"counter": 1, "total": 3, "in_reply_to": "20261130100000.10355-1-ada@example.org",
         "references": ()},
    ]
    for changes in shapes:
        lone = dataclasses.replace(msg("p1"), fingerprint="diff of p1", **changes)
        assert group_postings([lone]) == group_postings([lone, unrelated]), changes
