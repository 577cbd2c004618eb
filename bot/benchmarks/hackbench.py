"""hackbench (Debian rt-tests): scheduler and IPC stress; its output ends with `Time: 1.234`.

`hackbench -g GROUPS -l LOOPS` with `-p` (pipes instead of sockets) or `-T` (threads instead of
processes). Lower time is better; lkp-tests calls the metric `hackbench.time`, in seconds.
"""

from __future__ import annotations

import re

from bot.benchmarks.definition import Benchmark, Metric

TIME_METRIC = "hackbench.time"
_SIZE_OPTIONS = {"datasize": "-s", "fds": "-f"}
_TIME = re.compile(r"^Time:\s*([0-9]+(?:\.[0-9]+)?)\s*$", re.M)


def parse_hackbench(output: str) -> dict[str, float]:
    """{"hackbench.time": seconds} from hackbench's output; ValueError when it printed none."""
    times = _TIME.findall(output)
    if not times:
        raise ValueError("no 'Time:' line in hackbench's output")
    # hackbench prints one Time line per run; a second one would mean two runs in one output.
    if len(times) > 1:
        raise ValueError(f"{len(times)} 'Time:' lines in hackbench's output, expected one")
    return {TIME_METRIC: float(times[0])}


def hackbench(groups: int = 4, loops: int = 100, *, pipe: bool = True, threads: bool = False,
              datasize: int | None = None, fds: int | None = None) -> Benchmark:
    """The hackbench definition: `hackbench -g GROUPS -l LOOPS [-p] [-T] [-s DATASIZE]
    [-f FDS]` (hackbench's own message size, 100 bytes, and 20 fds per group when not given).

    `pipe` and `threads` are among the parameters when they differ from the defaults (pipes,
    processes), so that a campaign of sockets or threads makes the same benchmark again; a
    campaign with the defaults keeps the parameters it always had."""
    command = ["hackbench", "-g", "{groups}", "-l", "{loops}"]
    if pipe:
        command.append("-p")
    if threads:
        command.append("-T")
    sizes = {name: value for name, value in (("datasize", datasize), ("fds", fds))
             if value is not None}
    for name in sizes:
        command += [_SIZE_OPTIONS[name], f"{{{name}}}"]
    mode = {**({} if pipe else {"pipe": 0}), **({"threads": 1} if threads else {})}
    return Benchmark(
        name="hackbench",
        command=tuple(command),
        parameters={"groups": groups, "loops": loops, **mode, **sizes},
        parse=parse_hackbench,
        metrics=(Metric(TIME_METRIC, "s", higher_is_better=False),),
    )
