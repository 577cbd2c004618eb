"""Hostile series against the build worker, on the stand-in tree: each patch in
tests/fixtures/hostile/ attacks the unsandboxed worker around the sandbox (symlinked outputs,
objects planted for the next series, a fork bomb, a filled disk). Real git, make, gcc, ccache and
the real sandbox."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.config.build import BuildSettings
from bot.demo.simtree import batch_series_spec, make_sim_tree, ops_per_second
from bot.demo.threads import as_mbox, make_series
from tests.support.paths import TESTS
from workers.kernel.apply import apply_mbox
from workers.kernel.build import BuildResult, build_commit

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                                reason="make and gcc are needed to build the stand-in tree")

HOSTILE = TESTS / "fixtures" / "hostile"
SECRET = "lorelab-hostile-build-secret"
VICTIM = "a file outside the work directory that the worker must never write\n"


class Bench:
    """The stand-in tree, its base built, and a way to apply and build series on it. The work
    directory is `root/work`, so the patches' `$(srctree)/../../../` is `root`, where the
    secret and the victim are."""

    def __init__(self, root: Path, **settings: object) -> None:
        self.root = root
        self.tree = make_sim_tree(root / "linux")
        self.work = root / "work"
        self.settings = BuildSettings(base_config="defconfig", fragments=[], jobs=2,
                                      **settings)  # type: ignore[arg-type]
        self.base = subprocess.run(["git", "-C", str(self.tree), "rev-parse", "master"],
                                   capture_output=True, text=True, check=True).stdout.strip()
        (root / "secret.txt").write_text(SECRET + "\n")
        (root / "victim.txt").write_text(VICTIM)
        self.count = 0
        # The innocent series' commits are made before any build: they are its own branches.
        self.innocent = as_mbox(make_series(self.tree, batch_series_spec())[1:])

    def build(self, commit: str) -> BuildResult:
        return build_commit(self.tree, "sim", commit, self.base, self.settings, self.work)

    def apply(self, mbox: bytes) -> str:
        self.count += 1
        result = apply_mbox(self.tree, self.work, "sim", f"run-{self.count}", self.base, mbox)
        assert result.ok and result.patched, result.output
        return result.patched

    def hostile(self, name: str) -> BuildResult:
        return self.build(self.apply((HOSTILE / f"{name}.patch").read_bytes()))


def _cached_files(work: Path) -> list[Path]:
    return [p for p in (work / "artifacts").rglob("*") if p.is_file() or p.is_symlink()]


def _ops(result: BuildResult) -> str:
    image = Path(str(result.artifact_dir)) / "bzImage"
    assert image.read_bytes()[:4] == b"\x7fELF", "not the compiled simulator"
    return subprocess.run([str(image), "20000"], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("patch", ["symlink-image", "symlink-config"])
def test_symlinked_outputs_never_reach_the_artifact_cache_nor_overwrite_their_target(
        tmp_path, patch):
    bench = Bench(tmp_path)
    assert bench.build(bench.base).ok
    hostile = bench.hostile(patch)
    assert not hostile.ok
    assert "refused" in hostile.errors[0].message and hostile.artifact_dir is None
    for path in _cached_files(bench.work):
        assert not path.is_symlink() and SECRET.encode() not in path.read_bytes(), path
    # The next, innocent series builds normally, and nothing outside was written.
    innocent = bench.build(bench.apply(bench.innocent))
    assert innocent.ok, innocent.log
    assert ops_per_second(_ops(innocent)) > 0
    assert (tmp_path / "victim.txt").read_text() == VICTIM
    assert (tmp_path / "secret.txt").read_text() == SECRET + "\n"


def test_objects_planted_by_one_series_are_not_what_the_next_one_is_built_from(tmp_path):
    bench = Bench(tmp_path)
    base = bench.build(bench.base)
    assert base.ok
    ccache = bench.work / "ccache"
    before = sorted(str(p.relative_to(ccache)) for p in ccache.rglob("*"))
    hostile = bench.hostile("future-objects")
    assert hostile.ok  # it built: what it planted was in its own copy of the base objects
    assert "planted" in subprocess.run([str(Path(str(hostile.artifact_dir)) / "bzImage")],
                                       capture_output=True, text=True).stdout
    # ccache is read-only to a patched build: nothing added, nothing planted.
    assert sorted(str(p.relative_to(ccache)) for p in ccache.rglob("*")) == before
    innocent = bench.build(bench.apply(bench.innocent))
    assert innocent.ok, innocent.log
    out = _ops(innocent)  # its own compiled binary, not the planted script
    assert "planted" not in out and ops_per_second(out) > 1
    # ... and still incremental from the base's objects: only what the series touched.
    assert "mm/vmscan.c" in innocent.log and "init/main.c" not in innocent.log
    assert not any((bench.work / "scratch").iterdir())  # every build's copy is gone


def test_a_fork_bomb_is_stopped_by_the_process_limit_and_the_next_series_builds(tmp_path):
    bench = Bench(tmp_path, max_processes=64, wall_seconds=120)
    assert bench.build(bench.base).ok
    bomb = bench.hostile("fork-bomb")
    assert not bomb.ok
    assert bomb.errors[0].message == "build exceeded its process limit (64 processes)"
    assert "lorelab: killed: it exceeded its process limit" in bomb.log
    innocent = bench.build(bench.apply(bench.innocent))
    assert innocent.ok, innocent.log


def test_a_disk_filling_series_is_stopped_cleaned_up_and_blamed_alone(tmp_path):
    bench = Bench(tmp_path, max_disk_mb=100)
    assert bench.build(bench.base).ok
    filler = bench.hostile("disk-fill")
    assert not filler.ok
    assert filler.errors[0].message == ("build exceeded its disk limit (100 MiB in its build "
                                        "directory)")
    assert not any((bench.work / "scratch").iterdir())  # its directory is gone
    assert not list((bench.work / "obj").rglob("fill.*"))  # the base objects are untouched
    innocent = bench.build(bench.apply(bench.innocent))
    assert innocent.ok, innocent.log


def test_the_process_limit_counts_processes_not_time(tmp_path):
    """The bomb's processes are counted by the cgroup: at most the limit existed at once."""
    from workers.kernel.sandbox import Limits, minimal_env, run_sandboxed

    result = run_sandboxed(
        ["sh", "-c", "b() { [ $1 -gt 0 ] || exec sleep 600; b $(($1 - 1)) & b $(($1 - 1)) & "
                     "wait; }; b 10"],
        cwd=tmp_path, writable=[tmp_path], env=minimal_env(tmp_path),
        limits=Limits(wall_seconds=120, max_processes=32))
    assert result.limit == "process" and not result.timed_out
    assert result.peak_processes is not None and result.peak_processes <= 32
