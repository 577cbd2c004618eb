"""mmtests compare-kernels output read into measurements (bot/analysis/claims/mmtests.py)."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message

MMTESTS = """\
    Lower is better; higher is better for tput, a 3% change is noise here.

    hackbench-process-pipes
                                   6.8.0-rc1              6.8.0-rc1
                                     vanilla        lru-batch-v2r3
    Amean     4        0.4251 (   0.00%)      0.4107 *   3.39%*
    Amean     16       1.2010 (   0.00%)      1.1958 (   0.43%)
    Stddev    4        0.0051 (   0.00%)      0.0060 ( -17.65%)
    Stddev    16       0.0211 (   0.00%)      0.0190 (   9.95%)
"""


def analysed():
    return analyse_message("s", "Mel <mel@example.org>", textwrap.dedent(MMTESTS))


def test_bracketed_gain_of_a_time_means_the_time_went_down() -> None:
    [claim] = [c.claim for c in analysed().claims if c.claim.kind == "summary"]
    four = {m.metric: m for m in claim.measurements}["Amean 4"]
    assert (four.base, four.patched) == (0.4251, 0.4107)
    assert four.higher_is_better is False  # +3.39% gain while the value fell: a time
    assert four.stated_kind == "gain" and four.marked_significant is True
    assert four.cv_base_pct == 100 * 0.0051 / 0.4251
    assert {m.metric: m for m in claim.measurements}["Amean 16"].marked_significant is False
    assert (four.base_label, four.patched_label) == ("vanilla", "lru-batch-v2r3")


def test_zero_percent_cells_and_the_higher_is_better_sentence_claim_nothing() -> None:
    result = analysed()
    percentages = [c.claim for c in result.claims if c.claim.kind == "percentage"]
    # "(0.00%)" is the base column, never a 0% improvement; "higher is better" explains a metric.
    assert all(p.change is not None and p.change.direction is None for p in percentages)
    assert [p.change.low_pct for p in percentages if p.change] == [3.0]


def test_without_runs_the_judgement_says_how_many_runs_would_do() -> None:
    result = analysed()
    [judged] = [c for c in result.claims if c.claim.kind == "summary"]
    four = judged.judgement.measurements[0]
    assert four.status == "needs-runs"
    assert "mmtests marked it significant" in four.summary


def test_a_case_that_is_only_a_number_is_named_as_the_table_prints_it() -> None:
    """hackbench's group counts (1, 4, 16, 64): the judgement a reply quotes says "Amean 4
    improvement", never "4 improvement", which reads as four improvements."""
    text = "Each configuration ran 8 iterations.\n\n" + textwrap.dedent(MMTESTS)
    result = analyse_message("s", "Mel <mel@example.org>", text)
    [judged] = [c for c in result.claims if c.claim.kind == "summary"]
    assert [m.metric for m in judged.claim.measurements] == ["Amean 4", "Amean 16"]
    assert judged.judgement.summary.endswith(": Amean 4 improvement."), judged.judgement.summary


def test_thpscale_s_percentage_rows_are_its_success_rates() -> None:
    # Mel Gorman's compaction series (linux-mm, January 2019): "The allocation success rates
    # are much improved", in rows mmtests labels Percentage, not Amean.
    body = textwrap.dedent("""\
        The allocation success rates are much improved

        \t\t\t \t baseline\t\t patches
        Percentage huge-3        70.93 (   0.00%)       98.30 (  38.60%)
        Percentage huge-18       94.37 (   0.00%)       95.87 (   1.58%)
        """)
    [judged] = analyse_message("s", "Mel <mel@example.org>", body).claims
    rates = {m.metric: m for m in judged.claim.measurements}
    assert (rates["huge-3"].base, rates["huge-3"].patched) == (70.93, 98.30)
    assert rates["huge-3"].higher_is_better is True
    assert (rates["huge-18"].base_label, rates["huge-18"].patched_label) == ("baseline", "patches")


def test_gains_against_a_kernel_the_paste_left_out_say_nothing_of_these_two() -> None:
    # Jan Kara's git 'make test' (linux-mm, 2024): the first column's gain is not 0.00%, so
    # mmtests compared both with a third kernel not shown.
    body = textwrap.dedent("""\
                               before (9cd6ffa6025)  after (f1a7941243c1)
        Amean     User         471.12 *   0.30%*     481.77 *  -1.96%*
        Amean     Elapsed      709.22 *   0.45%*     742.27 *  -4.19%*
        """)
    [judged] = analyse_message("s", "Jan Kara <jack@suse.cz>", body).claims
    elapsed = judged.claim.measurements[1]
    assert (elapsed.base_label, elapsed.patched_label) == (
        "before (9cd6ffa6025)", "after (f1a7941243c1)")
    assert elapsed.stated_pct is None and elapsed.marked_significant is None
    assert elapsed.higher_is_better is False  # from its name: a time
    assert judged.judgement.notes == ()


def test_the_ops_rows_of_mmtests_2013_output() -> None:
    """Mel Gorman's kswapd series (linux-mm, 2013, quoted by Andrew Morton): mmtests then
    printed each case as `Ops <case>`. Read as a plain table, "Ops" made every row a rate:
    io-duration and the swap and fault counts were higher-is-better, and every gain a slip
    of arithmetic. As mmtests output, each case takes its direction from its gain; the 0.00%
    mmtests prints for a value that fell to 0 is its `pdiff`, not a slip either."""
    result = analyse_message("s", "Andrew Morton <akpm@example.org>", textwrap.dedent("""\
        > >                            3.10.0-rc1            3.10.0-rc1
        > >                               vanilla        lessdisrupt-v4
        > > Ops memcachetest-715M           22720.00 (  0.00%)          22355.00 ( -1.61%)
        > > Ops memcachetest-2385M           3939.00 (  0.00%)          23450.00 (495.33%)
        > > Ops io-duration-715M               12.00 (  0.00%)              7.00 ( 41.67%)
        > > Ops swaptotal-2385M            392438.00 (  0.00%)              0.00 (  0.00%)
        > > Ops minorfaults-715M          1794168.00 (  0.00%)        1613750.00 ( 10.06%)
        """))
    [claim] = [c for c in result.claims if c.claim.layout == "mmtests"]
    got = {m.metric: (m.base, m.patched, m.higher_is_better) for m in claim.claim.measurements}
    assert got == {
        "memcachetest-715M": (22720.0, 22355.0, True),
        "memcachetest-2385M": (3939.0, 23450.0, True),
        "io-duration-715M": (12.0, 7.0, False),
        "swaptotal-2385M": (392438.0, 0.0, None),
        "minorfaults-715M": (1794168.0, 1613750.0, False),
    }
    assert [m.patched_label for m in claim.claim.measurements][0] == "lessdisrupt-v4"
    assert not any("does not follow" in note for note in claim.judgement.notes)
