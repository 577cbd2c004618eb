"""Claims in prose (bot/analysis/claims/statements.py, extract.py)."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message, find_run_counts
from bot.analysis.claims.text import message_blocks


def analysed(body: str):
    return analyse_message("s", "Rev Iewer <rev@example.org>", textwrap.dedent(body))


def test_vs_arrow_and_from_to_with_thousands_separators() -> None:
    result = analysed(
        """\
        Throughput went from 1,234,567 to 1 301 220 ops/s with the series.

        Latency is 12.1 ms vs 11.4 ms now.

        On Mon, 3 Jun 2024, Jane Dev <jane@example.org> wrote:
        > Elapsed time 93.4s -> 88.1s on the build.
        """
    )
    pairs = [
        (m.base, m.patched, m.higher_is_better) for c in result.claims for m in c.claim.measurements
    ]
    assert pairs == [(1234567, 1301220, True), (12.1, 11.4, False), (93.4, 88.1, False)]
    quoted = result.claims[-1].claim
    assert quoted.speaker.role == "quoted" and quoted.speaker.name == "Jane Dev"


def test_direction_words_bind_to_their_own_clause() -> None:
    result = analysed(
        "Throughput improved by 4% on the 64-thread run, but latency is 2% worse at 8 threads.\n"
    )
    directions = [c.claim.change.direction for c in result.claims if c.claim.change]
    assert directions == ["improvement", "regression"]


def test_a_drop_is_a_regression_of_throughput_and_an_improvement_of_latency() -> None:
    """Shubhang Kaushik's schbench numbers (cgroups, sched/flat): "tail latency drops
    significantly by -12.21%" was read as a regression, "drops" being a word of loss."""
    sentences = {
        "16 Threads: 99.9th percentile tail latency drops significantly by -12.21% (us).":
            "improvement",
        "With the series throughput drops by 5% on the 8-socket box.": "regression",
        "Overall performance dropped 3% in our tests.": "regression",
    }  # fmt: skip
    for sentence, direction in sentences.items():
        [claim] = [c.claim for c in analysed(sentence + "\n").claims if c.claim.change]
        assert claim.change.direction == direction, sentence


def test_a_level_of_the_original_is_a_change_of_its_complement() -> None:
    """Dennis Wu's BTT freelist (nvdimm): "the latency also reduce to 60% of origial
    algorithm" was "60%" of no direction; it is -40% of a latency, an improvement."""
    sentences = {
        "The write performance can improve ~50% and the latency also reduce to 60% of origial "
        "algorithm.": [(50.0, "improvement"), (-40.0, "improvement")],
        "With the series the throughput runs at 95% of the baseline.": [(-5.0, "regression")],
    }  # fmt: skip
    for sentence, expected in sentences.items():
        changes = [c.claim.change for c in analysed(sentence + "\n").claims if c.claim.change]
        assert [(c.low_pct, c.direction) for c in changes] == expected, sentence
    # a share of something else is no level of the kernel before
    shares = analysed("Throughput improves 3% when the cache fills up to 90% of memory.\n")
    assert -10.0 not in [c.claim.change.low_pct for c in shares.claims if c.claim.change]


def test_an_average_of_n_times_is_a_run_count() -> None:
    # Huang Shijie's i_mmap split (nvdimm): "77% performance improvement(10 times average)".
    [claim] = [c.claim for c in analysed(
        "we can get 77% performance improvement(10 times average)\n").claims]
    assert claim.runs == 10


def test_higher_is_better_explains_and_claims_nothing() -> None:
    result = analysed("Scores below, higher is better; the run-to-run noise is about 3% here.\n")
    # Neither "better" nor the noise's size is a change (David Hildenbrand's "(stddev < 1%)").
    assert result.claims == ()
    result = analysed("fork'ing 1GiB of folios (stddev < 1%) results in these runtimes:\n")
    assert result.claims == ()


def test_times_faster_and_reduced_by() -> None:
    result = analysed("With the patch reclaim is 2x faster and the scan time is reduced by 30%.\n")
    changes = sorted((c.claim.change.low_pct, c.claim.change.direction) for c in result.claims)
    assert (100.0, "improvement") in changes and (30.0, "improvement") in changes


def test_what_was_reduced_or_increased_says_which_way_it_went() -> None:
    """Nhat Pham's "another 50% reduction in memory overhead" (linux-mm, 2026) and Huang Ying's
    "promote rate (overhead) decreases about 25.0%" (linux-mm, 2022) were regressions,
    "overhead" being a word of loss, and Mel Gorman's kernbench summary (mm-commits, 2019)
    "reduces system CPU usage by 69.16% and total build time by 27.06%" had no direction: what a
    word of rise or fall speaks of, its object's head or else its subject, says whether the
    change is for the better."""
    sentences = {
        "Reducing the size of the swap descriptor, i.e another 50% reduction in memory overhead "
        "from v2.": ["improvement"],
        "With hot page selection patch [1/3], the pmbench score increases about 12.8%, and "
        "promote rate (overhead) decreases about 25.0%, compared with base kernel.":
            ["improvement", "improvement"],
        "The patch reduces system CPU usage by 69.16% and total build time by 27.06%.":
            ["improvement", "improvement"],
        "This patch reduces the overhead by 5%.": ["improvement"],
        "This reduces the throughput regression by 5%.": ["improvement"],
        "With this patch, the lock contention is reduced by 30%.": ["improvement"],
        "The slowdown is reduced by 40% with v2.": ["improvement"],
        "It lowers the p99 latency by 15%.": ["improvement"],
        "This series reduces the throughput by 3% on will-it-scale.": ["regression"],
        "We see a 5% decrease in throughput.": ["regression"],
        "This increases the overhead by 5%.": ["regression"],
        "Latency is 5% higher with the series.": ["regression"],
        "The patched kernel shows 5% lower throughput.": ["regression"],
        "With the series p99 latency is 7% lower.": ["improvement"],
        "This reduces lock contention by 30%, and throughput is 5% higher.":
            ["improvement", "improvement"],
        # nothing named that is better one way: no direction
        "This reduces the number of page faults by 50%.": [None],
    }  # fmt: skip
    for sentence, expected in sentences.items():
        changes = [c.claim.change for c in analysed(sentence + "\n").claims if c.claim.change]
        assert [c.direction for c in changes] == expected, sentence


def test_a_claim_without_direction_contradicts_no_column() -> None:
    rows = "\n".join(f"{10.0 + i * 0.01:.2f}   {11.0 + i * 0.01:.2f}" for i in range(6))
    result = analysed(
        f"   A       B\n ===============\n{rows}\n\nThe throughput difference is about 10%.\n"
    )
    summing_up = result.claims[1].judgement.summary
    assert "contradicts" not in summing_up


def test_mean_and_sd_with_runs_and_a_stated_interval_are_checked() -> None:
    result = analysed(
        """\
        memtier_benchmark, 10 runs per kernel:

        Before: 44017.78 ± 310.2 Ops/sec (n=10)
        After:  44687.08 ± 295.1 Ops/sec (n=10) (95% CI: +5.0% to +7.0%)
        """
    )
    [judged] = result.claims
    assert judged.judgement.status == "judged"  # Welch's t, not "no runs or spread given"
    [m] = judged.claim.measurements
    assert (m.n, round(m.cv_base_pct, 3)) == (10, round(100 * 310.2 / 44017.78, 3))
    assert m.stated_ci_pct == (5.0, 7.0)
    assert any("does not agree with the data" in note for note in judged.judgement.notes)


def test_from_about_x_to_about_y() -> None:
    # Huang Ying's THP swap series (linux-mm, 2017): "improves 42% (from about 5.81GB/s to
    # about 8.25GB/s)" was a bare 42%.
    result = analysed("""\
        With the patchset, the swap out throughput improves 42% (from about
        5.81GB/s to about 8.25GB/s) in the vm-scalability swap-w-seq test case.
        Sorting took from ~120 ms to roughly 95 ms.
        """)
    pairs = [(m.base, m.patched, m.unit, m.higher_is_better)
             for c in result.claims for m in c.claim.measurements]  # fmt: skip
    assert pairs == [(5.81, 8.25, "GB/s", True), (120, 95, "ms", False)]


def test_run_counts_in_kairui_song_s_words() -> None:
    for text, runs in (("12 test run for each case, it can be seen", 12),
                       ("tiem make -j96 / 768M memcg (avg of 4 test run)", 4),
                       ("The following data is aggregated over 50 consecutive defconfig builds",
                        50)):  # fmt: skip
        [block] = message_blocks(text + "\n")
        assert [c.runs for c in find_run_counts(block)] == [runs], text


def test_a_level_reached_and_a_test_s_setting_are_no_changes() -> None:
    # Aaron Lu's zone->lock series (linux-mm, 2018) and lkp's job parameters.
    result = analysed("""\
        With this approach, the lock contention on free path dropped to 4% but
        allocation side still has as high as 43% lock contention.

        If I set the delay to 1ms, the success rate of this patch will drop to 36%
        while vanilla could maintain at about 70%.

        tests: 1
        testcase/path_params/tbox_group/run: will-it-scale/performance-process-100%-page_fault3

        ptep_clear_flush() takes 5.36% CPU in the micro-benchmark, a cost we remove.

        The regression is reduced to ~3.9%.
        """)
    changes = [(c.claim.change.low_pct, c.claim.change.direction) for c in result.claims]
    assert changes == [(43, None), (3.9, "regression")]


def test_the_words_of_a_vs_pair_say_which_kernel_comes_first() -> None:
    # Aaron Lu (linux-mm, 2018): the patched kernel's time first, "took longer".
    result = analysed("""\
        Note that it indeed took longer to finish the test: 244s vs 218s.

        The patched kernel is faster: 12.1 ms vs 13.4 ms.
        """)
    pairs = [(m.base, m.patched) for c in result.claims for m in c.claim.measurements]
    assert pairs == [(218, 244), (13.4, 12.1)]


def test_a_range_with_hedged_bounds() -> None:
    # Zi Yan's folio compaction cover letter (linux-mm, 2024)
    result = analysed("the others see ~4% to ~26% performance boost under default LRU\n")
    [(low, high)] = [(c.claim.change.low_pct, c.claim.change.high_pct) for c in result.claims]
    assert (low, high) == (4, 26)


def test_an_increase_is_as_good_as_what_increased() -> None:
    # Hyeonggon Yoo's SLOB series (linux-mm, 2021): "13% increase in memory usage" is a cost.
    result = analysed("""\
        With 13% increase in memory usage, it's nine times faster than before.

        The IOPS increased by 8% with the series.

        We see a 90% performance increase on tlb shootdown.
        """)
    directions = [(c.claim.change.low_pct, c.claim.change.direction) for c in result.claims
                  if c.claim.kind == "percentage"]  # fmt: skip
    # "nine times faster" is a speed-up of +800%
    assert directions == [(13, "regression"), (800, "improvement"), (8, "improvement"),
                          (90, "improvement")]  # fmt: skip


def test_a_confidence_level_is_no_change() -> None:
    # Ryan Roberts's vmalloc benchmarks (linux-mm, 2025), in the legend of his table
    result = analysed("""\
        - (I): statistically significant improvement (95% CI does not overlap)
        - (R): statistically significant regression (95% CI does not overlap)
        fix_size_alloc_test with h:1 and p:16,64,256 regress by ~6% on Altra.
        """)
    assert [c.claim.change.low_pct for c in result.claims] == [6]
    # Chris Li (linux-mm, 2023): "80%" is the lower of two confidence levels, not a gain
    result = analysed("""\
        Chun-Tse did some benchmark in chromebook, showing that
        zram_wait_metrics improve about 15% with 80% and 95% confidence.
        """)
    assert [c.claim.change.low_pct for c in result.claims] == [15]


def test_a_percentage_column_of_a_table_is_no_change_unless_its_heading_says_so() -> None:
    # Waiman Long's table (linux-mm, 2021, quoted by Masayoshi Mizuma): the accounting overhead
    # left after each set of patches, as a share of the first. "100.0%" was a 100% regression.
    levels = analysed("""\
        > With memory accounting enabled, the run times with the application of various
        > patches in the patchset were:
        >
        >   Applied patches   Run time   Accounting overhead   Overhead %age
        >   ---------------   --------   -------------------   -------------
        >        None          10.800s         7.952s              100.0%
        >         1-2           9.140s         6.292s               79.1%
        >         1-3           7.641s         4.793s               60.3%
        >         1-5           6.801s         3.953s               49.7%
        """)
    assert [c.claim.kind for c in levels.claims if c.claim.kind == "percentage"] == []
    # Ingo Molnar's (linux-mm, 2012): a change column under "[ vs. v3.7]" stays one
    changes = analysed("""\
        >   [ seconds         ]    v3.7  AutoNUMA   |  numa/core-v16    [ vs. v3.7]
        >   [ lower is better ]   -----  --------   |  -------------    -----------
        >                                           |
        >   numa01                340.3    192.3    |      139.4          +144.1%
        >   numa01_THREAD_ALLOC   425.1    135.1    |      121.1          +251.0%
        >   numa02                 56.1     25.3    |       17.5          +220.5%
        """)
    assert [c.claim.change.low_pct for c in changes.claims] == [144.1, 251.0, 220.5]


def test_a_metric_named_before_its_side_and_a_glued_unit() -> None:
    # Barry Song (linux-mm, 2022): read as nothing before
    result = analysed("""\
        thp swp throughput w/o patch: 2734bytes/ms (mean of 10 tests)
        thp swp throughput w/  patch: 3331bytes/ms (mean of 10 tests)
        """)
    [m] = result.claims[0].claim.measurements
    assert (m.metric, m.base, m.patched, m.unit) == ("thp swp throughput", 2734, 3331, "bytes/ms")
    assert (m.n, m.higher_is_better) == (10, True)


def test_a_kernel_s_version_after_its_side_is_no_value() -> None:
    # Raghavendra K T (linux-mm, 2025): "6.16" twice was "+0.00%: the two are equal"
    result = analysed("""\
        base       6.16-rc4 + 1-9 patches of this series
        patched =  6.16-rc4 + all patches
        """)
    assert result.claims == ()


def test_a_share_column_beside_inline_changes_and_contention_that_drops() -> None:
    # Aaron Lu's zone lock table (linux-mm, 2018): the contention column holds shares of the
    # cycles, not changes; the sentence under it says the contention dropped, which is good
    result = analysed("""\
        kernel        performance      zone lock contention
        patch1         9219349         76.99%
        patch7         2461133 -73.3%  54.46%(another 34.66% on smp_list_add())
        patch8        11712766 +27.0%  68.14%
        patch9        11386980 +23.5%  67.18%

        zone lock scalability can be
        improved: performance increase 20%+, lock contention drop 8%.
        """)
    changes = [(c.claim.change.low_pct, c.claim.change.direction) for c in result.claims]
    assert changes == [(20, "improvement"), (8, "improvement")]


def test_from_one_percentage_to_another_is_two_levels() -> None:
    """Aaron Lu (linux-mm, 2018): the lru_lock's contention "rose from 2% to 33%" was a change
    of 2-33%, and once "rose" gave a direction, a "2-33% regression": both are levels."""
    result = analysed("""\
        the dropped lock contention on free side doesn't translate to
        performance increase, instead, it's consumed by increased lock contention
        of the per node lru_lock(rose from 2% to 33%).
        """)
    assert [c.claim.change for c in result.claims] == []
    # Honggyu Kim (linux-mm, 2024): the slowdown the series leaves, "4~5%", was an improvement
    result = analysed("""\
        our evaluation shows that "DAMON tiered" memory management reduces the performance
        slowdown compared to the "default" memory policy from 17~18% to 4~5% when the system
        runs with high memory pressure on its fast tier DRAM nodes.
        """)
    assert [c.claim.change for c in result.claims] == []
    # a range of changes stays one
    [claim] = analysed("Throughput improves by 2% to 5% with the series.\n").claims
    assert (claim.claim.change.low_pct, claim.claim.change.high_pct) == (2.0, 5.0)


def test_a_percentage_across_a_contrast_is_not_the_pair_s() -> None:
    """Kairui Song (linux-mm, 2026, on Virtual Swap Space): ">200% regression" is said of other
    setups, "but" the example's pair is 19.9% apart: no slip of arithmetic to point out."""
    result = analysed("""\
        I have a vm-scatiliby test
        matrix, not every setup has such significant >200% regression, but on
        average the freeing time is about at least 15 - 50% slower (for
        example /data/vm-scalability/usemem --init-time -O -y -x -n 32 1536M
        the regression is about 2583221.62us vs 2153735.59us).
        """)
    [measurement] = [m for c in result.claims for m in c.claim.measurements]
    assert (measurement.base, measurement.patched) == (2153735.59, 2583221.62)
    assert measurement.stated_pct is None
    # in one clause, or one a comma away, the percentage is the pair's
    [pair] = [m for c in analysed("Throughput improves by 10%, from 100 to 110 ops/s.\n").claims
              for m in c.claim.measurements]  # fmt: skip
    assert pair.stated_pct == 10.0


def test_a_percentage_of_something_is_a_share_unless_a_change_is_of_it() -> None:
    """Mel Gorman (linux-mm, 2021): "Max-90 shows that 90% of the stalls are comparable", and
    Nhat Pham's "0.5% of the total swapfile size", were changes of 90% and 0.5%: they are
    shares. Christoph Lameter's "an improvement of 20%-50% of fastpath latency" stays one."""
    for sentence in ("Max-90 shows that 90% of the stalls are comparable.",
                     "The added overhead is 170MB, which is 0.5% of the total swapfile size."):
        assert [c.claim.change for c in analysed(sentence + "\n").claims] == [], sentence
    [claim] = analysed("Slab Benchmarks show an improvement of 20%-50% of fastpath latency.\n"
                       ).claims  # fmt: skip
    assert (claim.claim.change.low_pct, claim.claim.change.high_pct) == (20.0, 50.0)


def test_a_loss_of_or_a_gain_of_binds_its_own_figure() -> None:
    """Mel Gorman on SLUB's tbench regression (linux-mm, 2008): "Went from losses of around 2%
    to gains of of around 1%" made both improvements, "losses" being no word of loss; "between
    7% and 21% regression" was two figures of no direction; "+/- 30% performance
    gains/losses" stays one of neither."""
    sentences = {
        "Again solid gains. Went from losses of around 2% to gains of of around 1%.":
            [(2.0, 2.0, "regression"), (1.0, 1.0, "improvement")],
        "Went from losses of between 0.9% and 6.8% to decent gains in some cases.":
            [(0.9, 6.8, "regression")],
        "Without the patch it was between 7% and 21% regression though so it's still an "
        "improvement.": [(7.0, 21.0, "regression")],
        "HackBench showed +/- 30% performance gains/losses depending on the machine.":
            [(30.0, 30.0, None)],
        # the word after a comparative is what moved, not a name of the figure
        "The series gives 10% less overhead on the fault path.": [(10.0, 10.0, "improvement")],
        "With the series the overhead is less than 1% on the fault path.":
            [(1.0, 1.0, "regression")],
    }  # fmt: skip
    for sentence, expected in sentences.items():
        changes = [c.claim.change for c in analysed(sentence + "\n").claims if c.claim.change]
        assert [(c.low_pct, c.high_pct, c.direction) for c in changes] == expected, sentence


def test_a_run_count_in_words() -> None:
    # Pankaj Raghav's bcachefs buffered writes (linux-mm, 2024): "across three runs"
    block = next(iter(message_blocks(textwrap.dedent("""\
        The numbers are averaged across three runs on 6.10-rc3.

        Before patches: 2730
        After patches: 3430 (1.25x boost)
        """), "Pankaj Raghav <p.raghav@example.org>")))
    assert [c.runs for c in find_run_counts(block)] == [3]
