"""Tables of statistics columns, kernels as rows, a group a case
(bot/analysis/claims/stat_columns.py). The table is from a real linux-mm mail."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message

# Sudarsan Mahendran's SLUB sheaves benchmarks on AMD Turin (linux-mm, 2025), two groups of 18.
SHEAVES = """\
    Number of runs : 15
    Direction      : + is good

    |            | MIN        | MAX        | MEAN       | MEDIAN     | STDDEV     |
    |:-----------|:-----------|:-----------|:-----------|:-----------|:-----------|
    | brk1_8_processes
    | BASE       | 7,667,220  | 7,705,767  | 7,682,782  | 7,676,211  | 12,733     |
    | TEST       | 9,477,395  | 10,053,058 | 9,878,753  | 9,959,360  | 182,014    |
    | %          | +23.61%    | +30.46%    | +28.58%    | +29.74%    | +1,329.46% |
    | mmap1_128_processes
    | BASE       | 30,303,429 | 30,736,686 | 30,466,107 | 30,343,821 | 174,985    |
    | TEST       | 9,749,426  | 9,893,331  | 9,823,701  | 9,857,157  | 52,125     |
    | %          | -67.83%    | -67.81%    | -67.76%    | -67.52%    | -70.21%    |
"""


def test_each_group_is_its_case_s_mean_with_its_spread_and_runs() -> None:
    result = analyse_message("s", "Sudarsan Mahendran <s@m.org>", textwrap.dedent(SHEAVES))
    [judged] = result.claims
    brk, mmap = judged.claim.measurements
    assert (brk.metric, brk.base, brk.patched, brk.stated_pct) == (
        "brk1_8_processes", 7682782, 9878753, 28.58)
    assert (brk.n_base, brk.higher_is_better) == (15, True)
    assert round(brk.cv_patched_pct, 3) == round(100 * 182014 / 9878753, 3)
    assert (brk.base_label, brk.patched_label) == ("BASE", "TEST")
    verdicts = [m.verdict for m in judged.judgement.measurements]
    assert verdicts == ["improvement", "regression"]


def test_no_row_naming_the_kernel_before_is_no_comparison() -> None:
    body = textwrap.dedent(SHEAVES).replace("BASE", "AMD").replace("TEST", "ARM")
    result = analyse_message("s", "a <a@b.c>", body)
    assert all(j.claim.layout != "table" for j in result.claims)


def test_labels_before_the_pipes_and_an_unlabelled_change_row() -> None:
    # Yosry Ahmed's memcg flush threshold runs (linux-mm, 2023)
    body = textwrap.dedent("""\
        I ran the page_fault tests for 10 runs on a machine with 256 cpus:

                       LABEL            |     MEAN    |   MEDIAN    |   STDDEV   |
        ------------------------------+-------------+-------------+-------------
          page_fault2_per_thread_ops  |             |             |            |
          (A) base                    | 171046.473  | 170776.000  | 1509.679   |
          (B) patched                 | 166626.327  | 166406.000  | 768.753    |
                                      | -2.58%      | -2.56%      |            |
          page_fault3_scalability     |             |             |
          (A) base                    | 0.60369     | 0.60072     | 0.0083029  |
          (B) patched                 | 0.61733     | 0.61544     | 0.009855   |
                                      | +2.26%      | +2.45%      |            |
        """)
    [judged] = analyse_message("s", "Yosry Ahmed <yosryahmed@google.com>", body).claims
    threads, scalability = judged.claim.measurements
    assert (threads.metric, threads.base, threads.patched, threads.stated_pct) == (
        "page_fault2_per_thread_ops", 171046.473, 166626.327, -2.58)
    assert (threads.n_base, threads.base_label, threads.patched_label) == (
        10, "(A) base", "(B) patched")
    assert judged.judgement.measurements[0].verdict == "regression"
    assert scalability.stated_pct == 2.26
