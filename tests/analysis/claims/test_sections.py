"""Tool output pasted once per kernel (bot/analysis/claims/sections.py)."""

from __future__ import annotations

import math
import textwrap

from bot.analysis.claims import analyse_message

PERF = """\
    Before:

     Performance counter stats for 'hackbench -g 20' (10 runs):

             30,123.45 msec task-clock          #   15.234 CPUs utilized    ( +-  0.45% )
                12,345      context-switches    #    0.410 K/sec    ( +-  3.21% )
            1.97712 +- 0.00891 seconds time elapsed  ( +-  0.45% )

    After:

     Performance counter stats for 'hackbench -g 20' (10 runs):

             29,001.10 msec task-clock          #   15.001 CPUs utilized    ( +-  0.50% )
                11,999      context-switches    #    0.414 K/sec    ( +-  2.90% )
            1.90001 +- 0.00951 seconds time elapsed  ( +-  0.50% )
"""


def test_perf_stat_spread_is_the_error_of_the_mean_times_root_n() -> None:
    result = analyse_message("s", "a <a@b.c>", textwrap.dedent(PERF))
    [claim] = [c for c in result.claims if c.claim.kind == "summary"]
    by_metric = {m.metric: m for m in claim.claim.measurements}
    elapsed = by_metric["seconds time elapsed"]
    assert (elapsed.base, elapsed.patched, elapsed.n) == (1.97712, 1.90001, 10)
    assert math.isclose(elapsed.cv_base_pct, 0.45 * math.sqrt(10))
    assert elapsed.higher_is_better is False
    assert by_metric["task-clock"].base == 30123.45
    assert by_metric["context-switches"].higher_is_better is None  # a counter: neutral
    # Judged with Welch's t from mean, CV and runs: -3.9% at CV 1.4% over 10 runs.
    pairs = zip(claim.claim.measurements, claim.judgement.measurements, strict=True)
    verdicts = {m.metric: j.verdict for m, j in pairs}
    assert verdicts["seconds time elapsed"] == "improvement"
    assert verdicts["context-switches"] == "inconclusive"


KERNBENCH = """\
    kernbench, average of 5 runs:

    6.9.0-vanilla:
    Average Optimal load -j 32 Run (std deviation):
    Elapsed Time 93.340 (0.410)
    User Time 1203.500 (4.100)

    6.9.0-patched:
    Average Optimal load -j 32 Run (std deviation):
    Elapsed Time 72.800 (0.390)
    User Time 1384.000 (5.200)

    The elapsed time is 22% shorter.
"""


def test_kernbench_brackets_are_standard_deviations_and_user_time_is_not_mentioned() -> None:
    result = analyse_message("s", "a <a@b.c>", textwrap.dedent(KERNBENCH))
    [claim] = [c for c in result.claims if c.claim.kind == "summary"]
    elapsed = claim.claim.measurements[0]
    assert (elapsed.metric, elapsed.base, elapsed.n) == ("Elapsed Time", 93.34, 5)
    assert math.isclose(elapsed.cv_base_pct, 100 * 0.41 / 93.34)
    # User time rose 15% beside the 22% shorter elapsed time the author wrote about.
    [unmentioned] = result.unmentioned
    assert unmentioned.metric == "User Time" and unmentioned.verdict == "regression"
    assert round(unmentioned.change_pct) == 15


def test_perf_stat_summary_lines_under_each_kernel_s_name() -> None:
    # David Hildenbrand's autonumabench (linux-mm, 2022): the run count in the command line,
    # each kernel's "time elapsed" line under its name, two benchmarks one after the other.
    body = textwrap.dedent("""\
        I ran autonumabench on a system with 2 NUMA nodes via:
        \tperf stat --null --repeat 10

        numa01:
        \tmm-unstable:   146.88 +- 6.54 seconds time elapsed  ( +-  4.45% )
        \tmm-unstable++: 147.45 +- 13.39 seconds time elapsed  ( +-  9.08% )

        numa02:
        \tmm-unstable:   16.0300 +- 0.0624 seconds time elapsed  ( +-  0.39% )
        \tmm-unstable++: 16.1281 +- 0.0945 seconds time elapsed  ( +-  0.59% )
        """)
    result = analyse_message("s", "David Hildenbrand <david@redhat.com>", body)
    claims = [j for j in result.claims if j.claim.kind == "summary"]
    assert [j.claim.layout for j in claims] == ["perf stat", "perf stat"]
    numa02 = claims[1].claim.measurements[0]
    assert (numa02.base, numa02.patched, numa02.n_base) == (16.03, 16.1281, 10)
    assert (numa02.base_label, numa02.patched_label) == ("mm-unstable", "mm-unstable++")
    assert round(numa02.cv_base_pct, 3) == round(0.39 * 10**0.5, 3)
    assert claims[1].judgement.measurements[0].verdict == "inconclusive"


def _paste(elapsed: float) -> str:
    return (" Performance counter stats for 'insmod ./page_frag_test.ko' (30 runs):\n\n"
            f"             {elapsed:.3f} +- 0.300 seconds time elapsed  ( +-  1.02% )\n\n")


def test_pastes_repeated_under_one_side_are_that_side_s() -> None:
    # Yunsheng Lin's page_frag series (held out): three perf stat runs under "with this
    # patchset:", then the runs without it; no run is compared with another of its own side.
    body = ("the result with this patchset is better than the result without this patchset:\n\n"
            "with this patchset:\n" + _paste(29.341) + _paste(28.683) + _paste(28.730)
            + "without this patchset:\n" + _paste(30.309) + _paste(29.958))
    result = analyse_message("s", "Yunsheng Lin <linyunsheng@huawei.com>", body)
    pairs = [(m.base_label, m.base, m.patched_label, m.patched)
             for j in result.claims if j.claim.layout == "perf stat"
             for m in j.claim.measurements]  # fmt: skip
    assert pairs == [("without this patchset", 30.309, "with this patchset", v)
                     for v in (29.341, 28.683, 28.730)]  # fmt: skip


def test_pastes_of_different_commands_are_not_compared() -> None:
    # Laurent Dufour's SPF series (linux-mm, 2018): counters of ebizzy on two machines, both on
    # the patched kernel; neither is the other's base.
    body = textwrap.dedent("""\
        Here are the performance counter read during a run on a 16 CPUs x86 VM:
         Performance counter stats for './ebizzy -mTt 16':
                 1706379      faults
                 1674599      spf

        And the ones captured during a run on a 80 CPUs Power node:
         Performance counter stats for './ebizzy -mTt 80':
                 1874773      faults
                 1461153      spf
        """)
    result = analyse_message("s", "Laurent Dufour <ldufour@linux.vnet.ibm.com>", body)
    assert [j.claim.layout for j in result.claims] == []


def test_two_pastes_a_kernel_under_a_ruled_heading_each() -> None:
    """Xunlei Pang's count_partial() fix (linux-mm, 2021): each kernel's perf stat run twice
    under `== original, no patched` and `== patched with patch1~4`. The headings were not read,
    so the original kernel's second paste was compared with its first as a "patched" one."""
    result = analyse_message("s", "Xunlei Pang <xlpang@example.org>", textwrap.dedent("""\
        == original, no patched
        Performance counter stats for 'hackbench 20 thread 20000' (10 runs):

              24.536050899 seconds time elapsed                                          ( +-  0.24% )

        Performance counter stats for 'hackbench 20 thread 20000' (10 runs):

              24.588049142 seconds time elapsed                                          ( +-  0.35% )

        == patched with patch1~4
        Performance counter stats for 'hackbench 20 thread 20000' (10 runs):

              24.670892273 seconds time elapsed                                          ( +-  0.29% )

        Performance counter stats for 'hackbench 20 thread 20000' (10 runs):

              24.746755689 seconds time elapsed                                          ( +-  0.21% )
        """))  # noqa: E501
    pairs = [(m.base, m.patched, m.base_label, m.patched_label)
             for c in result.claims for m in c.claim.measurements]  # fmt: skip
    assert pairs == [
        (24.536050899, 24.670892273, "original, no patched", "patched with patch1~4"),
        (24.588049142, 24.746755689, "original, no patched", "patched with patch1~4"),
    ]
