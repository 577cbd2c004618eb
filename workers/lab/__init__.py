"""Lab runners and the interleaved A/B pair loop that drives them (docs/statistics.md)."""
