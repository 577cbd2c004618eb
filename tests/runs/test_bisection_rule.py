"""The bisection rule (bot/runs/bisection.py): which prefix next, and when it is decided."""

from __future__ import annotations

import pytest

from bot.runs.bisection import (
    Carries,
    Ended,
    TrackedChange,
    bisect,
    carries,
    changes_found,
    pairs_within,
)

YES, NO, UNKNOWN = Carries.YES, Carries.NO, Carries.UNKNOWN
SLOWER = (TrackedChange("reclaim-sim ops=1", "reclaim-sim.throughput", "regression"),)


def walk(patches: int, culprit: int, built: set[int] | None = None) -> tuple[list[int], object]:
    """Bisect a series whose patch `culprit` brings the change; the prefixes tested, in order,
    and the final state."""
    built = set(range(1, patches)) if built is None else built
    tested: dict[int, Carries] = {}
    order = []
    while (state := bisect(patches, built, tested)).next is not None:
        order.append(state.next)
        tested[state.next] = YES if state.next >= culprit else NO
    return order, state


@pytest.mark.parametrize("patches", [1, 2, 3, 4, 7, 16])
def test_binary_search_finds_every_culprit_in_about_log2_steps(patches):
    for culprit in range(1, patches + 1):
        order, state = walk(patches, culprit)
        assert state.ended is Ended.FOUND and state.found == culprit
        assert state.good == culprit - 1  # the prefix before it was shown not to carry it
        assert len(order) <= max(1, (patches - 1).bit_length())
        assert patches not in order and 0 not in order  # the review and the base are known


def test_four_patches_with_the_third_slow_tests_the_middle_then_narrows():
    assert bisect(4, {1, 2, 3}, {}).next == 2
    assert bisect(4, {1, 2, 3}, {2: NO}).next == 3
    state = bisect(4, {1, 2, 3}, {2: NO, 3: YES})
    assert (state.next, state.found, state.good, state.bad) == (None, 3, 2, 3)


def test_a_step_that_cannot_tell_stops_the_bisection_with_what_is_known():
    state = bisect(4, {1, 2, 3}, {2: NO, 3: UNKNOWN})
    assert state.ended is Ended.BUDGET and state.found is None and state.next is None
    assert state.stopped_at == 3 and state.suspects == (3, 4)


def test_a_prefix_that_does_not_build_is_skipped_like_git_bisect_skip():
    assert bisect(4, {1, 3}, {}).next == 1  # 2 is the middle, but it did not build
    order, state = walk(4, 4, built={1, 3})
    assert order == [1, 3] and state.found == 4
    # The prefix that would decide it did not build: the change comes with one of two patches.
    order, state = walk(4, 3, built={1, 3})
    assert state.ended is Ended.NOT_BUILT and state.found is None
    assert (state.good, state.bad, state.suspects) == (1, 3, (2, 3))
    order, state = walk(4, 3, built={1})
    assert state.ended is Ended.NOT_BUILT and state.suspects == (2, 3, 4)


def test_a_one_patch_series_needs_no_step():
    state = bisect(1, set(), {})
    assert state.next is None and state.found == 1


def test_contradictory_steps_are_refused():
    with pytest.raises(ValueError):
        bisect(4, {1, 2, 3}, {2: YES, 3: NO})


def test_what_a_prefix_campaign_says_about_the_change():
    key = ("reclaim-sim ops=1", "reclaim-sim.throughput")
    assert carries(SLOWER, {key: "regression"}) is YES
    assert carries(SLOWER, {key: "no change"}) is NO
    assert carries(SLOWER, {key: "improvement"}) is NO  # the other way: not this change
    assert carries(SLOWER, {key: "inconclusive"}) is UNKNOWN  # never read as "no change"
    assert carries(SLOWER, {}) is UNKNOWN
    two = (*SLOWER, TrackedChange("hackbench", "hackbench.time", "regression"))
    assert carries(two, {key: "no change", ("hackbench", "hackbench.time"): "regression"}) is YES
    assert carries(two, {key: "no change", ("hackbench", "hackbench.time"): "inconclusive"}) \
        is UNKNOWN


def test_the_change_is_the_main_metrics_that_changed():
    found = changes_found([("a", "a.x", "regression"), ("a", "a.y", "no change"),
                           ("b", "b.z", "improvement"), ("c", "c.w", "inconclusive")])
    assert [(c.metric, c.verdict) for c in found] == [("a.x", "regression"),
                                                      ("b.z", "improvement")]


def test_the_boot_budget_caps_each_steps_pairs():
    assert pairs_within(24, warmup_pairs=1) == 11
    assert pairs_within(25, warmup_pairs=1) == 11
    assert pairs_within(2, warmup_pairs=1) == 0
