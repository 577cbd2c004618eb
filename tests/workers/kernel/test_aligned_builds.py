"""Builds with forced function alignment (workers/kernel/alignment.py, workers/kernel/build.py):
which way a tree at a commit is aligned, and that an aligned build is its own build, never
answered by the ordinary one's artifact, base O= directory or ccache. Real git, make, gcc and
the sandbox on the stand-in tree; `nm` reads where the functions landed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.config.build import BuildSettings
from bot.demo.simtree import make_sim_tree, padding_series_spec
from bot.demo.threads import as_mbox, make_series
from bot.report.compose.reproduce import ConfigRecipe, build_lines
from tests.support.gitrepo import git, needs_git
from workers.kernel.alignment import ALIGN_FLAGS, ForcedAlignment, forced_alignment
from workers.kernel.apply import apply_mbox
from workers.kernel.build import BuildResult, build_commit

needs_gcc = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None
                               or shutil.which("nm") is None,
                               reason="make, gcc and nm are needed to build the stand-in tree")

OPTION_64 = "config DEBUG_FORCE_FUNCTION_ALIGN_64B\n\tbool \"Force all function address " \
            "64B aligned\"\n\tdepends on EXPERT && (X86_64 || ARM64)\n"
OPTION_32 = "config DEBUG_FORCE_FUNCTION_ALIGN_32B\n\tbool \"Force all function address " \
            "32B aligned\" if EXPERT\n"


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@needs_git
def test_the_tree_at_the_base_commit_decides_between_the_option_and_kcflags(tmp_path):
    repo = tmp_path / "linux"
    repo.mkdir()
    git(repo, "init", "-q")
    old = _commit(repo, {"lib/Kconfig.debug": "config DEBUG_KERNEL\n\tbool\n",
                         "Makefile": "all:\n"}, "before the option")
    with_32 = _commit(repo, {"lib/Kconfig.debug": "config DEBUG_KERNEL\n\tbool\n" + OPTION_32},
                      "the 32-byte option")
    with_64 = _commit(repo, {"lib/Kconfig.debug": "config DEBUG_KERNEL\n\tbool\n" + OPTION_64},
                      "the 64-byte option")
    moved = _commit(repo, {"lib/Kconfig.debug": "config DEBUG_KERNEL\n\tbool\n",
                           "arch/x86/Kconfig.debug": OPTION_32 + OPTION_64},
                    "both, defined in arch/x86")
    assert forced_alignment(repo, old) == ForcedAlignment(kcflags="-falign-functions=64")
    assert forced_alignment(repo, old).shown == "KCFLAGS=-falign-functions=64"
    assert forced_alignment(repo, with_32).shown == "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_32B=y"
    assert forced_alignment(repo, with_64).shown == "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y"
    assert forced_alignment(repo, moved).shown == "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y"
    # A mention is not a definition (a help text, a "select"): the tree does not have it.
    mention = _commit(repo, {"lib/Kconfig.debug": "config DEBUG_KERNEL\n\tbool\n\thelp\n\t  see "
                             "config DEBUG_FORCE_FUNCTION_ALIGN_64B in newer trees\n",
                             "arch/x86/Kconfig.debug": ""}, "only mentioned")
    assert forced_alignment(repo, mention).kcflags == ALIGN_FLAGS
    # The option's fragment also sets EXPERT, which the option depends on.
    settings = forced_alignment(repo, with_64).build_settings(BuildSettings(fragments=[]))
    (fragment,) = settings.fragment_files()
    assert fragment.read_text().splitlines()[-2:] == [
        "CONFIG_EXPERT=y", "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y"]


def test_the_reproduce_lines_build_as_the_aligned_builds_did():
    plain = BuildSettings(base_config="tinyconfig", fragments=["reclaim-vm"])
    for shown, wanted in (
            ("KCFLAGS=-falign-functions=64",
             "make -j$(nproc) KCFLAGS=-falign-functions=64 bzImage"),
            ("CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y",
             "scripts/kconfig/merge_config.sh -m .config "
             "bot/config/kernel/force-function-align-64b.config")):
        alignment = ForcedAlignment.from_shown(shown)
        assert alignment.shown == shown
        settings = alignment.shown_settings(plain)
        recipe = ConfigRecipe(url="", base=settings.base_config, sha256="0" * 64,
                              fragments=tuple(str(f) for f in settings.fragment_files()))
        assert wanted in build_lines(recipe, settings.targets)


def _offset(result: BuildResult, symbol: str = "shrink_lruvec") -> int:
    """Where `symbol` starts within its 64-byte line in the built image."""
    image = Path(str(result.artifact_dir)) / "bzImage"
    symbols = subprocess.run(["nm", str(image)], capture_output=True, text=True,
                             check=True).stdout
    address = next(int(line.split()[0], 16) for line in symbols.splitlines()
                   if line.split()[-1:] == [symbol])
    return address % 64


@needs_gcc
@pytest.mark.slow  # four builds of the stand-in tree
def test_an_aligned_build_is_its_own_and_the_padding_moves_only_the_unaligned_code(tmp_path):
    tree = make_sim_tree(tmp_path / "linux")
    base = git(tree, "rev-parse", "master").strip()
    mbox = as_mbox(make_series(tree, padding_series_spec()))
    work = tmp_path / "work"
    padded = apply_mbox(tree, work, "sim", "run-1", base, mbox).patched
    assert padded
    settings = BuildSettings(base_config="defconfig", fragments=[], jobs=2)

    def build(commit: str, kcflags: str = "") -> BuildResult:
        result = build_commit(tree, "sim", commit, base, settings, work, kcflags)
        assert result.ok, result.log[-2000:]
        return result

    plain = build(base)
    aligned = build(base, ALIGN_FLAGS)
    # Built, not served: its own key and base O= directory, and the code really aligned (no
    # stale object of the ordinary build, no ccache hit of it).
    assert not aligned.cached and aligned.cache_key != plain.cache_key
    assert aligned.objdir != plain.objdir
    assert _offset(aligned) == 0 != _offset(plain)
    record = json.loads((Path(str(aligned.artifact_dir)) / "build.json").read_text())
    assert record["kcflags"] == ALIGN_FLAGS
    # Each is served from its own cache afterwards.
    assert build(base).cache_key == plain.cache_key and build(base).cached
    again = build(base, ALIGN_FLAGS)
    assert again.cached and again.artifact_dir == aligned.artifact_dir
    # The padding patch (a private copy of each base O= directory) moves shrink_lruvec by 32
    # bytes within its line: its 48 hot bytes (the simulator's model of instruction fetch)
    # fit in one line before and spill into the next after. Aligned, it does not move.
    padded_plain, padded_aligned = build(padded), build(padded, ALIGN_FLAGS)
    assert (_offset(padded_plain) - _offset(plain)) % 64 == 32
    assert (_offset(plain) + 47) // 64 == 0 and (_offset(padded_plain) + 47) // 64 == 1
    assert _offset(padded_aligned) == 0


@needs_gcc
def test_an_option_that_olddefconfig_drops_is_not_taken_for_alignment(tmp_path):
    # The stand-in's Kconfig has no such option: olddefconfig drops it, and the build step
    # must not call the result aligned.
    tree = make_sim_tree(tmp_path / "linux")
    base = git(tree, "rev-parse", "master").strip()
    option = ForcedAlignment(option="DEBUG_FORCE_FUNCTION_ALIGN_64B")
    settings = option.build_settings(BuildSettings(base_config="defconfig", fragments=[],
                                                   jobs=2))
    result = build_commit(tree, "sim", base, base, settings, tmp_path / "work")
    assert result.ok, result.log[-2000:]
    assert "olddefconfig dropped it" in str(option.not_taken(result.artifact_dir))
    assert ForcedAlignment(kcflags=ALIGN_FLAGS).not_taken(result.artifact_dir) is None
