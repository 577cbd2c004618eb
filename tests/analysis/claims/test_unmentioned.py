"""Metrics that moved but are not mentioned (bot/analysis/claims/unmentioned.py)."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message


def test_a_regression_in_a_column_the_text_never_names_is_listed() -> None:
    rows = "\n".join(
        f"run{i}  {20.0 + i * 0.01:.2f}  {3.00 + i * 0.01:.2f}  {16.0 + i * 0.01:.2f}  "
        f"{3.45 + i * 0.01:.2f}" for i in range(1, 7)
    )  # fmt: skip
    body = textwrap.dedent(
        "            vanilla                patched\n"
        "      elapsed(s)  user(s)   elapsed(s)  user(s)\n" + rows + "\n\n"
        "The elapsed time went down by 20%.\n"
    )
    result = analyse_message("s", "a <a@b.c>", body)
    assert [(u.metric, u.verdict) for u in result.unmentioned] == [("user(s)", "regression")]


def test_a_change_the_heading_of_a_side_block_states_is_mentioned() -> None:
    # Kairui Song's swap allocator cover letter: the changes are in the "After:" line's words.
    body = textwrap.dedent("""\
        Before:
        Sys time: 73578.30, Real time: 864.05, User time: 3000.10
        After: (-54.7% sys time, -49.3% real time)
        Sys time: 33314.76, Real time: 437.67, User time: 3400.20
        """)
    result = analyse_message("s", "a <a@b.c>", body)
    assert [u.metric for u in result.unmentioned] == ["User time"]


def test_a_table_shown_whole_keeps_nothing_quiet() -> None:
    # Mel Gorman's compaction cover letter (linux-mm, 2019): the words speak of "latencies" and
    # name no row; the rows are what he shows, not changes beside the ones he wrote about.
    body = textwrap.dedent("""\
        The overall impact on latencies for a 1-socket machine is

        \t\t\t\t      baseline\t\t      patches
        Amean     fault-both-3      5362.80 (   0.00%)     4446.89 *  17.08%*
        Amean     fault-both-18    12057.72 (   0.00%)    19013.48 * -57.69%*

        While there is a glitch at the 18-thread mark, it's known.
        """)
    assert analyse_message("s", "Mel <mel@example.org>", body).unmentioned == ()


def test_a_row_named_by_the_figure_a_sentence_states() -> None:
    # Mel Gorman's per-cpu batch series (linux-mm, 2019): mmtests' kernbench rows are "syst-256"
    # and "elsp-256"; the words give their changes, not their names. "user-256" went unsaid.
    body = textwrap.dedent("""\
        The patch reduces system CPU usage by 69.16% and total build time by 27.06%.

                                  vanilla             patched
        Amean     user-256    13249.50 (   0.00%)    15928.40 * -20.22%*
        Amean     syst-256    14760.30 (   0.00%)     4551.77 *  69.16%*
        Amean     elsp-256      162.42 (   0.00%)      118.46 *  27.06%*
        """)
    result = analyse_message("s", "Mel <mel@example.org>", body)
    assert [u.metric for u in result.unmentioned] == ["user-256"]


def test_a_factor_in_words_names_the_time_it_gives() -> None:
    # Hyeonggon Yoo's SLOB series (linux-mm, 2021): "it's nine times faster" is the elapsed
    # time's 263.96 s -> 28.91 s; the user time's fall is not what he wrote about.
    body = textwrap.dedent("""\
        With 13% increase in memory usage, it's nine times faster than current SLOB.

        current SLOB:
         Performance counter stats for 'hackbench -g 4 -l 10000':
                263.956975106 seconds time elapsed
                 98.213500000 seconds user

        SLOB with segregated free list:
         Performance counter stats for 'hackbench -g 4 -l 10000':
                 28.909188264 seconds time elapsed
                 28.672357000 seconds user
        """)
    result = analyse_message("s", "Hyeonggon Yoo <42.hyeyoo@gmail.com>", body)
    assert [u.metric for u in result.unmentioned] == ["seconds user"]
