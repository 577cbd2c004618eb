"""Build benchmark: a cold build, the patched incremental build, and a warm-cache rebuild.

The stand-in simulator tree by default (seconds); `--kernel TREE` for a real kernel tree made
by scripts/kernel-review (base `master`, patched `--patched`, default the tuning series' branch
`mm-vmscan-two-small-reclaim-tunings-v1`; 12-20 minutes cold on 2 cores). Every build goes
through `workers.kernel.build.build_commit`, the sandbox included, exactly as a worker runs it:

- cold: an empty work directory (no O= directory, empty ccache, empty artifact cache);
- incremental: the patched commit right after the base, in its own copy of the base's O=
  directory (`cp -a --reflink=auto`, included in the time: a patch is untrusted code and must
  not write objects the next series would use);
- cache hit: the base again (the artifact cache answers, nothing is built);
- warm ccache: the base again from an empty O= directory and artifact cache, ccache kept.

Target: incremental <= 10% of cold.  Usage: python bench/build.py [--repeat N] [--kernel TREE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import describe, machine  # noqa: E402
from bot.config.build import BuildSettings  # noqa: E402
from bot.demo.simtree import batch_series_spec, make_sim_tree, ops_per_second  # noqa: E402
from bot.demo.threads import as_mbox, make_series  # noqa: E402
from workers.kernel.apply import apply_mbox  # noqa: E402
from workers.kernel.build import build_commit  # noqa: E402


def _git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def sim_tree(root: Path) -> tuple[Path, str, str]:
    """The simulator tree and the batching series applied: (tree, base, patched)."""
    tree = make_sim_tree(root / "linux")
    messages = make_series(tree, batch_series_spec())
    base = _git(tree, "rev-parse", "master")
    result = apply_mbox(tree, root / "apply", "sim", "bench", base, as_mbox(messages[1:]))
    assert result.ok and result.patched, result.output
    return tree, base, result.patched


def one_round(tree: Path, base: str, patched: str, settings: BuildSettings, work: Path
              ) -> dict[str, float]:
    shutil.rmtree(work, ignore_errors=True)

    def timed(commit: str) -> float:
        started = time.monotonic()
        result = build_commit(tree, "bench", commit, base, settings, work)
        if not result.ok:
            raise SystemExit(f"build of {commit[:12]} failed:\n{result.log[-3000:]}")
        return time.monotonic() - started

    figures = {"cold": timed(base), "incremental": timed(patched), "cache_hit": timed(base)}
    shutil.rmtree(work / "obj")
    shutil.rmtree(work / "artifacts")
    figures["warm_ccache"] = timed(base)
    return figures


def simulate(work: Path, commit_dirs: dict[str, Path], runs: int = 5) -> dict[str, float]:
    """Median ops/s of the base and patched simulators, interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in commit_dirs}
    for _ in range(runs):
        for name, binary in commit_dirs.items():
            out = subprocess.run([str(binary), "3000000"], capture_output=True, text=True,
                                 check=True).stdout
            samples[name].append(ops_per_second(out))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kernel", type=Path, help="a kernel git tree from scripts/kernel-review")
    parser.add_argument("--patched", default="mm-vmscan-two-small-reclaim-tunings-v1")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="lorelab-bench-build-") as tmp:
        root = Path(tmp)
        if args.kernel:
            tree = args.kernel
            base, patched = _git(tree, "rev-parse", "master"), _git(tree, "rev-parse",
                                                                     args.patched)
            settings = BuildSettings(base_config="tinyconfig", fragments=["reclaim-vm"])
            repeat = 1
        else:
            tree, base, patched = sim_tree(root)
            settings = BuildSettings(base_config="defconfig", fragments=[])
            repeat = args.repeat
        rounds = [one_round(tree, base, patched, settings, root / "work") for _ in range(repeat)]
        figures = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        report: dict[str, object] = {
            "machine": machine(), "tree": "kernel" if args.kernel else "simulator",
            "rounds": repeat, "seconds": {k: round(v, 3) for k, v in figures.items()},
            "incremental_over_cold": round(figures["incremental"] / figures["cold"], 3),
        }
        if not args.kernel:
            # after the last round only the base is in the cache: build the patched one again
            build_commit(tree, "bench", patched, base, settings, root / "work")
            by_commit = {}
            for image in (root / "work" / "artifacts").rglob("bzImage"):
                meta = json.loads((image.parent / "build.json").read_text())
                by_commit["base" if meta["commit"] == base else "patched"] = image
            report["ops_per_second"] = {k: round(v) for k, v in simulate(root, by_commit).items()}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"machine: {describe(report['machine'])}")  # type: ignore[arg-type]
    print(f"tree: {report['tree']}, median of {report['rounds']} round(s)")
    for key, value in report["seconds"].items():  # type: ignore[attr-defined]
        print(f"  {key:12s} {value:8.3f} s")
    ratio = report["incremental_over_cold"]
    verdict = "met" if ratio <= 0.10 else "not met"  # type: ignore[operator]
    print(f"  incremental / cold = {ratio:.3f} (target <= 0.10: {verdict})")
    if "ops_per_second" in report:
        ops = report["ops_per_second"]
        print(f"  simulator ops/s: base {ops['base']:,}, patched {ops['patched']:,} "  # type: ignore[index]
              f"({ops['patched'] / ops['base'] - 1:+.1%})")  # type: ignore[index]


if __name__ == "__main__":
    main()
