"""Tables of runs: labelled rows, kernels as rows, per-column units
(bot/analysis/claims/tables.py)."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message


def claims(body: str):
    return analyse_message("s", "a <a@b.c>", textwrap.dedent(body)).claims


def test_rows_labelled_run1_hash_and_colon_are_runs_and_avg_is_not() -> None:
    for label in ("run{}", "#{}", "{}:", "iter{}"):
        rows = "\n".join(
            f"{label.format(i + 1):<8}{12.3 + i * 0.01:.2f}   {11.7 + i * 0.01:.2f}"
            for i in range(6)
        )
        [judged] = claims(
            f"Results in seconds:\n\nrun   vanilla  patched\n{rows}\navg   12.33   11.73\n"
        )
        table = judged.claim.table
        assert table is not None, label
        assert [len(c.samples) for c in table.columns] == [6, 6], label
        assert table.columns[0].summary == {"avg": 12.33}
        assert judged.claim.measurements[0].higher_is_better is False


def test_kernels_as_rows_with_several_runs_each() -> None:
    [judged] = claims(
        """\
        Before: 31.40 31.52 31.38 31.47 31.44 s
        After:  29.81 29.90 29.77 29.85 29.88 s
        """
    )
    assert judged.claim.kind == "table"
    [m] = judged.claim.measurements
    assert m.samples_base == (31.40, 31.52, 31.38, 31.47, 31.44)
    assert (m.n, m.higher_is_better) == (5, False)
    assert judged.judgement.measurements[0].verdict == "improvement"


def test_latency_and_bandwidth_columns_each_have_their_own_direction() -> None:
    rows = "\n".join(
        f"run{i}   {5.0 + i * 0.01:.3f}   {1000 + i:.1f}   {4.5 + i * 0.01:.3f}   {1080 + i:.1f}"
        for i in range(1, 7)
    )
    [judged] = claims(
        "          vanilla               patched\n"
        "       lat(ms)  bw(MB/s)    lat(ms)  bw(MB/s)\n" + rows + "\n"
    )
    verdicts = {
        m.metric: (m.higher_is_better, j.verdict)
        for m, j in zip(judged.claim.measurements, judged.judgement.measurements, strict=True)
    }
    # The bandwidth gain is an improvement, not a regression read with the latency's direction.
    assert verdicts == {"lat(ms)": (False, "improvement"), "bw(MB/s)": (True, "improvement")}


def test_a_table_of_one_comparison_says_so_in_words() -> None:
    """Not "None of 1 comparisons shows a change": a reply quotes this sentence."""
    [same] = claims(
        """\
        Before: 31.40 31.52 31.38 31.47 31.44 s
        After:  31.45 31.39 31.50 31.41 31.46 s
        """
    )
    [faster] = claims(
        """\
        Before: 31.40 31.52 31.38 31.47 31.44 s
        After:  29.81 29.90 29.77 29.85 29.88 s
        """
    )
    assert same.judgement.summary.startswith("The comparison does not show a change at 5% (")
    assert faster.judgement.summary.startswith("The comparison shows a change at 5% (")


def test_rows_of_counters_over_setups_are_no_kernels_runs() -> None:
    # Kanchana P Sridhar's zswap mTHP tables (linux-mm, 2024): a metric a row, a setup a column.
    body = textwrap.dedent("""\
         elapsed time (sec)         343.70       107.40        84.34
         sys time (sec)             269.30     2,520.13     1,696.20
         memcg.high breaches       443,672      475,074      623,333
         memcg_high          132,743      169,825     148,075     192,744
         memcg_swap_fail     639,067      841,553       2,204       2,215
        """)
    result = analyse_message("s", "a <a@b.c>", body)
    assert [j.claim.kind for j in result.claims if j.claim.kind == "table"] == []


def test_a_kernel_s_runs_with_thousands_grouped() -> None:
    body = textwrap.dedent("""\
        6.8.0-rc1:          132,743 169,825 148,075 192,744
        6.8.0-rc1+series:   139,067 171,553 152,204 195,215
        """)
    [judged] = analyse_message("s", "a <a@b.c>", body).claims
    base, patched = judged.claim.table.columns
    assert base.samples == (132743, 169825, 148075, 192744)
    assert (base.kernel, patched.kernel) == ("6.8.0-rc1", "6.8.0-rc1+series")


def test_a_row_of_a_tool_s_numbers_is_no_kernel_named_by_its_first_number() -> None:
    # autonumabench's detailed output (Srikar Dronamraju, linux-mm, 2013): "numa01 1704.50"
    # is no kernel's name, and "6.8" in it made it look like one.
    body = textwrap.dedent("""\
        numa01 1704.50 248.67 71999.86 207091 1093
        numa02 61.75 93.86 2444.21 10652 6
        numa01 1769.09 262.00 74607.77 226677 1313
        """)
    result = analyse_message("s", "a <a@b.c>", body)
    assert [j.claim.kind for j in result.claims] == []


def test_percentile_rows_under_named_kernels_are_no_kernels_runs() -> None:
    # schbench, quoted by Peter Zijlstra (LKML, 2022): the columns are three kernels, each row a
    # percentile; "50.0000th" was read as a kernel and the others judged against it.
    body = textwrap.dedent("""\
        > Latency percentiles (usec):
        >                 base      base+revert_f3dd3f674555   base+this_patch
        > 50.0000th:         9                            13                 9
        > 75.0000th:        12                            19                12
        > 90.0000th:        15                            22                15
        > 95.0000th:        18                            24                17
        > *99.0000th:       27                            31                24
        > 99.5000th:      3364                            33                27
        > 99.9000th:     12560                            36                30
        """)
    result = analyse_message("s", "a <a@b.c>", body)
    assert [j.claim.kind for j in result.claims if j.claim.kind == "table"] == []


def test_rows_of_setups_before_the_kernels_are_no_runs() -> None:
    # Christoph Lameter's hackbench table (linux-mm, 2010): `Procs` and `NR` are hackbench's
    # arguments; read as kernels, "NR" was a +199900% regression against "Procs".
    body = (
        "Procs\tNR\t\tSLAB\tSLUB\tSLUB+Queuing\n"
        "----------------------------------------------------\n"
        "100\t200000\t\t2741.3\t2764.7\t2231.9\n"
        "100\t20000\t\t279.3\t270.3\t219.0\n"
        "100\t20000\t\t278.0\t273.1\t219.2\n"
        "10 \t20000\t\t34.0\t35.6\t28.8\n"
        "10\t20000\t\t30.3\t35.2\t28.4\n"
        "1\t20000\t\t6.4\t6.7\t6.5\n"
        "1\t20000\t\t6.3\t6.8\t6.5\n"
    )
    result = analyse_message("s", "a <a@b.c>", body)
    assert [j.claim.kind for j in result.claims if j.claim.kind == "table"] == []


def test_a_constant_setup_column_is_left_out_of_the_runs() -> None:
    [judged] = claims(
        """\
        threads   vanilla   patched
        16        12.31     11.70
        16        12.40     11.75
        16        12.28     11.69
        16        12.35     11.72
        16        12.33     11.74
        Times in seconds.
        """
    )
    table = judged.claim.table
    assert [c.kernel for c in table.columns] == ["vanilla", "patched"]
    assert table.columns[0].samples == (12.31, 12.40, 12.28, 12.35, 12.33)


def test_rows_under_headings_that_number_runs_are_still_each_a_kernel_s_runs() -> None:
    # Yicong Yang's unixbench shell1 (linux-mm, 2022)
    [judged] = claims(
        """\
               iter-1      iter-2     iter-3
        w/o  17708.1     17637.1    17630.1
        w    17766.0     17752.3    17861.7
        """
    )
    base, patched = judged.claim.table.columns
    assert (base.kernel, base.samples) == ("w/o", (17708.1, 17637.1, 17630.1))
    assert patched.samples == (17766.0, 17752.3, 17861.7)


def test_unixbench_scores_are_higher_is_better() -> None:
    [judged] = claims(
        """\
        unixbench shell1:
               iter-1      iter-2     iter-3
        w/o  17708.1     17637.1    17630.1
        w    17766.0     17752.3    17861.7
        """
    )
    assert judged.claim.measurements[0].higher_is_better is True


def test_whole_number_runs_that_repeat_are_still_runs() -> None:
    # a kernel's integer results may repeat; only sorted steps with repeats mark setups
    [judged] = claims(
        """\
        Results in ops/s:

        base      v1        v2
         44017     45102     45311
         44102     45190     45298
         44017     45077     45350
         44230     45260     45342
         44101     45199     45307
        """
    )
    assert [c.samples[:3] for c in judged.claim.table.columns] == [
        (44017, 44102, 44017), (45102, 45190, 45077), (45311, 45298, 45350)]


def test_one_kernel_s_metrics_as_columns_are_not_kernels() -> None:
    """Lin Ming's netperf runs (linux-mm, 2009, quoted by Zhang Yanmin): a block of five runs
    of one kernel, its columns `value  cache misses  CPU migrations  ...`, was a table of four
    kernels: "cache misses" +3,775,398% against "value". Columns a hundred times apart in their
    means are not one metric measured on several kernels."""
    result = claims("""\
        2.6.29-rc7-tip
        ---------------
        value           cache misses    CPU migrations  cachemisses/migrations
        5329.71          391094656       1710            228710
        5641.59          239552767       2138            112045
        5580.87          132474745       2172            60992
        5547.19          86911457        2099            41406
        5626.38          196751217       2050            95976
        """)
    assert [m for c in result for m in c.claim.measurements] == []
    # kernels whose runs are a few times apart are still kernels
    rows = "\n".join(f"{10.0 + i * 0.1:.1f}   {31.0 + i * 0.1:.1f}" for i in range(5))
    [judged] = claims(f"Time in seconds:\n\nvanilla  patched\n{rows}\n")
    assert judged.claim.table is not None
