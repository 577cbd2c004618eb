"""What machine a benchmark ran on (every figure in the README names it), and lorelab's code
made ready to time as it is installed."""

from __future__ import annotations

import compileall
import os
import platform
from pathlib import Path


def _proc_field(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine() -> dict[str, object]:
    """CPU model, logical cores (and how many this process may use), memory, kernel."""
    memory_kb = _proc_field("/proc/meminfo", "MemTotal")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_gb": round(int(memory_kb.split()[0]) / 2**20, 1) if memory_kb else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def describe(info: dict[str, object] | None = None) -> str:
    info = info or machine()
    return (
        f"{info['cpu']}, {info['cores']} logical cores ({info['usable_cores']} usable), "
        f"{info['memory_gb']} GB, {info['os']}, Python {info['python']}"
    )


def compile_lorelab() -> None:
    """Write the bytecode of lorelab's modules before anything is timed, as `pip install` does.
    Where PYTHONDONTWRITEBYTECODE is set (this machine sets it), every `lorelab` a benchmark
    starts would otherwise compile its modules again (45 ms of a command's CPU), which neither
    an installed lorelab nor the stdlib parser it is compared with pays."""
    root = Path(__file__).resolve().parent.parent
    for package in ("bot", "workers"):
        compileall.compile_dir(root / package, quiet=1)
