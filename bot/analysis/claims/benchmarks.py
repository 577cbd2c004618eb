"""Benchmarks named in a message, and whether a larger number of theirs is better.

The names are the ones lkp-tests / mmtests use where there is one. Whether higher is better
comes from the unit when one is written ("Ops/sec", "seconds"), else from what the benchmark is
known to report; it decides whether a change is an improvement or a regression.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.analysis.claims.text import Block

# --------------------------------------------------------------------------------------------
# Names

# name -> pattern
_BENCHMARKS: dict[str, str] = {
    "memtier_benchmark": r"\bmemtier[_-]benchmark\b|\bmemtier\b",
    "memcached": r"\bmemcached\b",
    "hackbench": r"\bhackbench\b",
    "dd": r"(?<![\w-])['\"]?dd['\"]?(?![\w-])",
    "fio": r"\bfio\b",
    "will-it-scale": r"\bwill-it-scale\b",
    "vm-scalability": r"\bvm-scalability\b",
    "stress-ng": r"\bstress-ng\b",
    "sysbench": r"\bsysbench\b",
    "kernbench": r"\bkernbench\b",
    "mmtests": r"\bmmtests\b",
    "aim": r"\baim(?=\s+test)",
    "aim7": r"\baim7\b",
    "aim9": r"\baim9\b",
    "pgbench": r"\bpgbench\b",
    "redis-benchmark": r"\bredis-benchmark\b",
    "ebizzy": r"\bebizzy\b",
    "netperf": r"\bnetperf\b",
    "lmbench": r"\blmbench\b",
    "unixbench": r"\bunixbench\b",
    "specjbb": r"\bspecjbb\w*\b",
    "tbench": r"\btbench\b",
    "dbench": r"\bdbench\b",
    "perf-bench": r"\bperf bench\b",
    "usemem": r"\busemem\b",
    "mongodb": r"\bmongodb\b",
    "ycsb": r"\bycsb\b",
    "schbench": r"\bschbench\b",
    "pmbench": r"\bpmbench\b",
    "stream": r"\bSTREAM\b",
    "iozone": r"\biozone\b",
}
_BENCHMARK_RES = {
    name: re.compile(p, 0 if name == "stream" else re.IGNORECASE) for name, p in _BENCHMARKS.items()
}
# vm-scalability names its cases case-<name>; the case is what tells a reader what ran.
VM_SCALABILITY_CASE = re.compile(r"\bcase-[a-z0-9][a-z0-9-]*[a-z0-9]\b")


def benchmarks_in(text: str) -> list[str]:
    """Benchmarks named in the text, in a fixed order, vm-scalability cases included."""
    names = [name for name, pattern in _BENCHMARK_RES.items() if pattern.search(text)]
    cases = sorted(set(VM_SCALABILITY_CASE.findall(text)))
    if cases and "vm-scalability" not in names:
        names.append("vm-scalability")
    return names + cases


def block_benchmarks(block: Block) -> list[str]:
    """Benchmarks named anywhere in the block."""
    return benchmarks_in("\n".join(line.text for line in block.lines))


# --------------------------------------------------------------------------------------------
# Units and direction

_LOWER_UNITS = re.compile(
    r"^(?:s|sec|secs|seconds?|ms|msecs?|us|\u00b5s|\u03bcs|usecs?|ns|nsecs?|minutes?|min|cycles|"
    r"sec/op|s/op|ns/op|us/op|ms/op|latency)$",
    re.IGNORECASE,
)
_HIGHER_UNITS = re.compile(
    r"^(?:ops|ops/s|ops/sec|op/s|iops|[kmgt]i?b/s|[kmgt]i?b/sec|bytes/s(?:ec)?|[kmgt]?bps|req/s|"
    r"reqs/s|rps|tps|qps|"
    r"transactions/s(?:ec)?|bogo-?ops(?:/s)?|pages/s(?:ec)?|score|throughput|bops|jops|"
    r"records/s(?:ec)?|ops/min|jobs/min|jobs-per-min|per\s+sec(?:ond)?)$",
    re.IGNORECASE,
)
# What a bare number from these benchmarks measures when the message names no unit.
_BENCHMARK_HIGHER_IS_BETTER = {
    "hackbench": False,  # seconds
    "kernbench": False,  # elapsed seconds
    "schbench": False,  # latency
    "memtier_benchmark": True,  # Ops/sec
    "will-it-scale": True,  # operations
    "vm-scalability": True,  # throughput
    "redis-benchmark": True,
    "pgbench": True,
    "sysbench": True,
    "ebizzy": True,  # records/s
    "dd": True,  # bytes/s
    "iozone": True,  # KB/s (its -R report prints no unit)
    "unixbench": True,  # an index score, or loops per minute
}
# A unit word near a table ("hackbench time in seconds"); "per second" is a rate ("records
# per second", Laurent Dufour's ebizzy), not a time.
UNIT_WORDS = re.compile(
    r"\b(per\s+sec(?:ond)?|seconds?|secs?|msecs?|usecs?|ops/s(?:ec)?|[kmgt]i?b/s|iops|latency|"
    r"throughput)\b",
    re.IGNORECASE,
)


def higher_is_better(unit: str | None, benchmarks: Iterable[str] = ()) -> bool | None:
    """Whether a larger number is better: from the unit, else the benchmark; None if unknown."""
    if unit:
        word = unit.strip("()[]").strip()
        if _LOWER_UNITS.match(word) or word.lower() == "latency":
            return False
        if _HIGHER_UNITS.match(word):
            return True
    known = _BENCHMARK_HIGHER_IS_BETTER
    directions = {known[b] for b in benchmarks if b in known}
    return directions.pop() if len(directions) == 1 else None


# Metric names (lkp "will-it-scale.per_process_ops", mmtests "elsp-256", perf stat "seconds time
# elapsed", kernbench "Elapsed Time") say what they measure. Monitors' counters (vmstat, meminfo,
# perf-sched, ...) are neutral: a change in them is neither better nor worse unless the text says.
_NEUTRAL_NAME = re.compile(
    r"^(?:vmstat|meminfo|proc-vmstat|numa-\w+|perf-sched|perf-stat|perf-profile|sched_debug|"
    r"mpstat|turbostat|cpuidle|interrupts|softirqs|slabinfo|iostat|latency_stats|pagetypeinfo|"
    r"buddyinfo|lock_stat|boot-\w+|uptime)\.|(?:context.?switch|page.?faults|migrations|"
    r"latency_\d+[mun]?s%|"
    r"_switches|percent_of_cpu|maximum_resident|nr_\w+|^sleeps$|^percent cpu$)",
    re.IGNORECASE,
)
_LOWER_NAME = re.compile(
    r"latenc|\blat\b|clat|elapsed|\belsp|\bsyst?\b|_time\b|\btime\b|duration|wall|runtime|"
    r"\bamean\b|msec|usec|task-clock|\bcycles\b|\bsecs?\b|memory (?:usage|footprint|consumption)|"
    r"cpu (?:usage|utili[sz]ation|cost)|contention|overhead|slowdown|penalt|regression|degradation",
    re.IGNORECASE,
)
_HIGHER_NAME = re.compile(
    r"throughput|\btput|_ops\b|\bops\b|ops_per_sec|bogo|bandwidth|\bbw\b|iops|score|"
    r"jobs.per.min|\bworkload\b|\btps\b|\brps\b|records|transactions|\bmedian\b|per_sec|"
    r"\bprocesses\b|\bthreads\b|\bperformance\b|\w/s(?:ec)?\b",
    re.IGNORECASE,
)


def metric_higher_is_better(
    name: str, unit: str | None = None, benchmarks: Iterable[str] = ()
) -> bool | None:
    """Whether a larger value of a named metric is better: from its unit, else its name; counters
    of monitors are neutral (None); else the benchmark's usual unit."""
    from_unit = higher_is_better(unit) if unit else None
    if from_unit is not None:
        return from_unit
    if _NEUTRAL_NAME.search(name):
        return None
    if _HIGHER_NAME.search(name):
        return True
    if _LOWER_NAME.search(name.replace(".", " ")):
        return False
    return higher_is_better(None, benchmarks)


def named_before(text: str, end: int) -> bool | None:
    """Whether the quantity named last before position `end` of `text` is better higher: in
    "16 Threads: tail latency drops by 12%" the latency, not the threads."""
    last: tuple[int, bool] | None = None
    for pattern, higher in ((_HIGHER_NAME, True), (_LOWER_NAME, False)):
        for match in pattern.finditer(text, 0, end):
            if last is None or match.start() > last[0]:
                last = (match.start(), higher)
    return last[1] if last is not None else None


def change_direction(change_pct: float, higher: bool | None) -> str | None:
    """Whether a signed change of a number is an "improvement" or a "regression"; None when the
    metric's direction is unknown or nothing changed."""
    if higher is None or not change_pct:
        return None
    return "improvement" if (change_pct > 0) == higher else "regression"
