"""The author's figure beside lorelab's measurement (bot/report/compose/claim_view.py, item 4).

Kept with the claims tests: the function reads the claims' shapes, and the reply layout that
calls it is tested with the reply (tests/report)."""

from __future__ import annotations

from bot.analysis.claims import analyse_message
from bot.analysis.claims.input import read_message_text
from bot.analysis.verdict import compare
from bot.demo import SEED_DIR
from bot.report.compose.claim_view import claims_beside_measurements

BASE = [44000.0 + 37.0 * ((i * 7) % 12 - 6) for i in range(12)]


def seed_claims(name: str):
    message = read_message_text((SEED_DIR / name).read_bytes())
    return analyse_message(message.subject, message.sender, message.body).claims


def test_the_seed_claim_beside_a_smaller_measured_change() -> None:
    measured = compare(BASE, [x * 1.004 for x in BASE], higher_is_better=True)
    [line] = claims_beside_measurements(
        seed_claims("lru_gen-batch-counters-reply.eml"), {"memtier_benchmark.ops_per_sec": measured}
    )
    assert line.startswith(
        "memtier_benchmark.ops_per_sec: author +1.5% (over 18 runs a side, no spread); "
        "lorelab +0.4% ["
    )
    assert line.endswith("the author's figure is outside lorelab's interval")


def test_a_claim_in_ops_is_turned_into_the_measured_seconds() -> None:
    # +1.5% of Ops/sec is -1.5% of a time per operation.
    measured = compare(BASE, [x / 1.015 for x in BASE], higher_is_better=False)
    [line] = claims_beside_measurements(
        seed_claims("lru_gen-batch-counters-reply.eml"), {"memtier_benchmark.sec_per_op": measured}
    )
    assert "author -1.5%" in line and line.endswith("inside lorelab's interval")


def test_table_columns_use_the_estimate_their_verdict_rests_on_and_unmatched_give_nothing() -> None:
    claims = seed_claims("vmscan-bailout-hackbench-reply.txt")
    times = [80.0 + 0.3 * i for i in range(10)]
    measured = compare(times, [t * 0.97 for t in times], higher_is_better=False)
    lines = claims_beside_measurements(claims, {"hackbench.time": measured})
    bail_135 = next(line for line in lines if "(bail-out 135)" in line)
    assert "author +3.4%" in bail_135  # Hodges-Lehmann, not the +18.75% mean of two slow runs
    assert claims_beside_measurements(claims, {"fio.read_iops": measured}) == []
