"""Lab benchmark: N boots of one kernel under qemu, the overhead of a boot and the noise of each
metric across boots.

Boots Debian's generic kernel (workers.lab.kernel_image) N times (default 10) with each benchmark
(default: hackbench and readtwice from bot.benchmarks) through the `qemu` runner, exactly as a
campaign does, and reports:

- the overhead of each boot: qemu start to the job's start, the job's end to qemu's exit (median,
  min, max);
- every metric's median and robust CV (bot.analysis.robust: 1.4826 * MAD / median) across the
  boots: the main metric and each reclaim counter that moved. A comparison on this host cannot
  see a change much smaller than that spread.

With `--kernel BZIMAGE` it boots that kernel instead (the lab kernel lorelab builds: tinyconfig
plus bot/config/kernel/reclaim-vm.config, e.g. from scripts/kernel-review's build directory), and
`--iterations N` runs the benchmark N times per boot (the boot's value is their median), as a lab
host's `iterations` does: the way to bring a benchmark's spread across boots down under TCG.

Usage: python bench/lab.py [--boots 10] [--benchmark NAME ...] [--accel auto|tcg|kvm]
                           [--memory-mb 256] [--cpus N] [--iterations N] [--kernel BZIMAGE]
                           [--bzimage] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import describe, machine  # noqa: E402
from bot.analysis.robust import robust_cv  # noqa: E402
from bot.benchmarks.registry import benchmark  # noqa: E402
from bot.config.lab_hosts import LabHostSettings  # noqa: E402
from workers.lab.kernel_image import debian_kernel  # noqa: E402
from workers.lab.qemu import QemuRunner, RunFailed  # noqa: E402

DEFAULT_BENCHMARKS = ("hackbench", "readtwice")


def spread(values: list[float]) -> dict[str, float | None]:
    """Median, min, max and robust CV (None when the median is 0: the CV means nothing)."""
    median = statistics.median(values)
    return {"median": median, "min": min(values), "max": max(values),
            "robust_cv": robust_cv(values) if median else None}


def campaign(name: str, host: LabHostSettings, vmlinuz: Path, boots: int,
             direct_boot: bool) -> dict[str, object]:
    """`boots` boots of `vmlinuz` running the benchmark `name`; their overhead and metrics."""
    bench = benchmark(name)
    runner = QemuRunner(bench, {"A": vmlinuz, "B": vmlinuz}, host, direct_boot=direct_boot)
    values: dict[str, list[float]] = defaultdict(list)
    accels: set[str] = set()
    failures: list[str] = []
    for index in range(boots):
        started = time.monotonic()
        try:
            samples = runner("A", index, 0)
        except RunFailed as error:
            failures.append(str(error))
            print(f"  {name} boot {index + 1}/{boots} failed: {str(error)[:300]}", file=sys.stderr)
            continue
        for sample in samples:
            values[sample.metric].append(sample.value)
            accels.add(sample.accel)
        print(f"  {name} boot {index + 1}/{boots}: {time.monotonic() - started:.1f} s",
              file=sys.stderr)
    done = [b for b in runner.boots if b.after_job is not None]
    overhead = {
        "to_job": spread([b.to_job for b in done if b.to_job is not None]),
        "job": spread([b.job_seconds for b in done if b.job_seconds is not None]),
        "after_job": spread([b.after_job for b in done if b.after_job is not None]),
        "guest_uptime_at_job": spread([b.uptimes["job-begin"] for b in done
                                       if "job-begin" in b.uptimes]),
        # qemu, the firmware and (booting a bzImage) the decompressor: before the kernel's clock
        "before_kernel": spread([b.to_job - b.uptimes["job-begin"] for b in done
                                 if b.to_job is not None and "job-begin" in b.uptimes]),
    } if done else {}
    main = {m.name for m in bench.main_metrics}
    metrics = {metric: {**spread(v), "main": metric in main, "values": v}
               for metric, v in values.items() if any(v)}
    return {
        "parameters": dict(bench.parameters), "boots": boots, "completed": len(done),
        "kernel_file": runner.kernel_file("A").name,
        "accel": sorted(accels), "overhead": overhead, "metrics": metrics,
        "always_zero": sorted(metric for metric, v in values.items() if not any(v)),
        "failures": failures,
    }


def _cv(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def print_report(report: dict) -> None:
    print(f"machine: {describe(report['machine'])}")
    guest = report["guest"]
    print(f"kernel: {report['kernel']}; guest: {guest['cpus']} CPUs, {guest['memory_mb']} MB, "
          f"accel {guest['accel']}, {guest.get('iterations', 1)} iteration(s) per boot")
    load = report.get("load_average")
    if load:
        print(f"host load average (1 min): {load['before']:.1f} before, {load['after']:.1f} after")
    for name, result in report["benchmarks"].items():
        parameters = ", ".join(f"{k}={v}" for k, v in result["parameters"].items())
        print(f"\n{name} ({parameters}): {result['completed']}/{result['boots']} boots, "
              f"accel {'/'.join(result['accel']) or '-'}, booting {result['kernel_file']}")
        print(f"  {'per boot (s)':36s} {'median':>10s} {'min':>10s} {'max':>10s} {'rCV':>7s}")
        labels = {"to_job": "qemu start -> job start",
                  "before_kernel": "  of which before the kernel",
                  "guest_uptime_at_job": "  guest uptime at job start", "job": "job",
                  "after_job": "job end -> qemu exit"}
        for key, label in labels.items():
            if key in result["overhead"]:
                s = result["overhead"][key]
                print(f"  {label:36s} {s['median']:10.2f} {s['min']:10.2f} {s['max']:10.2f} "
                      f"{_cv(s['robust_cv']):>7s}")
        print(f"  {'metric':36s} {'median':>10s} {'min':>10s} {'max':>10s} {'rCV':>7s}")
        ordered = sorted(result["metrics"].items(), key=lambda item: (not item[1]["main"], item[0]))
        for metric, s in ordered:
            print(f"  {metric:36s} {s['median']:10.4g} {s['min']:10.4g} {s['max']:10.4g} "
                  f"{_cv(s['robust_cv']):>7s}")
        if result["always_zero"]:
            print(f"  always 0: {', '.join(result['always_zero'])}")
        for failure in result["failures"]:
            print(f"  failed: {failure.splitlines()[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boots", type=int, default=10)
    parser.add_argument("--benchmark", action="append", dest="benchmarks",
                        help=f"a name from bot.benchmarks.registry (default: "
                             f"{', '.join(DEFAULT_BENCHMARKS)})")
    parser.add_argument("--accel", choices=("auto", "tcg", "kvm"), default="auto")
    parser.add_argument("--memory-mb", type=int, default=256)
    parser.add_argument("--cpus", type=int, default=None, help="default: all of this host's")
    parser.add_argument("--bzimage", action="store_true",
                        help="boot through the bzImage's decompressor, not the ELF inside it")
    parser.add_argument("--iterations", type=int, default=1,
                        help="benchmark runs per boot; the boot's value is their median")
    parser.add_argument("--kernel", type=Path, default=None,
                        help="a bzImage to boot (default: Debian's generic kernel)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    if args.kernel:
        # The lab kernel has 9p, virtio and ext2 built in: no modules in the initramfs.
        image, modules, kernel_name = args.kernel, "", str(args.kernel)
    else:
        kernel = debian_kernel()
        image, modules = kernel.vmlinuz, str(kernel.modules)
        kernel_name = f"{kernel.package} ({kernel.version})"
    host = LabHostSettings(name="bench-lab", runner="qemu", accel=args.accel,
                           memory_mb=args.memory_mb, initramfs_modules=modules,
                           timeout=600, iterations=args.iterations)
    if args.cpus:
        host.cpus = args.cpus
    load_before = os.getloadavg()[0]
    report: dict[str, object] = {
        "machine": machine(), "kernel": kernel_name,
        "guest": {"cpus": host.cpus, "memory_mb": host.memory_mb, "accel": host.accel,
                  "scratch_mb": host.scratch_mb, "swap_mb": host.swap_mb,
                  "iterations": host.iterations},
        "benchmarks": {name: campaign(name, host, image, args.boots, not args.bzimage)
                       for name in (args.benchmarks or DEFAULT_BENCHMARKS)},
    }
    # Other work on the host shows in every figure: say how busy it was.
    report["load_average"] = {"before": load_before, "after": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)


if __name__ == "__main__":
    main()
