"""readtwice: page-cache reads of use-twice pages, after vm-scalability's case-lru-file-readtwice.

scripts/readtwice.sh makes sparse files on the runner's scratch directory (`{scratch}`, on a disk
filesystem: tmpfs pages are shmem, not file pages) and reads each with two dd readers at once.
Reading holes costs no disk I/O, so with more data than memory the run is bound by the page
cache: allocating pages, activating those used twice (the inactive -> active promotion
vm-scalability added the case for, under lru_lock) and reclaiming file pages to make room. It
is the file-LRU counterpart of anon-swap. `readtwice-memcg` runs it in a memcg smaller than the
data, so that memcg reclaim does the work (its counters are in the memcg's memory.stat).
"""

from __future__ import annotations

import re
from pathlib import Path

from bot.benchmarks.definition import Benchmark, Metric

SCRIPT = Path(__file__).with_name("scripts") / "readtwice.sh"
THROUGHPUT = "readtwice.throughput"
SECONDS = "readtwice.seconds"
DELTA = 0.02

_LINE = re.compile(r"^([a-z_]+):\s*([0-9]+(?:\.[0-9]+)?)\s*$", re.M)


def parse_readtwice(output: str) -> dict[str, float]:
    """{"readtwice.throughput": MiB/s, "readtwice.seconds": s}; ValueError without `mb_per_s`
    (the script's "MB" are MiB: it makes files of MB MiB with dd bs=1M)."""
    fields = {name: float(value) for name, value in _LINE.findall(output)}
    if "mb_per_s" not in fields:
        raise ValueError("no 'mb_per_s:' line in readtwice's output")
    values = {THROUGHPUT: fields["mb_per_s"]}
    if "seconds" in fields:
        values[SECONDS] = fields["seconds"]
    return values


def _readtwice(name: str, mb: int, files: int, memcg_max: str | None,
               delta: float) -> Benchmark:
    return Benchmark(
        name=name,
        command=("sh", str(SCRIPT.resolve()), "{scratch}", "{mb}", "{files}"),
        # memcg_max is recorded with the run's parameters: the results mean little without it.
        parameters={"mb": mb, "files": files, **({"memcg_max": memcg_max} if memcg_max else {})},
        parse=parse_readtwice,
        metrics=(
            Metric(THROUGHPUT, "MiB/s", higher_is_better=True, delta=delta),
            Metric(SECONDS, "s", higher_is_better=False, delta=delta, main=False),
        ),
        memcg_max=memcg_max,
    )


def readtwice(mb: int = 512, files: int = 0, delta: float = DELTA) -> Benchmark:
    """`readtwice.sh {scratch} MB FILES` (FILES 0: one per CPU) under global reclaim.

    The default, 512 MB, is twice the default 256 MB guest (bot.config.lab_hosts); sparse files
    take no room on its scratch disk.
    """
    return _readtwice("readtwice", mb, files, None, delta)


def readtwice_memcg(mb: int = 512, files: int = 0, memcg_max: str = "128M",
                    delta: float = DELTA) -> Benchmark:
    """readtwice in a memcg of `memcg_max`: a quarter of the data and half the default guest,
    so that the memcg's own limit, not the guest's memory, triggers reclaim."""
    return _readtwice("readtwice-memcg", mb, files, memcg_max, delta)
