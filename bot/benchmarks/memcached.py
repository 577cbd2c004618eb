"""memcached under memaslap load: a key-value cache whose memory is anon pages reclaim must age.

scripts/memcached.sh starts memcached on 127.0.0.1, drives it with memaslap (Debian's
`memcaslap`, libmemcached-tools) for a fixed time, stops it and prints memaslap's report. When
memcached's item memory outgrows what the machine (or, in `memcached-memcg`, its memcg) allows,
its slabs are reclaimed to swap and faulted back on gets: request throughput and latency then
show how well reclaim picks cold items over hot ones, the workload behind many MGLRU and
memcg-reclaim series. Throughput is the main metric; latency (mean, microseconds) is recorded.
"""

from __future__ import annotations

import re
from pathlib import Path

from bot.benchmarks.definition import Benchmark, Metric

SCRIPT = Path(__file__).with_name("scripts") / "memcached.sh"
OPS = "memcached.ops"
LATENCY = "memcached.latency"
DELTA = 0.02

# The summary memaslap prints last: "Run time: 3.0s Ops: 321219 TPS: 107064 Net_rate: 433.4M/s".
_SUMMARY = re.compile(r"^Run time: \S+ Ops: \d+ TPS: (\d+)", re.M)
# With -S it also prints, per command type, a block whose "Avg:" line is the mean latency in us.
_TOTAL_AVG = re.compile(
    r"^Total Statistics \(\d+ events\)\n(?:[ \t]+\w+:[^\n]*\n)*?[ \t]+Avg:[ \t]+(\d+)", re.M)


def parse_memaslap(output: str) -> dict[str, float]:
    """{"memcached.ops": ops/s, "memcached.latency": us} from memaslap's report.

    ValueError when the summary line is missing; the latency is left out when memaslap ran
    without its statistics (-S).
    """
    summaries = _SUMMARY.findall(output)
    if len(summaries) != 1:
        raise ValueError(f"{len(summaries)} 'Run time: ... TPS:' lines in memaslap's output, "
                         "expected one")
    values = {OPS: float(summaries[0])}
    latency = _TOTAL_AVG.search(output)
    if latency:
        values[LATENCY] = float(latency.group(1))
    return values


def _memcached(name: str, memory_mb: int, seconds: int, threads: int, concurrency: int,
               value_bytes: int, window: str, port: int, memcg_max: str | None,
               delta: float) -> Benchmark:
    return Benchmark(
        name=name,
        command=("sh", str(SCRIPT.resolve()), "-p", "{port}", "-m", "{memory_mb}",
                 "-t", "{seconds}", "-T", "{threads}", "-c", "{concurrency}",
                 "-X", "{value_bytes}", "-w", "{window}"),
        parameters={"port": port, "memory_mb": memory_mb, "seconds": seconds,
                    "threads": threads, "concurrency": concurrency,
                    "value_bytes": value_bytes, "window": window,
                    # Recorded with the run's parameters: the results mean little without it.
                    **({"memcg_max": memcg_max} if memcg_max else {})},
        parse=parse_memaslap,
        metrics=(
            Metric(OPS, "ops/s", higher_is_better=True, delta=delta),
            Metric(LATENCY, "us", higher_is_better=False, delta=delta, main=False),
        ),
        memcg_max=memcg_max,
    )


def memcached(memory_mb: int = 512, seconds: int = 20, threads: int = 2, concurrency: int = 16,
              value_bytes: int = 4096, window: str = "8k", port: int = 11311,
              delta: float = DELTA) -> Benchmark:
    """memcached with global reclaim: item memory (up to `memory_mb`) beyond the guest's memory.

    The data set is about concurrency * window * value_bytes (16 * 8192 * 4 KiB = 512 MiB by
    default); 10% of requests are sets, so how much of it is written depends on `seconds` and
    the speed of the machine.
    """
    return _memcached("memcached", memory_mb, seconds, threads, concurrency, value_bytes,
                      window, port, None, delta)


def memcached_memcg(memory_mb: int = 512, seconds: int = 20, threads: int = 2,
                    concurrency: int = 16, value_bytes: int = 4096, window: str = "8k",
                    port: int = 11311, memcg_max: str = "64M",
                    delta: float = DELTA) -> Benchmark:
    """memcached in a memcg of `memcg_max`, well under its item memory: memcg reclaim swaps
    its slabs while the rest of the machine has memory to spare."""
    return _memcached("memcached-memcg", memory_mb, seconds, threads, concurrency, value_bytes,
                      window, port, memcg_max, delta)
