"""Partial rerolls decided on plain values (no database): b4's rule, and what it takes."""

from __future__ import annotations

from bot.series.rerolls import VersionFacts, answers_its_number, choose_bases


def facts(vid: int, version: int, indexes: set[int], expected: int = 8, *, series: int = 1,
          thread: int | None = 1, replies: list[bool] | None = None) -> VersionFacts:
    return VersionFacts(vid, series, thread, version, expected, None, unresolved=False,
                        indexes=set(indexes),
                        replies=[True] * len(indexes) if replies is None else replies)


def test_a_reroll_takes_the_rest_from_the_version_before_it_and_so_on():
    """Dan Williams' device_lock() series on nvdimm: v3 8/8, then v4 2/8 and 8/8, v5 2/8, v6
    2/8, each patch in reply to the one it replaces."""
    v3, v4 = facts(3, 3, set(range(1, 9)), replies=[]), facts(4, 4, {2, 8})
    v5, v6 = facts(5, 5, {2}), facts(6, 6, {2})
    assert choose_bases([v6, v4, v3, v5]) == {
        3: (None, True), 4: (3, True), 5: (4, True), 6: (5, True)}


def test_what_is_not_a_reroll():
    v1 = facts(1, 1, {1, 2, 3}, expected=3, replies=[])
    cases = {
        # a patch that answers no patch of its number: a posting still missing some
        "not in reply": facts(2, 2, {2, 3}, expected=3, replies=[True, False]),
        # no version before it
        "v3 after v1": facts(2, 3, {2}, expected=3),
        # another series in another thread
        "elsewhere": facts(2, 2, {2}, expected=3, series=2, thread=2),
    }
    for name, v2 in cases.items():
        assert choose_bases([v1, v2])[2] == (None, False), name
    # mm's fix-up to fold into v2's 2/3, sent in reply to it beside v2: a second posting of v2
    # (b4 reads the two as one revision), not a reroll of v1.
    v2 = facts(3, 2, {1, 2, 3}, expected=3, replies=[])
    assert choose_bases([v1, v2, facts(2, 2, {2}, expected=3)])[2] == (None, False)
    # A reroll of an incomplete version is a reroll, and incomplete.
    partial_v1 = facts(1, 1, {1, 2}, expected=3, replies=[])
    assert choose_bases([partial_v1, facts(2, 2, {2}, expected=3)])[2] == (1, False)
    # Filed as a series of its own (retitled by its patch) but in the thread: b4 takes it.
    assert choose_bases([v1, facts(2, 2, {2}, expected=3, series=2)])[2] == (1, True)
    # The whole v2 posted later in a thread of its own is another posting of v2, not one that
    # b4 reads with the reroll: the reroll stands, and so does the whole v2.
    whole_v2 = facts(3, 2, {1, 2, 3}, expected=3, thread=2, replies=[])
    assert choose_bases([v1, facts(2, 2, {2}, expected=3), whole_v2]) == {
        1: (None, True), 2: (1, True), 3: (None, True)}
    # ext4: v1 and v2 in one thread, v3 in another, then `[PATCH v2 2/2]` in reply to v3's
    # 2/2 (the author's count for the patch): no v1 in its thread, and the series has its v2.
    series = [facts(1, 1, {1, 2}, expected=2, thread=1, replies=[]),
              facts(2, 2, {1}, expected=1, thread=1, replies=[]),
              facts(3, 3, {1, 2}, expected=2, thread=2, replies=[])]
    assert choose_bases([*series, facts(4, 2, {2}, expected=2, thread=2)])[4] == (None, False)


def test_a_version_sent_a_patch_at_a_time_is_one_reroll():
    """`[PATCH v2 1/2]` and, two minutes later, `[PATCH v2 2/2]`, each in reply to the review
    of the patch it replaces (LTP, signalfd); `[PATCH v7 2/3]`, then `v7 3/3` five days later
    (linux-erofs, sysfs interface). b4 reads each pair as one revision. The last piece is the
    version, taking the rest from the pieces before it and from the version before them; the
    earlier pieces stand for their numbers and are not a version to test. Before, each piece
    was an incomplete version and neither was tested."""
    v1 = facts(1, 1, {1, 2}, expected=2, replies=[])
    assert choose_bases([v1, facts(2, 2, {1}, expected=2), facts(3, 2, {2}, expected=2)]) == {
        1: (None, True), 2: (1, False), 3: (2, True)}
    v6 = facts(1, 6, {1, 2, 3}, expected=3, replies=[])
    pieces = [facts(2, 7, {2}, expected=3), facts(3, 7, {3}, expected=3)]
    assert choose_bases([v6, *pieces]) == {1: (None, True), 2: (1, False), 3: (2, True)}
    # Only the first piece so far: the version as it stands, v6 with v7's 2/3.
    assert choose_bases([v6, pieces[0]])[2] == (1, True)
    # One number sent twice, or a piece that answers no patch of its number: no reroll.
    for other in (facts(3, 7, {2}, expected=3), facts(3, 7, {3}, expected=3, replies=[False])):
        assert choose_bases([v6, pieces[0], other])[2] == (None, False)


def test_a_patch_answers_its_number_up_a_chain_of_replies():
    messages = {
        "v1-2": (None, 2, 3),
        "review": ("v1-2", 2, 3),  # "Re: [PATCH 2/3]" keeps the number
        "aside": ("review", 1, 1),  # a reply that changed the subject
        "loop-a": ("loop-b", 1, 1), "loop-b": ("loop-a", 1, 1),
    }  # fmt: skip
    assert answers_its_number("v1-2", 2, 3, messages)
    assert answers_its_number("aside", 2, 3, messages)
    assert not answers_its_number("v1-2", 1, 3, messages)
    assert not answers_its_number("gone", 2, 3, messages)
    assert not answers_its_number("loop-a", 2, 3, messages)
