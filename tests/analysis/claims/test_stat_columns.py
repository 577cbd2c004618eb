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
