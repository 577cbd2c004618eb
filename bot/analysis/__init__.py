"""Analysis: deciding from raw samples whether a patch changed performance (docs/statistics.md),
and reading the performance claims made in a thread.

`bot.analysis.family` judges a lab campaign's metrics over their pairs, as one family, after
every pair; `bot.analysis.verdict` judges one metric (`Comparison`, `compare` for unpaired
tables, `decide_after_pair`, `judge_metrics`). The other statistics modules each hold one
ingredient: the paired signed-rank statistic (`signed_rank`), unpaired rank statistics
(`ranks`), robust per-side summaries (`robust`), the per-look levels (`calibration`), false
discovery rate control (`fdr`), values that cannot be compared (`screen`), the early-stop
estimate (`early_stop`), and the spread an author's claim needs (`claim_spread`). `claims` finds
the claims themselves.
"""
