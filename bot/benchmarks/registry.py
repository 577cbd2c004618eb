"""The benchmarks lorelab knows by name, as lkp-tests names them, and their definitions.

`benchmark("readtwice", mb=256)` is how a campaign, a suite or a maintainer's command turns a
name and its parameters into a `Benchmark`. Each factory's docstring says what it measures.
A campaign stores `Benchmark.parameters`, so each factory takes them back by the same names:
`benchmark(b.name, **b.parameters)` makes the same benchmark again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from bot.benchmarks.anon_swap import anon_swap
from bot.benchmarks.definition import Benchmark
from bot.benchmarks.hackbench import hackbench
from bot.benchmarks.memcached import memcached, memcached_memcg
from bot.benchmarks.readtwice import readtwice, readtwice_memcg
from bot.benchmarks.simulator import simulator


def reclaim_sim(ops: int = 300_000, delta: float = 0.01) -> Benchmark:
    """The stand-in tree's reclaim simulator, whose "kernel" is a program: the pipeline's own
    test, not a measurement of a real kernel. `ops` per CPU, its `Benchmark.parameters` name."""
    return simulator(ops_per_cpu=ops, delta=delta)


BENCHMARKS: dict[str, Callable[..., Benchmark]] = {
    # Not a reclaim workload: a quick check of the scheduler and of the slab and memcg-charging
    # paths each message's socket buffer goes through, which mm series can slow down too.
    "hackbench": hackbench,
    "reclaim-sim": reclaim_sim,
    "readtwice": readtwice,
    "readtwice-memcg": readtwice_memcg,
    "anon-swap": anon_swap,
    "memcached": memcached,
    "memcached-memcg": memcached_memcg,
}


def benchmark(name: str, **parameters: object) -> Benchmark:
    """The benchmark called `name`, made with `parameters` (each factory's keyword arguments).

    ValueError names the known benchmarks for an unknown name, and the factory's parameters
    for one it does not take.
    """
    try:
        factory = BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"no benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None
    signature = inspect.signature(factory)
    try:
        signature.bind(**parameters)
    except TypeError as error:
        raise ValueError(f"{name}: {error}; its parameters: "
                         f"{', '.join(signature.parameters)}") from None
    return factory(**parameters)
