"""How long the test suite takes: the fast loop as the README runs it (`pytest -m "not slow"
-n auto`, on every core), the same loop in one process (`-n 0`, the baseline of the same run)
and, with --ci, the whole CI command in a fresh clone of HEAD, each with the load average
before and after.

    python bench/suite.py [--ci] [--json]

Targets (issue "one run lifecycle"): the fast loop under 90 s and the whole CI under 5 minutes
on the development machine when it is quiet. The machine is shared: read the load averages
beside the times, and run again when they were high.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.machine import machine  # noqa: E402


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    """Wall and CPU seconds of `command` (and its children), with the load around it."""
    before = os.getloadavg()[0]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = next((line for line in reversed(proc.stdout.splitlines())
                    if " passed" in line or " failed" in line), "")
    return {"command": " ".join(command), "exit": proc.returncode, "wall_s": round(wall, 1),
            "cpu_s": round(used.ru_utime + used.ru_stime - children.ru_utime - children.ru_stime,
                           1),
            "load_before": round(before, 2), "load_after": round(os.getloadavg()[0], 2),
            "summary": summary.strip("= ")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ci", action="store_true", help="also the whole CI in a fresh clone")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    fast_loop = [str(REPO / ".venv/bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "-m", "not slow", "tests"]
    results = {"machine": machine(), "fast_loop": timed([*fast_loop, "-n", "auto"], REPO),
               "fast_loop_one_process": timed([*fast_loop, "-n", "0"], REPO)}
    if args.ci:
        with tempfile.TemporaryDirectory(prefix="lorelab-ci-") as tmp:
            clone = Path(tmp) / "lorelab"
            subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
            results["ci"] = timed(["bash", ".ci/run"], clone, {**os.environ, "CI": "true"})
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name in ("fast_loop", "fast_loop_one_process", "ci"):
            if name in results:
                r = results[name]
                print(f"{name}: {r['wall_s']} s wall, {r['cpu_s']} s CPU, load {r['load_before']}"
                      f" -> {r['load_after']}, exit {r['exit']}: {r['summary']}")
    return 0 if all(r["exit"] == 0 for k, r in results.items() if k != "machine") else 1


if __name__ == "__main__":
    sys.exit(main())
