"""The stand-in reclaim simulator of bot/demo/simtree.py: its "kernel" is a program to run.

It prints `name: value` lines: `cpus`, its own reclaim event counters (`pgfault`, `pgscan`,
`pgsteal`, `pgactivate`, `pgdeactivate`), `seconds` and `ops/s`. Throughput is the main metric
(higher is better); the rest are recorded beside it.
"""

from __future__ import annotations

import re

from bot.benchmarks.definition import Benchmark, Metric

THROUGHPUT = "reclaim-sim.throughput"
SECONDS = "reclaim-sim.seconds"
_LINE = re.compile(r"^([A-Za-z_/]+):\s*([0-9]+(?:\.[0-9]+)?)\s*$", re.M)
_COUNTERS = ("pgfault", "pgscan", "pgsteal", "pgactivate", "pgdeactivate")


def parse_simulator(output: str) -> dict[str, float]:
    """{metric: value} from the simulator's output; ValueError when it printed no `ops/s`."""
    fields = {name: float(value) for name, value in _LINE.findall(output)}
    if "ops/s" not in fields:
        raise ValueError("no 'ops/s:' line in the simulator's output")
    values = {THROUGHPUT: fields["ops/s"]}
    if "seconds" in fields:
        values[SECONDS] = fields["seconds"]
    for counter in _COUNTERS:
        if counter in fields:
            values[f"reclaim-sim.{counter}"] = fields[counter]
    return values


def simulator(ops_per_cpu: int = 300_000, delta: float = 0.01) -> Benchmark:
    """The simulator as a benchmark: `{kernel} OPS`, where the runner fills in `kernel`, the
    path of a built `arch/x86/boot/bzImage`."""
    return Benchmark(
        name="reclaim-sim",
        command=("{kernel}", "{ops}"),
        parameters={"ops": ops_per_cpu},
        parse=parse_simulator,
        # Its "kernel" is a program with its own counters: the host's /proc/vmstat says nothing.
        reclaim_counters=(),
        metrics=(
            Metric(THROUGHPUT, "ops/s", higher_is_better=True, delta=delta),
            Metric(SECONDS, "s", higher_is_better=False, delta=delta, main=False),
            *(
                Metric(f"reclaim-sim.{c}", "events", higher_is_better=False, main=False)
                for c in _COUNTERS
            ),
        ),
    )
