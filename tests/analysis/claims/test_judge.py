"""A claim's judgement as a reply quotes it (bot/analysis/claims/judge.py)."""

from __future__ import annotations

from bot.analysis.claims import analyse_message
from bot.analysis.claims.judge import LISTED

NAMES = ("latency", "bandwidth", "iops", "throughput", "ops", "requests", "transactions", "queries")


def test_a_summary_that_names_some_changed_metrics_counts_the_others() -> None:
    """Eight metrics changed: six are named and the sentence says two more did, rather than
    ending as if the six were all."""
    base = "\n".join(f"  {n}: {100 + i}.0 ± 1.0 us (n=20)" for i, n in enumerate(NAMES))
    patched = "\n".join(f"  {n}: {90 + i}.0 ± 1.0 us (n=20)" for i, n in enumerate(NAMES))
    text = f"Numbers from 20 runs each:\n\nvanilla:\n{base}\n\npatched:\n{patched}\n"
    [judged] = analyse_message("s", "a <a@b.c>", text).claims
    summary = judged.judgement.summary
    assert summary.startswith("8 of 8 metrics judged from mean, spread and runs show a change")
    assert summary.count(" improvement") == LISTED == 6
    assert summary.endswith("; and 2 more."), summary
