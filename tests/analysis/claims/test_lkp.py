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
