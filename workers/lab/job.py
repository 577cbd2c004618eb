"""A lab job: the shell script every runner runs for one boot, and reading back what it wrote.

The same POSIX sh script runs on this host (`local`), inside a QEMU guest (`qemu`) and on a lab
machine over SSH (`ssh`): the runners differ only in how they boot a kernel and move files. Each
boot it records the machine it runs on (workers/lab/machine.py); for each iteration it saves
/proc/vmstat (and the benchmark memcg's memory.stat) before and after the command, the command's
output, stderr and exit status, into a results directory; `collect` turns that directory into
`Sample`s. Iterations within one boot are not independent
observations, so a boot's value of each metric is the median over its iterations.
"""

from __future__ import annotations

import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bot.benchmarks.definition import Benchmark
from bot.benchmarks.vmstat import counter_delta, counter_unit, parse_counters
from workers.lab.machine import MACHINE_SCRIPT
from workers.lab.pairs import Sample

CGROUP_ROOT = "/sys/fs/cgroup"
COMPLETE = "complete"  # written last: its absence means the job was cut short


class RunFailed(RuntimeError):
    """The benchmark exited non-zero, timed out, printed no result, or the boot never ran it."""


def memcg_path(benchmark: Benchmark, root: str = CGROUP_ROOT) -> str:
    return f"{root}/lorelab-{benchmark.name}"


def job_script(benchmark: Benchmark, argv: Sequence[str], results: str, iterations: int = 1,
               *, prefix: Sequence[str] = (), lru: str | None = None) -> str:
    """The script that runs `argv` `iterations` times and leaves its traces in `results`.

    `prefix` goes before the command but inside the memcg (e.g. `chroot /host`); the counters
    are read outside it. With `benchmark.memcg_max` set the command runs in a memcg of that
    size, made fresh for the job. `lru` "mglru" or "classic" switches the booted kernel's LRU
    first (bot.runs.lru; never on a local host's own kernel); the machine facts record which ran.
    """
    command = shlex.join([*prefix, *argv])
    r = shlex.quote(results)
    lines = [
        "#!/bin/sh",
        f"# lorelab job: {benchmark.name}",
        f"R={r}",
        'mkdir -p "$R"',
        'cat /proc/sys/kernel/random/boot_id > "$R/boot_id" 2>/dev/null ||'
        ' echo unknown > "$R/boot_id"',
        *_lru_lines(lru),
        MACHINE_SCRIPT.rstrip("\n"),
    ]
    run = f'{command} > "$R/output.$i" 2> "$R/stderr.$i"'
    if benchmark.memcg_max is not None:
        cg = shlex.quote(memcg_path(benchmark))
        lines += [
            f"CG={cg}",
            # Elsewhere (cgroup v1, a tmpfs there) mkdir and echo would make plain files and
            # the benchmark would run with no limit, its results looking valid.
            f'grep -qw memory {CGROUP_ROOT}/cgroup.controllers 2>/dev/null || {{ echo "memcg_max '
            f'needs {CGROUP_ROOT} to be a cgroup2 mount with the memory controller" > "$R/error";'
            ' exit 1; }',
            # A memcg left by an earlier job would carry its charges and counters over.
            'rmdir "$CG" 2>/dev/null',
            f'echo +memory > {CGROUP_ROOT}/cgroup.subtree_control 2>/dev/null',
            'mkdir "$CG" || { echo "cannot make the memcg $CG" > "$R/error"; exit 1; }',
            f'echo {shlex.quote(benchmark.memcg_max)} > "$CG/memory.max" || '
            '{ echo "cannot set memory.max in $CG" > "$R/error"; exit 1; }',
        ]
        run = (f"sh -c 'echo $$ > \"$0/cgroup.procs\" && exec \"$@\"' \"$CG\" {command} "
               f'> "$R/output.$i" 2> "$R/stderr.$i"')
    lines += [
        "i=0",
        f"while [ $i -lt {int(iterations)} ]; do",
        '  cat /proc/vmstat > "$R/vmstat.before.$i" 2>/dev/null',
    ]
    if benchmark.memcg_max is not None:
        lines.append('  cat "$CG/memory.stat" > "$R/memcg.before.$i"')
    lines += [
        f"  {run}",
        '  echo $? > "$R/rc.$i"',
        '  cat /proc/vmstat > "$R/vmstat.after.$i" 2>/dev/null',
    ]
    if benchmark.memcg_max is not None:
        lines.append('  cat "$CG/memory.stat" > "$R/memcg.after.$i"')
    lines += [
        "  i=$((i + 1))",
        "done",
    ]
    if benchmark.memcg_max is not None:
        lines.append('rmdir "$CG" 2>/dev/null')
    lines += ['echo ok > "$R/complete"', ""]
    return "\n".join(lines)


LRU_GEN = "/sys/kernel/mm/lru_gen/enabled"


def _lru_lines(lru: str | None) -> list[str]:
    if lru is None:
        return []
    if lru == "mglru":
        # A series that changes lru_gen code is not tested by a kernel that cannot run it.
        return [f'[ -w {LRU_GEN} ] || {{ echo "MGLRU was asked for, but this kernel has no '
                f'{LRU_GEN} (CONFIG_LRU_GEN is off)" > "$R/error"; exit 1; }}',
                f'echo y > {LRU_GEN} || {{ echo "cannot enable MGLRU" > "$R/error"; exit 1; }}']
    if lru == "classic":
        return [f'[ -w {LRU_GEN} ] && echo n > {LRU_GEN}']
    raise ValueError(f"lru must be mglru or classic, not {lru!r}")


@dataclass(frozen=True)
class BootInfo:
    """Where a boot ran, recorded with each of its samples."""

    kernel: str  # "A" or "B"
    pair_index: int
    position: int
    host: str
    accel: str  # kvm, tcg, bare (ssh: a real machine) or none (local: no boot)
    time: datetime


def collect(benchmark: Benchmark, results: Path, iterations: int, boot: BootInfo,
            console: str = "") -> tuple[Sample, ...]:
    """The samples of one boot from the files its job wrote; RunFailed says what went wrong.

    `console` (a guest's serial output) is quoted in errors, where it usually says why.
    """
    if (results / "error").exists():
        raise RunFailed(f"{benchmark.name}: {_read(results / 'error').strip()}")
    if not (results / COMPLETE).exists():
        tail = console[-2000:] if console else _tail_of(results)
        raise RunFailed(f"{benchmark.name}: the job did not finish; last output:\n{tail}")
    runs: list[dict[str, float]] = []
    for i in range(iterations):
        output = _read(results / f"output.{i}")
        rc = _read(results / f"rc.{i}").strip()
        if rc != "0":
            stderr = _read(results / f"stderr.{i}")[-2000:]
            raise RunFailed(f"{benchmark.name} exited {rc or '?'}: {stderr or output[-2000:]}")
        try:
            values = dict(benchmark.parse(output))
        except ValueError as error:
            raise RunFailed(f"{benchmark.name}: {error}; output:\n{output[-2000:]}") from None
        for source, prefix in (("vmstat", "proc-vmstat"), ("memcg", "memcg")):
            before, after = results / f"{source}.before.{i}", results / f"{source}.after.{i}"
            if not (before.exists() and after.exists()):
                continue
            old, new = parse_counters(_read(before)), parse_counters(_read(after))
            for name, change in counter_delta(old, new, benchmark.reclaim_counters).items():
                values[f"{prefix}.{name}"] = float(change)
        runs.append(values)
    boot_id = _read(results / "boot_id").strip() or "unknown"
    # A metric missing from some iterations is summarised over those that have it.
    names = list(dict.fromkeys(name for run in runs for name in run))
    return tuple(
        Sample(metric=name, value=float(statistics.median(r[name] for r in runs if name in r)),
               unit=_unit(benchmark, name), kernel=boot.kernel, pair_index=boot.pair_index,
               position=boot.position, host=boot.host, boot_id=boot_id, accel=boot.accel,
               time=boot.time)
        for name in names
    )


def _unit(benchmark: Benchmark, name: str) -> str:
    if name.startswith(("proc-vmstat.", "memcg.")):
        return counter_unit(name.split(".", 1)[1])
    try:
        return benchmark.metric(name).unit
    except KeyError:
        return ""


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _tail_of(results: Path) -> str:
    stderr = sorted(results.glob("stderr.*"))
    return _read(stderr[-1])[-2000:] if stderr else "(nothing)"
