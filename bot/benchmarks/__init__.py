"""Benchmark definitions: what to run, how to parse its output, and how to judge each metric."""
