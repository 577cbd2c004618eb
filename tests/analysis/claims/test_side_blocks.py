"""Before/after blocks, a kernel's name on a line and its metrics under it
(bot/analysis/claims/side_blocks.py). The blocks are real ones from linux-mm cover letters."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message
from bot.analysis.claims.model import Claim


def blocks(body: str, sender: str = "Kairui Song <kasong@tencent.com>") -> list[Claim]:
    result = analyse_message("s", sender, textwrap.dedent(body))
    return [c.claim for c in result.claims if c.claim.layout == "side blocks"]


def test_name_value_pairs_under_before_and_after_with_the_changes_the_heading_states() -> None:
    # Kairui Song, "mm, swap: rework of swap allocator locks" (linux-mm, October 2024)
    [claim] = blocks("""\
        time make -j96 / 1152M memcg, 64K mTHP, 10G ZRAM, on Intel 8255C * 2:
        Before:
        Sys time: 74044.85, Real time: 846.51
        hugepages-64kB/stats/swpout: 1735216
        After: (-51.4% sys time, -47.7% real time, -63.2% mTHP failure)
        Sys time: 35958.87, Real time: 442.69
        hugepages-64kB/stats/swpout: 1866267
        """)
    got = {m.metric: (m.base, m.patched, m.stated_pct, m.higher_is_better)
           for m in claim.measurements}  # fmt: skip
    assert got == {
        "Sys time": (74044.85, 35958.87, -51.4, False),
        "Real time": (846.51, 442.69, -47.7, False),
        "hugepages-64kB/stats/swpout": (1735216, 1866267, None, None),
    }
    assert (claim.measurements[0].base_label, claim.measurements[0].patched_label) == (
        "Before", "After")


def test_after_first_and_runs_that_wrap_onto_the_next_line() -> None:
    # Chris Li, "mm: swap: mTHP swap allocator base on swap cluster order" (linux-mm, 2024)
    [claim] = blocks("""\
        SSD swap 10 runs average, 20G swap partition:
        With:
        user    2929.064
        system  1479.381 : 1376.89 1398.22 1444.64 1477.39 1479.04 1497.27
        1504.47 1531.4 1532.92 1551.57
        real    1441.324

        Without:
        user    2910.872
        system  1482.732 : 1440.01 1451.4 1462.01 1467.47 1467.51 1469.3
        1470.19 1496.32 1544.1 1559.01
        real    1580.822
        """, sender="Chris Li <chrisl@kernel.org>")
    by_name = {m.metric: m for m in claim.measurements}
    assert (by_name["real"].base, by_name["real"].patched) == (1580.822, 1441.324)
    assert by_name["real"].unit == "s" and by_name["real"].higher_is_better is False
    system = by_name["system"]
    assert len(system.samples_base) == 10 and system.samples_base[-1] == 1559.01
    assert system.samples_patched[0] == 1376.89
    assert claim.runs == 10
    assert (system.base_label, system.patched_label) == ("Without", "With")


def test_a_heading_over_no_metrics_or_a_value_on_its_own_line_is_no_block() -> None:
    assert blocks("""\
        Without:
        $ ./thp_swap_allocator_test -a
        Iteration 1: swpout inc: 32, swpout fallback inc: 192, Fallback percentage: 85.71%

        With:
        $ ./thp_swap_allocator_test -a
        """) == []
    # "Before: 44017.78 Ops/sec" is a line pair, read as one.
    result = analyse_message("s", "a <a@b.c>", "Before: 44017.78 Ops/sec\nAfter: 44687.08\n")
    assert [j.claim.layout for j in result.claims] == ["before-after lines"]


def test_time_s_minutes_and_seconds_in_a_comparison_table() -> None:
    # Yicong Yang's swap_bench under Barry Song's arm64 TLB batching (linux-mm, 2022)
    result = analyse_message("s", "Barry Song <b@s.org>", textwrap.dedent("""\
                      w/o             w/
              real    0m13.460s       0m11.771s
              sys     0m12.039s       0m11.458s
        """))
    [judged] = result.claims
    real = judged.claim.measurements[0]
    assert (real.metric, real.base, real.patched, real.unit) == ("real", 13.46, 11.771, "s")


def test_a_heading_between_rules() -> None:
    # KAMEZAWA Hiroyuki, memcg async reclaim (linux-mm, 2011): "'real' is in error range ;)"
    [claim] = blocks("""\
        == without async reclaim ==
        real    0m6.569s
        sys     0m0.976s

        == with async reclaim ==
        real    0m6.305s
        sys     0m0.907s
        """, sender="KAMEZAWA Hiroyuki <kamezawa.hiroyu@jp.fujitsu.com>")
    assert [(m.metric, m.base, m.patched) for m in claim.measurements] == [
        ("real", 6.569, 6.305), ("sys", 0.976, 0.907)]


def test_the_metrics_on_the_side_s_own_line() -> None:
    # Kairui Song's non-full cluster series, as Chris Li quoted it (linux-mm, 2024)
    [first, second] = blocks("""\
        Before: sys time: 6121.0s  64kB/swpout: 1638155  64kB/swpout_fallback: 189562
        After:  sys time: 6145.3s  64kB/swpout: 1761110  64kB/swpout_fallback: 66071

        128kB swap failure rate:
        Before: swpout:449548 swpout_fallback:55894
        After:  swpout:497519 swpout_fallback:3204
        """)
    assert [(m.metric, m.base, m.patched) for m in first.measurements] == [
        ("sys time", 6121.0, 6145.3), ("64kB/swpout", 1638155, 1761110),
        ("64kB/swpout_fallback", 189562, 66071)]
    assert [(m.metric, m.base, m.patched) for m in second.measurements] == [
        ("swpout", 449548, 497519), ("swpout_fallback", 55894, 3204)]


def test_mean_and_stdev_under_a_side_an_article_leads() -> None:
    # Nhat Pham's zswap decompression (linux-mm, 2024): the patched kernel first.
    [claim] = blocks("""\
        With the new scheme:
        real: mean: 125.1s, stdev: 0.12s
        sys: mean: 2156.41s, stdev: 13.98s

        The old scheme:
        real: mean: 125.78s, stdev: 0.45s
        sys: mean: 2177.08s, stdev: 26.52s
        """, sender="Nhat Pham <nphamcs@gmail.com>")
    real = claim.measurements[0]
    assert (real.base, real.patched, real.unit) == (125.78, 125.1, "s")
    assert round(real.cv_base_pct, 4) == round(100 * 0.45 / 125.78, 4)
    assert (real.base_label, real.patched_label) == ("The old scheme", "With the new scheme")


def test_a_side_s_line_longer_than_a_heading_is_not_read() -> None:
    # A side's name before a wall of words cost the metric patterns its length squared (40,000
    # words took half a minute); a line over 500 characters is no heading, whatever it holds.
    assert blocks("Before: " + "word " * 40_000 + "\nAfter: x\n") == []
    long_line = " ".join(f"m{i}: {i + 1}" for i in range(100))
    assert blocks(f"Before: {long_line}\nAfter:  {long_line}\n") == []


def test_blank_lines_between_a_side_s_metrics_and_a_run_count_in_words() -> None:
    # Nhat Pham's mail as he sent it (linux-mm, 2025): a blank line under each heading and
    # between the metrics, which ended each block before its first metric.
    result = analyse_message("s", "Nhat Pham <nphamcs@gmail.com>", textwrap.dedent("""\
        Yeah I ran some kernel building tests for 5 times, and found basically
        no difference:

        With the new scheme:

        real: mean: 125.1s, stdev: 0.12s

        user: mean: 3265.23s, stdev: 9.62s

        sys: mean: 2156.41s, stdev: 13.98s


        The old scheme:

        real: mean: 125.78s, stdev: 0.45s

        user: mean: 3287.18s, stdev: 5.95s

        sys: mean: 2177.08s, stdev: 26.52s
        """))
    [judged] = result.claims
    real, user, sys = judged.judgement.measurements
    assert [m.metric for m in judged.claim.measurements] == ["real", "user", "sys"]
    assert judged.claim.measurements[0].n == 5
    # Real, and at p < 0.05, but the whole interval is under 1%: said so, as run tables say it
    assert real.summary.endswith("improvement (real, but below the 1% of interest)")
    assert sys.verdict == "inconclusive"


def test_the_series_patch_by_patch_is_compared_whole_with_each_side_s_spread() -> None:
    """Kairui Song's shmem mTHP swap-in series (linux-mm, mm-commits, 2025): `Before:` and
    `After patch 1:` were compared, patches 2 to 4 left out, and `stddev: 0.06` taken for a
    metric of its own. The whole series is the last block; the stddev is its average's spread,
    over the "36 samples each" the text gives, so the change can be judged."""
    [claim, other] = blocks("""\
        The performance is slightly better after this series, sequential swap in of
        24G data from ZRAM, using transparent_hugepage_tmpfs=always (36 samples each):

        Before:        avg: 11.23s, stddev: 0.06
        After patch 1: avg: 10.92s, stddev: 0.05
        After patch 2: avg: 10.93s, stddev: 0.15
        After patch 3: avg: 10.07s, stddev: 0.09
        After patch 4: avg: 10.09s, stddev: 0.08

        Build kernel test showed very slightly improvement, testing with make -j24
        with defconfig in a 256M memcg also using ZRAM as swap, and
        transparent_hugepage_tmpfs=always (6 samples each):

        Before:        system time avg: 3945.25s
        After patch 1: system time avg: 3903.21s
        After patch 2: system time avg: 3914.76s
        After patch 3: system time avg: 3907.41s
        After patch 4: system time avg: 3876.24s
        """, sender="Andrew Morton <akpm@linux-foundation.org>")
    [avg] = claim.measurements
    assert (avg.metric, avg.base, avg.patched, avg.unit) == ("avg", 11.23, 10.09, "s")
    assert (avg.base_label, avg.patched_label) == ("Before", "After patch 4")
    assert (avg.n_base, avg.n_patched) == (36, 36)
    assert round(avg.cv_base_pct, 2) == round(100 * 0.06 / 11.23, 2)
    assert len(claim.lines) == 5
    [system] = other.measurements
    assert (system.base, system.patched, system.n_base) == (3945.25, 3876.24, 6)
