"""Analysis: deciding from raw samples whether a patch changed performance (docs/statistics.md),
and reading the performance claims made in a thread.

`bot.analysis.verdict` is the entry point for measurements (`compare`, `decide_after_pair`,
`judge_metrics`); the other statistics modules each hold one ingredient: rank statistics, robust
per-side summaries, the sequential alpha' calibration, false-discovery-rate control, and the
spread an author's claim needs (`claim_spread`). `claims` finds the claims themselves.
"""
