"""Comparison tables, one value a cell and the kernels named as sides, read into measurements
(bot/analysis/claims/comparisons.py). The tables are real ones from linux-block and cgroups."""

from __future__ import annotations

import textwrap

import pytest

from bot.analysis.claims import analyse_message
from bot.analysis.claims.model import Claim


def tables(body: str) -> list[Claim]:
    result = analyse_message("s", "Yu Kuai <yukuai@example.org>", textwrap.dedent(body))
    return [c.claim for c in result.claims if c.claim.layout == "table"]


def measured(claim: Claim) -> dict[str, tuple]:
    return {m.metric: (m.base, m.patched, m.unit, m.higher_is_better, m.stated_pct)
            for m in claim.measurements}  # fmt: skip


def test_a_kernel_a_row_in_markdown_is_each_columns_change() -> None:
    # Yu Kuai's mq-deadline and bfq IOPS (linux-block). Read as lines, it was one pair of its
    # last column under the name "k": bfq's +135%, and deadline's +81% lost.
    [claim] = tables("""\
        Test result: iops

        |                 | deadline | bfq      |
        | --------------- | -------- | -------- |
        | before this set | 263k     | 124k     |
        | after this set  | 475k     | 292k     |
        """)
    assert measured(claim) == {"deadline": (263000.0, 475000.0, "iops", True, None),
                               "bfq": (124000.0, 292000.0, "iops", True, None)}
    assert (claim.measurements[0].base_label, claim.measurements[0].patched_label) == (
        "before this set", "after this set")


def test_a_kernel_a_column_takes_the_units_and_changes_its_labels_give() -> None:
    # Stefan Roesch's io_uring numbers (linux-block): a unit in the cell or the row's label;
    # the change column is the author's change.
    [claim] = tables("""\
                          without patch     with patch     change
        throughput:       329 Mib/s         1032Mib/s      +213.7%
        iops:             82k               264k           +222%
        clat (nsec)       9017              60             -99.3%
        """)
    assert measured(claim) == {
        "throughput": (329.0, 1032.0, "Mib/s", True, 213.7),
        "iops": (82000.0, 264000.0, None, True, 222.0),
        "clat (nsec)": (9017.0, 60.0, "nsec", False, -99.3),
    }


def test_an_ascii_box_and_a_label_column_of_numbers() -> None:
    [claim] = tables("""\
        +--------+-----------+----------+
        | Length | w/o patch | w/ patch |
        +--------+-----------+----------+
        |      1 |  633 MB/s |  477 MB/s|
        |     16 |  717 MB/s | 2517 MB/s|
        +--------+-----------+----------+
        """)
    # "16" is a length, not sixteen of something
    assert measured(claim) == {"Length 1": (633.0, 477.0, "MB/s", True, None),
                               "Length 16": (717.0, 2517.0, "MB/s", True, None)}


ROUNDS = """\
    fio -filename=/dev/nullb0 -rw=write -bs=4k

    | test round | with this patch | without this patch |
    | ---------- | --------------- | ------------------ |
    | 1          | 4310k           | 4265k              |
    | 2          | 4295k           | 4327k              |
    | 3          | 4217k           | 4213k              |
    | 4          | 4355k           | 4236k              |
    | 5          | 4315k           | 4337k              |
    | average    | 4294k           | 4275k              |
    """


def test_a_run_a_row_is_the_samples_of_one_metric() -> None:
    # Yu Kuai's tag sharing test (linux-block): five rounds a side and their average. The
    # change is +0.53%, within the noise the rounds show.
    [claim] = tables(ROUNDS)
    [m] = claim.measurements
    assert m.samples_base == (4265e3, 4327e3, 4213e3, 4236e3, 4337e3)
    assert m.samples_patched == (4310e3, 4295e3, 4217e3, 4355e3, 4315e3)
    assert (m.metric, m.n_base, m.n_patched, m.base_label) == ("fio", 5, 5, "without this patch")


def test_one_metric_is_summed_up_by_its_own_judgement() -> None:
    # Not "0 of 1 metrics judged from mean, spread and runs show a change at 5%".
    result = analyse_message("s", "Yu Kuai <yukuai@example.org>", textwrap.dedent(ROUNDS))
    [judged] = [c for c in result.claims if c.claim.layout == "table"]
    # The rounds are judged as a table's runs are (rank test, docs/claims.md "Judging")
    assert judged.judgement.summary == (
        "fio: +0.65% [-1.13%, +2.42%] p=0.690 could not tell: between -1.13% and +2.42%.")
    assert judged.judgement.measurements[0].method.startswith("rank test on the runs")


def test_two_line_headings_are_joined_and_a_spread_column_is_no_result() -> None:
    # Arm's xen-blkback numbers (linux-block): each metric's name on two lines, and the
    # bandwidth's standard deviation beside it.
    [claim] = tables("""\
                   Bandwidth         IO-ops   Latency   Bandwidth
                   read (bytes/sec)  per sec    (ns)    % Std.Deviation
        Baseline:  21365755610       20377     390105   1.86%
        Patched:   25950107558       24748     322905   0.16%
        """)
    assert measured(claim) == {
        "Bandwidth read (bytes/sec)": (21365755610.0, 25950107558.0, "bytes/sec", True, None),
        "IO-ops per sec": (20377.0, 24748.0, None, True, None),
        "Latency (ns)": (390105.0, 322905.0, "ns", False, None),
    }


def test_a_lone_total_row_is_a_metric_not_an_empty_table_of_runs() -> None:
    [claim] = tables("""\
                       before     after      change
        Total          1734169    2353717    +35%
        """)
    assert measured(claim) == {"Total": (1734169.0, 2353717.0, None, None, 35.0)}


def test_a_counter_gets_no_direction_from_the_benchmark_named() -> None:
    # SeongJae Park's xen-blkback test with dd (linux-block): swap-ins are no rate.
    [claim] = tables("""\
        dd if=/dev/zero of=/mnt/file bs=1M count=4096

                        pswpin  pswpout
            before      76,672  185,799
            after          587    5,402
        """)
    assert measured(claim) == {"pswpin": (76672.0, 587.0, None, None, None),
                               "pswpout": (185799.0, 5402.0, None, None, None)}


def test_a_change_column_whose_heading_carries_the_percent_sign() -> None:
    # Mukesh Chauras's syscall numbers (kasan-dev): `change %` over bare numbers.
    [claim] = tables("""\
        | Syscall | Base     | New      | change % |
        | ------- | -------- | -------- | -------- |
        | basic   | 10690548 | 10750140 | +0.56    |
        | fork    | 875      | 864      | -1.26    |
        """)
    assert [m.stated_pct for m in claim.measurements] == [0.56, -1.26]


@pytest.mark.parametrize("body", [
    # scripts/bloat-o-meter: code size, function by function (kasan-dev)
    """\
    Function                                     old     new   delta
    __kmem_cache_free                            741     704     -37
    kmem_cache_free_bulk                         911     863     -48
    """,
    # a third kernel: which is compared with which is the author's to say
    """\
                 base    v1      v2
    randread     100k    110k    120k
    """,
    # no side named: two configurations, not a change
    """\
                 none    mq-deadline
    randread     100k    90k
    """,
    # words in a cell: no table of values
    """\
                 before          after
    randread     about the same  better
    """,
])
def test_tables_that_are_no_before_after_comparison_are_not_read(body: str) -> None:
    assert tables(body) == []


def test_hdd_write_in_brackets_is_no_unit() -> None:
    [claim] = tables("""\
        |                 | null_blk | hdd (write) |
        | --------------- | -------- | ----------- |
        | before this set | 613k     | 1088        |
        | after this set  | 940k     | 1093        |
        """)
    assert {m.metric: m.unit for m in claim.measurements} == {"null_blk": None,
                                                             "hdd (write)": None}


def test_changes_in_padded_brackets_beside_each_value() -> None:
    # Johannes Weiner's THP allocator cover letter (linux-mm, 2025): each value carries its
    # change in brackets padded with blanks, and a long value leaves one blank before the next.
    # The stddev row is the spread of allocation times, not of runs: no result, no run spread.
    [claim] = tables("""\
        Comparing before and after the changes over 15 runs:

                                                             before                   after
            Hugealloc Time mean               52739.45 (    +0.00%)   28904.00 (   -45.19%)
            Hugealloc Time stddev             56541.26 (    +0.00%)   33464.37 (   -40.81%)
            Kbuild Real time                    197.47 (    +0.00%)     196.59 (    -0.44%)
            Compact daemon scanned migrate  3369601.27 (    +0.00%) 2267500.33 (   -32.71%)
            Swap in                            7276.00 (    +0.00%)   24457.00 (  +236.10%)
        """)
    got = measured(claim)
    assert list(got) == ["Hugealloc Time mean", "Kbuild Real time",
                         "Compact daemon scanned migrate", "Swap in"]  # fmt: skip
    assert got["Compact daemon scanned migrate"][:2] == (3369601.27, 2267500.33)
    assert got["Swap in"][4] == 236.10
    assert claim.runs == 15
    assert all(m.cv_base_pct is None for m in claim.measurements)


def test_sides_within_each_cell_under_a_second_heading_line() -> None:
    # Kairui Song's swap allocator locks (linux-mm, October 2024): each cell holds before,
    # after and delta; a group's name between the rows; two deltas are copied from another row.
    [claim] = tables("""\
        12 test run for each case.

           make -j<NR>     |   System Time (seconds)  |   Total Time (seconds)
         (NR / Mem / ZRAM) | (Before / After / Delta) | (Before / After / Delta)
         With 4k pages only:
          6 / 192M / 3G    |    5258 /  5235 / -0.3%  |    1420 /  1414 / -0.3%
         96 / 1.5G / 10G   |   21303 / 11353 / -46.7% |     283 /   180 / -36.4%
         With 64k mTHP:
         48 /   1G / 7G    |    8693 /  4662 / -18.7% |     257 /   176 / -31.5%
        """)
    got = measured(claim)
    assert got["System Time (seconds) 96 / 1.5G / 10G"] == (21303, 11353, "seconds", False, -46.7)
    assert got["Total Time (seconds) 48 / 1G / 7G"] == (257, 176, "seconds", False, -31.5)
    assert len(got) == 6 and claim.runs == 12
    m = claim.measurements[0]
    assert (m.base_label, m.patched_label) == ("Before", "After")
    result = analyse_message("s", "Kairui Song <k@s.org>", textwrap.dedent("""\
        12 test run for each case.

           make -j<NR>     |   System Time (seconds)
         (NR / Mem / ZRAM) | (Before / After / Delta)
         48 /   1G / 7G    |    8693 /  4662 / -18.7%
         24 / 384M / 5G    |    7091 /  5766 / -18.7%
        """))
    [judged] = result.claims
    assert judged.judgement.notes == (
        "System Time (seconds) 48 / 1G / 7G: Stated -18.7%; the numbers give -46.4%.",)


def test_the_kernel_before_and_another_with_an_unheaded_change_column() -> None:
    # Michael Wang's NUMA balancer (linux-mm, 2019), as Peter Zijlstra quoted it: tabs, the
    # change column without a heading, and percentages divided by the new value.
    [claim] = tables(
        "\t\t\t\torigin\t\tbalancer\n"
        "4 instances each 12 threads\t5241.08\t\t5375.59\t\t+2.50%\n"
        "4 instances each 24 threads\t7497.29\t\t7820.73\t\t+4.13%\n"
    )
    got = measured(claim)
    assert got["4 instances each 24 threads"][:2] == (7497.29, 7820.73)
    assert got["4 instances each 24 threads"][4] == 4.13
    assert (claim.measurements[0].base_label, claim.measurements[0].patched_label) == (
        "origin", "balancer")


def test_a_run_a_column_and_too_few_runs_to_tell() -> None:
    # liliangleo's page zeroing series (linux-mm, 2020): three rounds a kernel. Every patched
    # round is faster, but three against three cannot reach p <= 0.05 by ranks.
    result = analyse_message("s", "liliangleo <l@l.org>", textwrap.dedent("""\
                          round1      round2      round3
        w/o this patch:    23.5s       24.7s       24.6s
        w/ this patch:     10.2s       10.3s       11.2s
        """))
    [judged] = result.claims
    [m] = judged.claim.measurements
    assert (m.samples_base, m.samples_patched, m.unit) == ((23.5, 24.7, 24.6), (10.2, 10.3, 11.2),
                                                           "s")  # fmt: skip
    [measured] = judged.judgement.measurements
    assert measured.verdict == "inconclusive"
    assert measured.checks == ("With 3 and 3 runs the rank test cannot reach p <= 0.05 however "
                               "the runs fall (its smallest p is 0.1): more runs are needed to "
                               "tell.",)  # fmt: skip


def test_the_patched_kernel_named_and_the_other_is_the_one_before() -> None:
    # David Hildenbrand's fork() runtimes (linux-mm, 2024): "v6.8-rc1" and "New", a change
    # column with a blank inside "- 2%".
    [claim] = tables("""\
        Folio Size | v6.8-rc1 |      New | Change
        ------------------------------------------
               4KiB | 0.014328 | 0.014035 |   - 2%
              16KiB | 0.014263 | 0.01196  |   -16%
        """)
    got = measured(claim)
    assert got["4KiB"][:2] == (0.014328, 0.014035) and got["4KiB"][4] == -2
    assert (claim.measurements[0].base_label, claim.measurements[0].patched_label) == (
        "v6.8-rc1", "New")


def test_a_table_written_with_single_blanks() -> None:
    # Joonsoo Kim (linux-mm, 2020): a metric a column; read as one pair of the last column
    # under the benchmark named elsewhere in the mail ("ebizzy: -18.25%")
    body = textwrap.dedent("""\
        Here is the result. (average of 5 runs)

        type swap-in swap-out
        base 863240 989945
        patch 681565 809273
        """)
    [judged] = analyse_message("s", "a <a@b.c>", body).claims
    pairs = [(m.metric, m.base, m.patched, m.n) for m in judged.claim.measurements]
    assert pairs == [("swap-in", 863240, 681565, 5), ("swap-out", 989945, 809273, 5)]


def test_records_per_second_near_a_table_is_a_rate() -> None:
    # Laurent Dufour's ebizzy (linux-mm, 2019, quoted by Matthew Wilcox): "per second" was
    # read as seconds, so the +70.83% gain was lower-is-better
    body = (
        "> The test is counting the number of records per second it can manage, the\n"
        "> higher is the best. I run it like this 'ebizzy -mTt <nrcpus>'. To get\n"
        "> consistent result I repeated the test 100 times and measure the average\n"
        "> result. The number is the record processes per second, the higher is the best.\n"
        ">\n"
        ">   \t\tBASE\t\tSPF\t\tdelta\t\n"
        "> 24 CPUs x86\t5492.69\t\t9383.07\t\t70.83%\n"
    )
    [judged] = analyse_message("s", "a <a@b.c>", body).claims
    [m] = judged.claim.measurements
    assert (m.base, m.patched, m.higher_is_better, m.n) == (5492.69, 9383.07, True, 100)


def test_two_kernels_named_by_tree_or_by_extension_the_base_first() -> None:
    # Chengming Zhou's zswap timings (linux-mm, 2024): neither column names a side; one is the
    # tree the series is based on, or the name the other extends
    for base, patched in (("mm-unstable", "zswap-global-lru"),
                          ("zswap-invalidate-entry", "zswap-invalidate-entry-exclusive")):
        for first, second in ((base, patched), (patched, base)):
            values = {base: ("63.20", "1061.75"), patched: ("63.12", "1062.95")}
            body = (f">>         {first}  {second}\n"
                    f">> real    {values[first][0]}        {values[second][0]}\n"
                    f">> user    {values[first][1]}      {values[second][1]}\n")
            [judged] = analyse_message("s", "a <a@b.c>", body).claims
            real = judged.claim.measurements[0]
            assert (real.base_label, real.base, real.patched) == (base, 63.20, 63.12), first
            assert (real.unit, real.higher_is_better) == ("s", False)  # `time`'s rows
    # statistics of one metric are no kernels, nor are numbers (Joonsoo Kim's ebizzy rows,
    # 2020: "6973.0" over "-0.01" was read as a kernel "6.8" and a patch), nor two row labels
    # one of which extends the other
    for body in ("       lat   lat-max\nread   12.1   30.2\nwrite  14.0   41.9\n",
                 "  6973.0   7342.0   7745.0\n   -0.01     -0.0     -0.0\n",
                 "            lat     bw\nalloc       1.0     2.0\nalloc_bulk  3.0     4.0\n"):
        assert analyse_message("s", "a <a@b.c>", body).claims == ()


def test_a_kernel_s_version_before_the_side_a_column_names() -> None:
    # Andrea Righi (linux-mm, 2020): "5.6 vanilla" was taken for a value with the unit
    # "vanilla", so the table had no heading and was not read
    body = textwrap.dedent("""\
                        5.6 vanilla   5.6 w/ this patch
                        -----------   -----------------
        page-cluster=1       26.77s              21.25s
        page-cluster=2       28.29s              12.66s
        """)
    [judged] = analyse_message("s", "a <a@b.c>", body).claims
    first = judged.claim.measurements[0]
    assert (first.metric, first.base, first.patched, first.unit) == (
        "page-cluster=1", 26.77, 21.25, "s")
    assert (first.base_label, first.higher_is_better) == ("5.6 vanilla", False)


def test_iozone_report_rows_with_quoted_labels() -> None:
    # Sergey Senozhatsky's zram barriers test (linux-mm, 2015): `iozone -R` quotes each label
    body = textwrap.dedent("""\
         ./iozone -t 3 -R -r 16K -s 60M -I +Z

               test           base          srcu
        "  Initial write " 1299639.75   1277621.03
        "        Rewrite " 2139387.50   2004663.94
        "           Read " 6193415.00   5091000.00
        """)
    [judged] = analyse_message("s", "a <a@b.c>", body).claims
    assert [(m.metric, m.base, m.patched, m.patched_label) for m in judged.claim.measurements] == [
        ("Initial write", 1299639.75, 1277621.03, "srcu"),
        ("Rewrite", 2139387.50, 2004663.94, "srcu"),
        ("Read", 6193415.00, 5091000.00, "srcu"),
    ]


def test_remarks_under_rows_mixed_time_units_and_a_label_one_blank_from_its_value() -> None:
    # Usama Arif's lru_lock waits (linux-mm, 2026): the table ended at the first remark, so one
    # row of five was read; "1.96 s" beside "917.71 ms" is 1960 ms, not +46,700%
    body = textwrap.dedent("""\
        perf lock contention (total wait per 30 s window):

          Lock Name                Before      After     % change
          shrink_lruvec+0x770     722.84 ms    0         -100% (eliminated)
                (= lru_note_cost_unlock_irq)
          workingset_refault+0x167 385.26 ms   0         -100% (eliminated)
                (= lru_note_cost_refault)
          shrink_node+0x4ad       689.43 ms    26.95 ms  -96%
          shrink_active_list      208.34 ms    15.97 ms  -92%
          lru_add_drain_cpu+0x34    1.96 s    917.71 ms  -53%
        """)
    [judged] = analyse_message("s", "a <a@b.c>", body).claims
    values = {m.metric: (m.base, m.patched, m.unit, m.stated_pct)
              for m in judged.claim.measurements}
    assert values["workingset_refault+0x167"] == (385.26, 0, "ms", None)
    assert values["shrink_node+0x4ad"] == (689.43, 26.95, "ms", -96)
    assert values["lru_add_drain_cpu+0x34"] == (1960.0, 917.71, "ms", -53)
    assert not judged.judgement.measurements[-1].checks  # -53% follows from 1960 -> 917.71


def test_a_standard_deviation_row_under_the_kernels_is_no_kernel() -> None:
    # Yosry Ahmed's neper table (linux-mm, 2023, quoted by Shakeel Butt): read as one pair
    # of its last column, "Base 9504218.56" taken for a label, and tcp_rr lost
    body = textwrap.dedent("""\
        > values in the table are the average of server and client throughputs in
        > mbps after 30 iterations, each running for 30s:
        >
        >                                 tcp_rr          tcp_stream
        > Base                            9504218.56      357366.84
        > Patched                         9656205.68      356978.39
        > Delta                           +1.6%           -0.1%
        > Standard Deviation              0.95%           1.03%
        """)
    [judged] = analyse_message("s", "a <a@b.c>", body).claims
    assert [(m.metric, m.base, m.patched, m.stated_pct, m.n)
            for m in judged.claim.measurements] == [
        ("tcp_rr", 9504218.56, 9656205.68, 1.6, 30),
        ("tcp_stream", 357366.84, 356978.39, -0.1, 30),
    ]


def test_a_second_heading_line_of_what_the_columns_hold() -> None:
    # Li RongQing's UnixBench (kvm, 2022): "INDEX  INDEX" under "Base  with patch" was taken
    # for a heading of sides within each cell, and the table was not read
    body = textwrap.dedent("""\
        Testcase                                  Base    with patch
        System Benchmarks Index Values            INDEX     INDEX
        Dhrystone 2 using register variables     3278.4    3277.7
        Execl Throughput                         1296.5     941.1
        Pipe-based Context Switching              243.3     352.0
                                              ========    =======
        System Benchmarks Index Score             1467.2   1483.0
        """)
    [judged] = analyse_message("s", "a <a@b.c>", body).claims
    values = {m.metric: (m.base, m.patched) for m in judged.claim.measurements}
    assert values["Execl Throughput"] == (1296.5, 941.1)
    assert values["System Benchmarks Index Score"] == (1467.2, 1483.0)


def test_a_table_of_each_kernel_s_change_against_a_third_is_not_read() -> None:
    # Ryan Roberts's mTHP swap-out (linux-mm, 2024): every cell is a change against 4K pages
    # on the baseline; "91.4%" -> "89.6%" is no -2% of anything
    body = textwrap.dedent("""\
        | alloc size |                baseline |           + this series |
        |            | mm-unstable (~v6.9-rc1) |                         |
        |:-----------|------------------------:|------------------------:|
        | 4K Page    |                    0.0% |                    1.3% |
        | 64K THP    |                  -13.6% |                   46.3% |
        | 2M THP     |                   91.4% |                   89.6% |
        """)
    assert analyse_message("s", "a <a@b.c>", body).claims == ()


def test_rows_named_before_and_after_are_the_kernels_under_a_workload_s_with_and_no() -> None:
    """Kairui Song's valkey table (linux-mm, 2025, swap table phase I): `no BGSAVE` and `with
    BGSAVE` were taken for the two kernels, "with" being a side's word, so each row compared
    the two workloads (-37.32%); the rows `Before:` and `After:` are the kernels."""
    [claim] = tables("""\
        Testing with:
        redis-benchmark -r 2500000 -n 2500000 -d 1024 -c 12 -P 32 -t get

                        no BGSAVE                with BGSAVE
        Before:         433015.08 RPS            271421.15 RPS
        After:          431537.61 RPS (-0.34%)   290441.79 RPS (+7.0%)
        """)
    assert measured(claim) == {"no BGSAVE": (433015.08, 431537.61, "RPS", True, -0.34),
                               "with BGSAVE": (271421.15, 290441.79, "RPS", True, 7.0)}


def test_mmtests_ops_rows_of_vmstat_counters_are_no_rates() -> None:
    """Mel Gorman's slab reclaim fix (linux-mm, 2019): mmtests' vmstat rows `Ops Direct pages
    scanned` were read as rates ("ops"), higher being better, and would have been listed as
    improvements and regressions the mail does not make. They are counters."""
    [claim] = tables("""\
                                                  vanilla  shrinker-v1r1
            Ops Direct pages scanned             99388.00      328410.00
            Ops Kswapd pages scanned          45382917.00    33451026.00
            Ops Kswapd efficiency %                 68.02          75.45
            Ops Slabs scanned                 62367361.00    73581394.00
        """)
    assert {m.metric: (m.base, m.patched, m.higher_is_better) for m in claim.measurements} == {
        "Direct pages scanned": (99388.0, 328410.0, None),
        "Kswapd pages scanned": (45382917.0, 33451026.0, None),
        "Kswapd efficiency %": (68.02, 75.45, None),
        "Slabs scanned": (62367361.0, 73581394.0, None),
    }


def test_a_change_one_blank_from_its_value_under_a_change_of_its_own() -> None:
    """Kairui Song's usemem numbers (linux-mm, 2025, swap table): `(+26.48%)` one blank after
    `4975.55 MB/s`, under a row whose change has a cell of its own, ended the table: the
    throughput was left out and its +26.48% read as a bare percentage."""
    [claim] = tables("""\
        Test using: usemem --init-time -O -y -x -n 31 1G (1G memcg, pmem as swap)
                        Before:         After:
        System time:    217.39s         161.59s      (-25.67%)
        Throughput:     3933.58 MB/s    4975.55 MB/s (+26.48%)
        """)
    assert measured(claim) == {"System time": (217.39, 161.59, "s", False, -25.67),
                               "Throughput": (3933.58, 4975.55, "MB/s", True, 26.48)}


def test_a_histogram_s_buckets_count_events_of_no_direction() -> None:
    """Barry Song's mmap_lock wait times (linux-mm, 2026): under `Range (us)`, the rows
    `[0, 1)`, `[1, 10)` ... were microseconds, lower being better; they count the waits that
    fell in each range, and fewer fast waits is no improvement."""
    [claim] = tables("""\
        == Read Lock Waiting Time Distribution of mmap_lock ==

        Range (us)                 Before (Avg)    After (Avg)    Change
        ------------------------------------------------------------------------
        [0, 1)                     9,927           4,286          -56.82%
        [1, 10)                    9,179           1,327          -85.54%
        [1000000, +)               0               0              N/A
        """)
    assert measured(claim) == {
        "Range (us) [0, 1)": (9927.0, 4286.0, None, None, -56.82),
        "Range (us) [1, 10)": (9179.0, 1327.0, None, None, -85.54),
        "Range (us) [1000000, +)": (0.0, 0.0, None, None, None),
    }
