"""Which LRU the lab kernel runs: MGLRU for a series that changes lru_gen code, on real git
diffs of a file laid out as mm/vmscan.c is (lru_gen code inside #ifdef CONFIG_LRU_GEN)."""

from __future__ import annotations

from pathlib import Path

from bot.runs.lru import changes_lru_gen, lru_for, lru_gen_lines
from tests.support.gitrepo import git

VMSCAN = """\
#include <linux/mm.h>
#define SHRINK_BATCH 128

static unsigned long shrink_list(void)
{
\treturn 0;
}

#ifdef CONFIG_LRU_GEN
#define BLOOM_FILTER_SHIFT\t15

static void walk_mm(void)
{
}
#else /* !CONFIG_LRU_GEN */
static void lru_gen_stub(void)
{
}
#endif /* CONFIG_LRU_GEN */

#if !defined(CONFIG_LRU_GEN)
static int classic_only;
#endif
"""


def _diff(tmp_path: Path, old: str, new: str) -> tuple[str, Path]:
    repo = tmp_path / "linux"
    (repo / "mm").mkdir(parents=True)
    git(repo.parent, "init", "-q", str(repo))
    (repo / "mm/vmscan.c").write_text(VMSCAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "mm/vmscan.c").write_text(VMSCAN.replace(old, new))
    return git(repo, "diff", "-U0"), repo


def _reader(repo: Path):  # noqa: ANN202
    return lambda path: git(repo, "show", f"HEAD:{path}")


def test_a_change_inside_ifdef_config_lru_gen_runs_under_mglru(tmp_path: Path) -> None:
    diff, repo = _diff(tmp_path, "#define BLOOM_FILTER_SHIFT\t15", "#define BLOOM_FILTER_SHIFT\t16")
    assert "lru_gen" not in diff.lower().replace("config_lru_gen", "")  # found by place alone
    assert changes_lru_gen(diff, _reader(repo))
    assert lru_for("series", True) == "mglru"


def test_a_change_outside_it_leaves_the_kernels_default(tmp_path: Path) -> None:
    diff, repo = _diff(tmp_path, "#define SHRINK_BATCH 128", "#define SHRINK_BATCH 256")
    assert not changes_lru_gen(diff, _reader(repo))
    assert lru_for("series", False) is None
    # A lab host may fix the LRU whatever the series changes.
    assert lru_for("mglru", False) == "mglru"
    assert lru_for("classic", True) == "classic"
    assert lru_for("kernel", True) is None


def test_the_else_branch_and_negated_conditions_are_not_lru_gen_code() -> None:
    inside = lru_gen_lines(VMSCAN)
    lines = VMSCAN.splitlines()
    assert lines.index("#define BLOOM_FILTER_SHIFT\t15") + 1 in inside
    assert lines.index("static void lru_gen_stub(void)") + 1 not in inside
    assert lines.index("static int classic_only;") + 1 not in inside
    assert lines.index("#define SHRINK_BATCH 128") + 1 not in inside
