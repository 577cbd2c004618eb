"""A tool's own result lines under each kernel's heading (bot/analysis/claims/tool_runs.py)."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message


def judged(body: str):
    return analyse_message("s", "a <a@b.c>", textwrap.dedent(body)).claims


def test_hackbench_runs_with_the_tool_s_banner_between_them() -> None:
    # Imran Khan, "mm/memcontrol: Increase threshold for draining per-cpu stocked bytes"
    # (linux-mm, 2021): read as nothing but the "about 15%" of the sentence below it
    run = textwrap.indent(textwrap.dedent("""\
        # hackbench process 10 1000 -s 100000
        Running in process mode with 10 groups using 40 file descriptors
        each (== 400 tasks)
        Each sender will pass 100 messages of 100000 bytes
        Time: {}
        """), "    ")
    body = (
        "Below are the hackbench numbers with and without this change on\nv5.10.0-rc7.\n\n"
        "Without this change:\n" + run.format("4.401") + "\n" + run.format("4.470") + "\n"
        "With this change:\n" + run.format("3.782") + "\n" + run.format("3.827") + "\n"
        "As can be seen the change gives an improvement of about 15% in hackbench\nnumbers.\n"
    )
    claims = analyse_message("s", "a <a@b.c>", body).claims
    [m] = claims[0].claim.measurements
    assert (m.metric, m.samples_base, m.samples_patched) == ("Time", (4.401, 4.470), (3.782, 3.827))
    assert (m.unit, m.higher_is_better, claims[0].claim.layout) == ("s", False, "tool runs")
    # two runs a side: the rank test cannot tell, and says why
    assert claims[0].judgement.measurements[0].verdict == "inconclusive"
    assert claims[1].claim.kind == "percentage"


def test_gnu_time_one_liners_under_numbered_headings() -> None:
    # Kirill Tkhai, "mm: Clear shrinker bit if there are no objects related to memcg" (2018)
    [claim] = judged("""\
        1)Before:
        0.00user 13.78system 0:13.78elapsed 99%CPU
        0.00user 5.59system 0:05.60elapsed 99%CPU
        0.00user 5.48system 0:05.48elapsed 99%CPU
        0.00user 8.35system 0:08.35elapsed 99%CPU
        0.00user 8.34system 0:08.35elapsed 99%CPU

        2)After
        0.00user 1.10system 0:01.10elapsed 99%CPU
        0.00user 0.00system 0:00.01elapsed 64%CPU
        0.00user 0.01system 0:00.01elapsed 82%CPU
        0.00user 0.00system 0:00.01elapsed 64%CPU
        0.00user 0.01system 0:00.01elapsed 82%CPU

        The results show the performance increases at least in 548 times.
        """)
    by_metric = dict(zip((m.metric for m in claim.claim.measurements),
                         claim.judgement.measurements, strict=True))
    elapsed = next(m for m in claim.claim.measurements if m.metric == "elapsed")
    assert elapsed.samples_base == (13.78, 5.60, 5.48, 8.35, 8.35)
    assert by_metric["elapsed"].verdict == "improvement"
    # runs of 0.00 have no ratio: no interval below -100% from their mean and spread
    assert by_metric["system"].status == "no-data"
    assert "cannot be compared as ratios" in by_metric["system"].summary


def test_time_builtin_under_sentences_that_name_one_side() -> None:
    # Alex Thorlton, "Increase locking granularity in THP page fault code" (linux-mm, 2013)
    [claim] = judged("""\
        Here are the timings from
        this test on 3.11-rc7, clean, THP on:

        real\t22m50.904s
        user\t15m26.072s
        sys\t11430m19.120s

        And here are the timings with my modified kernel, THP on:

        real\t0m37.018s
        user\t21m39.164s
        sys\t155m9.132s

        As you can see, we get a huge performance boost by locking a more
        """)
    values = {m.metric: (m.base, m.patched) for m in claim.claim.measurements}
    assert values == {"real": (1370.904, 37.018), "user": (926.072, 1299.164),
                      "sys": (685819.12, 9309.132)}


def test_a_sentence_naming_both_sides_is_no_heading() -> None:
    assert judged("""\
        Numbers with and without the patch:
        Time: 4.401
        Time: 4.470
        """) == ()


def test_funclatency_summaries_under_headings_with_a_remark() -> None:
    # Kuniyuki Iwashima, "af_unix: Try to run GC async." (netdev, 2023)
    [claim] = judged("""\
        Without series: the sane sendmsg() needs to wait gc unreasonably.

          $ sudo /usr/share/bcc/tools/funclatency -p 11165 unix_dgram_sendmsg
          Tracing 1 functions for "unix_dgram_sendmsg"... Hit Ctrl-C to end.
          ^C
               nsecs                         : count     distribution
          [...]
             1048576 -> 2097151    : 3881     |****************************************|
             2097152 -> 4194303    : 214      |**                                      |

          avg = 1825567 nsecs, total: 7477526027 nsecs, count: 4096

        With series: the sane sendmsg() can finish much faster.

          $ sudo /usr/share/bcc/tools/funclatency -p 8702  unix_dgram_sendmsg
               nsecs                         : count     distribution
                 256 -> 511        : 4092     |****************************************|

          avg = 410 nsecs, total: 1680510 nsecs, count: 4096

        Signed-off-by: Kuniyuki Iwashima <kuniyu@amazon.com>
        """)
    [m] = claim.claim.measurements
    assert (m.metric, m.base, m.patched, m.unit, m.n) == ("avg latency", 1825567, 410, "ns", None)
    assert m.higher_is_better is False


def test_a_sentence_without_commas_that_names_one_side() -> None:
    # taken for a short label, whose first word ("And") names no side, it was no heading
    [claim] = judged("""\
        Here are the timings on 6.9-rc7, vanilla:

        real\t1m24.526s

        And the timings with the patched kernel:

        real\t1m18.058s
        """)
    [m] = claim.claim.measurements
    assert (m.base, round(m.patched, 3)) == (84.526, 78.058)
    assert m.patched_label == "And the timings with the patched kernel"


def test_perf_stat_summaries_with_the_commands_repeat_count() -> None:
    # Jiri Olsa, "bpf: Speed up symbol resolving in kprobe multi link" (bpf, 2022)
    said, claim = judged("""\
        It's about 11 times faster with the patches:

        Before:

          # perf stat -r 5 -e cycles ./src/bpftrace -e 'kprobe:x* {  } i:ms:1 { exit(); }'
          ...
          6.5681 +- 0.0225 seconds time elapsed  ( +-  0.34% )

        After:

          # perf stat -r 5 -e cycles ./src/bpftrace -e 'kprobe:x* {  } i:ms:1 { exit(); }'
          ...
          0.5661 +- 0.0275 seconds time elapsed  ( +-  4.85% )
        """)
    [m] = claim.claim.measurements
    assert (m.base, m.patched, m.n, m.spread_source) == (6.5681, 0.5661, 5, "perf stat +- (sem)")
    assert round(m.cv_base_pct, 3) == round(0.34 * 5 ** 0.5, 3)
    assert claim.judgement.measurements[0].verdict == "improvement"
    assert said.claim.change.low_pct == 1000  # "11 times faster", in the words above
