"""anon-swap: anonymous memory through swap, with the project's own C program (anon-swap.c).

The program maps more anonymous memory than the machine has, writes every page, then reads every
page back and checks it. The write pass measures swap-out (reclaim of the anon LRU under fault
pressure), the read pass swap-in with reclaim still running: the path a patch to
mm/vmscan.c, mm/swap*.c or MGLRU's anon aging changes. A page that reads back wrong fails the run.
It needs swap on the machine under test; without swap, and below the memory size, it measures
page-fault throughput only.

The program is compiled here with `gcc -O2 -static` (it runs in a busybox guest too), once per
version of the source, into a cache directory keyed by the source's hash.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import platformdirs

from bot.benchmarks.definition import Benchmark, Metric

SOURCE = Path(__file__).with_name("anon-swap.c")
THROUGHPUT = "anon-swap.throughput"
DELTA = 0.02
# Static: the binary runs in a busybox guest as well as on a full system.
_CFLAGS = ("-O2", "-static", "-Wall")

# Output line -> (metric, unit, higher_is_better, main); mb_per_s is both passes together.
_FIELDS = {
    "mb_per_s": (THROUGHPUT, "MiB/s", True, True),
    "write_mb_per_s": ("anon-swap.write_throughput", "MiB/s", True, False),
    "verify_mb_per_s": ("anon-swap.verify_throughput", "MiB/s", True, False),
    "seconds": ("anon-swap.seconds", "s", False, False),
}
_LINE = re.compile(r"^([a-z_]+):\s*([0-9]+(?:\.[0-9]+)?)\s*$", re.M)


class BuildError(RuntimeError):
    """anon-swap could not be compiled; the text says what to install or fix."""


def parse_anon_swap(output: str) -> dict[str, float]:
    """{metric: value} from anon-swap's output; ValueError when it printed no `mb_per_s`."""
    fields = {name: float(value) for name, value in _LINE.findall(output)}
    if "mb_per_s" not in fields:
        raise ValueError("no 'mb_per_s:' line in anon-swap's output")
    return {metric: fields[line] for line, (metric, *_rest) in _FIELDS.items() if line in fields}


def default_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("lorelab")) / "benchmarks"


def build(cache_dir: Path | None = None) -> Path:
    """The path of the static anon-swap binary for the current source, compiled if not cached.

    Concurrent builds are safe: each compiles in a temporary directory, then renames into place.
    """
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join(_CFLAGS).encode()).hexdigest()[:16]
    binary = (cache_dir or default_cache_dir()) / f"anon-swap-{key}" / "anon-swap"
    if binary.exists():
        return binary
    gcc = shutil.which("gcc")
    if gcc is None:
        raise BuildError("gcc is not installed: install gcc and libc6-dev (the static C library) "
                         "to build the anon-swap benchmark")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=binary.parent) as work:
        partial = Path(work) / "anon-swap"
        done = subprocess.run([gcc, *_CFLAGS, "-o", str(partial), str(SOURCE)],
                              capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise BuildError(f"gcc could not build {SOURCE.name} (a static binary needs "
                             f"libc6-dev):\n{done.stderr[-2000:]}")
        os.replace(partial, binary)
    return binary


def anon_swap(mb: int = 384, binary: Path | None = None, delta: float = DELTA) -> Benchmark:
    """`anon-swap MB`, built by `build()` unless `binary` is given.

    The default, 384 MB, is above the default 256 MB guest and below its memory plus its 512 MB
    swap disk (bot.config.lab_hosts): every page goes out to swap and comes back once.
    """
    path = (binary or build()).resolve()  # absolute: the qemu runner runs it in a chroot
    return Benchmark(
        name="anon-swap",
        command=(str(path), "{mb}"),
        parameters={"mb": mb},
        parse=parse_anon_swap,
        metrics=tuple(
            Metric(metric, unit, higher_is_better=higher, delta=delta, main=main)
            for metric, unit, higher, main in _FIELDS.values()
        ),
        # How to make the program without lorelab, for a reply's reproduce section.
        extra={"source": SOURCE.name,
               "build": " ".join(["gcc", *_CFLAGS, "-o", "anon-swap", str(SOURCE)])},
    )
