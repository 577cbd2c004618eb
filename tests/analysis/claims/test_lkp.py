"""lkp-tests comparison tables read into measurements (bot/analysis/claims/lkp.py)."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message

LKP = """\
    d000e073ca2a08ab 89359897983825dbfc08578e7ee
    ---------------- ---------------------------
             %stddev     %change         %stddev
                 \\          |                \\
        263173           -11.7%     232411        will-it-scale.per_process_ops
        138055 ± 18%     +33.4%     184128 ± 14%  cpuidle..usage
          0.37 ±  6%      +1.9        2.25 ±  5%  mpstat.cpu.all.soft%
"""


def measurements() -> dict:
    result = analyse_message("s", "robot <lkp@intel.com>", textwrap.dedent(LKP))
    [claim] = result.claims
    assert claim.claim.kind == "summary" and claim.claim.layout == "lkp"
    return {m.metric: m for m in claim.claim.measurements}


def test_stddev_is_the_spread_and_not_a_change_or_a_range() -> None:
    m = measurements()
    usage = m["cpuidle..usage"]
    assert (usage.base, usage.patched) == (138055, 184128)
    assert (usage.cv_base_pct, usage.cv_patched_pct) == (18, 14)
    assert usage.stated_pct == 33.4 and usage.stated_kind == "relative"
    # A blank %stddev column is no spread printed, not zero.
    ops = m["will-it-scale.per_process_ops"]
    assert (ops.cv_base_pct, ops.cv_patched_pct) == (None, None)
    assert ops.higher_is_better is True and usage.higher_is_better is None


def test_percent_metrics_change_in_points() -> None:
    soft = measurements()["mpstat.cpu.all.soft%"]
    assert soft.stated_kind == "points" and soft.stated_pct == 1.9
    assert (soft.base, soft.patched) == (0.37, 2.25)


def test_commit_ids_name_the_kernels() -> None:
    ops = measurements()["will-it-scale.per_process_ops"]
    assert ops.base_label == "d000e073ca2a08ab"
    assert ops.patched_label == "89359897983825dbfc08578e7ee"


def test_a_blank_stddev_is_two_percent_or_less() -> None:
    # lkp-tests prints "± x%" only above 2% (lib/compare.rb, show_perf_change): a row with both
    # sides blank is no longer "one number per side".
    ops = measurements()["will-it-scale.per_process_ops"]
    assert ops.cv_blank_max_pct == 2.0
    result = analyse_message("s", "robot <lkp@intel.com>", textwrap.dedent(LKP))
    [judged] = result.claims
    by_metric = dict(zip((m.metric for m in judged.claim.measurements),
                         judged.judgement.measurements, strict=True))  # fmt: skip
    ops_judged = by_metric["will-it-scale.per_process_ops"]
    assert ops_judged.status == "needs-runs"
    assert "per-run CV of at most 2% (what a blank %stddev stands for)" in ops_judged.summary
    # A side that printed its spread keeps it.
    assert "per-run CV of 18%" in by_metric["cpuidle..usage"].summary


# Johannes Weiner's answer to the robot's vm-scalability report (linux-mm, June 2020): he asks
# about rows between them, and the rows after each question are more of the same table.
INTERLEAVED = """\
> a4fe1631f313f75c 1431d4d11abb265e79cd44bed2f
> ---------------- ---------------------------
>          %stddev     %change         %stddev
>              \\          |                \\
>       0.23 ±  2%     +11.7%       0.26        vm-scalability.free_time

What's free_time?

>     103991           -11.6%      91935        vm-scalability.median
>   20717269           -11.5%   18336098        vm-scalability.throughput
>      41005           +14.5%      46936        vm-scalability.time.system_time
>       4.43            -0.5        3.90 ±  2%  mpstat.cpu.all.usr%

These counters capture present state, not history.

>    1442 ±  5%     -14.9%       1227 ± 10%  slabinfo.kmalloc-rcl-96.active_objs

More scan activity.
"""


def test_rows_after_a_replier_s_comment_continue_the_table() -> None:
    body = "On Tue, Jun 16, 2020, kernel test robot wrote:\n" + INTERLEAVED
    result = analyse_message("Re: [mm] 1431d4d11a", "Johannes Weiner <hannes@cmpxchg.org>", body)
    claims = [j.claim for j in result.claims]
    assert [(c.kind, c.layout) for c in claims] == [("summary", "lkp")] * 3
    metrics = [[m.metric for m in c.measurements] for c in claims]
    assert metrics == [
        ["vm-scalability.free_time"],
        ["vm-scalability.median", "vm-scalability.throughput",
         "vm-scalability.time.system_time", "mpstat.cpu.all.usr%"],
        ["slabinfo.kmalloc-rcl-96.active_objs"],
    ]  # fmt: skip
    throughput = claims[1].measurements[1]
    assert (throughput.base, throughput.patched) == (20717269, 18336098)
    assert throughput.base_label == "a4fe1631f313f75c"
    assert throughput.patched_label == "1431d4d11abb265e79cd44bed2f"
    assert claims[1].measurements[3].stated_kind == "points"


def test_rows_without_a_table_above_them_are_no_lkp_table() -> None:
    body = ">     103991           -11.6%      91935        vm-scalability.median\n"
    result = analyse_message("s", "a <a@b.c>", body)
    assert all(j.claim.layout != "lkp" for j in result.claims)


def test_the_robot_s_retest_of_a_fix_has_no_change_column() -> None:
    # "The patch can fix the regression." (the robot, answering Johannes Weiner, May 2019)
    body = textwrap.dedent("""\
        db9adbcbe740e098  8d8245997dbd17c5056094f15c
        ----------------  --------------------------
                 %stddev      change         %stddev
                     \\          |                \\
          87819982                    85307742        will-it-scale.workload
            457395                      444310        will-it-scale.per_process_ops
        """)
    [judged] = analyse_message("s", "robot <lkp@intel.com>", body).claims
    ops = judged.claim.measurements[1]
    assert (ops.metric, ops.base, ops.patched) == ("will-it-scale.per_process_ops", 457395, 444310)
    assert ops.stated_pct is None and ops.base_label == "db9adbcbe740e098"


def test_rows_quoted_without_their_heading_are_read() -> None:
    # Mel Gorman quoting two rows of the robot's report (linux-mm, August 2016), "±" as an
    # archive left it, and a single run's "-1%" spread.
    body = textwrap.dedent("""\
        > >    2506952 __  2%     +28.1%    3212076 __  7%  vm-scalability.throughput
        > >    1207402 __  7%     +22.3%    1476578 __  6%  vmstat.swap.so
        > >      10.36 __ 11%    -100.0%       0.00 __ -1%  perf-profile.cycles-pp.lock.swap

        I didn't see anything wrong with the patch.
        """)
    result = analyse_message("Re: [PATCH]", "Mel Gorman <mgorman@suse.de>", body)
    [judged] = [j for j in result.claims if j.claim.layout == "lkp"]
    throughput, swap, profile = judged.claim.measurements
    assert (throughput.base, throughput.patched) == (2506952, 3212076)
    assert (throughput.cv_base_pct, throughput.cv_patched_pct) == (2, 7)
    assert (throughput.base_label, throughput.patched_label) == ("base", "patched")
    assert profile.cv_patched_pct is None
    assert judged.claim.speaker.quote_depth == 2


def test_the_plus_minus_sign_as_mailers_transliterate_it() -> None:
    # Huang Ying's THP swap series (linux-mm, 2016): "A+-" for "±"; and UTF-8 read as Latin-1.
    for sign in ("A+-", "Â±"):
        body = textwrap.dedent(f"""\
            base             base+patchset
            ---------------- --------------------------
                     %stddev     %change         %stddev
                         \\          |                \\
               2460636 {sign}  1%     +10.6%    2720983 {sign}  1%  vm-scalability.throughput
                308.79 {sign}  1%      -7.9%     284.53 {sign}  1%  vm-scalability.time.elapsed_time
            """)
        [judged] = analyse_message("s", "Huang Ying <ying.huang@intel.com>", body).claims
        throughput, elapsed = judged.claim.measurements
        assert (throughput.base, throughput.patched) == (2460636, 2720983)
        assert throughput.cv_base_pct == 1
        assert elapsed.higher_is_better is False, sign


def test_one_row_alone_or_rows_naming_no_stat_are_not_lkp() -> None:
    one = ">    2506952 ±  2%     +28.1%    3212076 ±  7%  vm-scalability.throughput\n"
    plain = "  10     +5%     12   runs\n  11     +4%     13   more\n"
    for body in (one, plain):
        result = analyse_message("s", "a <a@b.c>", body)
        assert all(j.claim.layout != "lkp" for j in result.claims), body


def test_headerless_rows_of_three_commits_under_their_ids_and_rule() -> None:
    # Feng Tang's padding test (linux-mm, August 2021): the parent, the commit and the commit
    # with padding, the %stddev heading cut, a blank line after the first row.
    body = textwrap.dedent("""\
        dc26532aed0ab25c 2d146aa3aa842d7f5065802556b 73371bf27a8a8ea68df2fbf456b
        ---------------- --------------------------- ---------------------------
          65523232 ±  4%     -40.8%   38817332 ±  5%     -19.6%   52701654 ±  3%  vm-scalability.throughput

         0.58 ±  2%      +3.1        3.63            +2.3        2.86 ±  4%  pp.bt.__count_memcg_events
              1.15            +3.1        4.20            +2.5        3.68 ±  4%  pp.bt.page_add_file_rmap
        """)  # noqa: E501
    [judged] = analyse_message("s", "Feng Tang <feng.tang@intel.com>", body).claims
    rows = [(m.metric, m.patched_label, m.patched) for m in judged.claim.measurements]
    assert rows[:2] == [("vm-scalability.throughput", "2d146aa3aa842d7f5065802556b", 38817332),
                        ("vm-scalability.throughput", "73371bf27a8a8ea68df2fbf456b", 52701654)]
    assert judged.claim.measurements[0].base_label == "dc26532aed0ab25c"
    assert len(rows) == 6


def test_rows_with_the_case_s_name_in_front_under_the_two_kernels() -> None:
    # Feng Tang's slab order series (linux-mm, 2023): the configurations are a share of the
    # CPUs, not changes.
    body = textwrap.dedent("""\
        run 3 configurations with parallel test threads of 25%, 50% and 100% of
        number of CPUs, and the data is (base is vanilla v6.5 kernel):

        \t\t     base                      base+patch
        wis-mmap1-25%\t    223670           +33.3%     298205        per_process_ops
        wis-mmap1-100%       89200           +65.0%     147139        per_process_ops

        Take the perf-profile comparasion of 50% test case, the lock contention is reduced.
        """)
    result = analyse_message("s", "Feng Tang <feng.tang@intel.com>", body)
    [judged] = result.claims
    first = judged.claim.measurements[0]
    assert (first.metric, first.base, first.patched, first.stated_pct) == (
        "wis-mmap1-25% per_process_ops", 223670, 298205, 33.3)
    assert (first.base_label, first.patched_label, first.higher_is_better) == (
        "base", "base+patch", True)


def test_a_rate_per_second_and_a_latency_bucket_s_share() -> None:
    """Two of the robot's stats (quoted by Matthew Wilcox and Yin Fengwei, linux-mm 2021-2022):
    fxmark's `works/sec` was lower-is-better ("sec" a time), so its -7.6% regression read as an
    improvement; fio's `latency_10ms%`, the share of I/Os in a bucket, was lower-is-better
    ("latency"), though a larger share of fast I/Os is better: a bucket's share has no
    direction."""
    result = analyse_message("s", "Matthew Wilcox <willy@example.org>", textwrap.dedent("""\
        >          %stddev     %change         %stddev
        >              \\          |                \\
        >    4168491            -7.6%    3849925        fxmark.hdd_ext4_no_jnl_DRBM_9_bufferedio.works/sec
        >      56.60 ±  3%     +10.3       66.92 ±  2%  fio.latency_10ms%
        """))  # noqa: E501
    [claim] = result.claims
    got = {m.metric: m.higher_is_better for m in claim.claim.measurements}
    assert got == {"fxmark.hdd_ext4_no_jnl_DRBM_9_bufferedio.works/sec": True,
                   "fio.latency_10ms%": None}
