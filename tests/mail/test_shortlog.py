"""Reading the patch titles a cover letter lists, as git and b4 write them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot.mail.shortlog import read_shortlog, same_title

LONG = "mm/vmscan: reclaim in larger batches when the lru lock is contended for a long while"


def commit_three(repo: Path) -> None:
    """Three commits by Ada and one by Bob, one of Ada's titles longer than 72 columns."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo), "PATH": "/usr/bin:/bin"}
    git = ["git", "-C", str(repo), "-c", "user.email=ada@example.org", "-c",
           "user.name=Ada Reclaim"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    for i, title in enumerate(["mm: base", "mm/swap: drain the batch early", LONG,
                               "mm/memcontrol: charge in one place"]):
        (repo / f"f{i}").write_text(f"{i}\n")
        subprocess.run([*git, "add", f"f{i}"], check=True, env=env)
        author = ["--author=Bob Other <bob@example.org>"] if i == 3 else []
        subprocess.run([*git, "commit", "-q", "-m", title, *author], check=True, env=env)


def test_format_patch_cover_letter_wrapped_titles_by_author(tmp_path):
    repo = tmp_path / "linux"
    commit_three(repo)
    subprocess.run(["git", "-C", str(repo), "format-patch", "-q", "--cover-letter", "-o",
                    str(tmp_path / "out"), "HEAD~3"], check=True)
    letter = (tmp_path / "out" / "0000-cover-letter.patch").read_text()
    assert f"  {LONG}\n" not in letter  # git wrapped it
    assert read_shortlog(letter) == (
        ("mm/swap: drain the batch early", LONG),
        ("mm/memcontrol: charge in one place",),
    )


def test_plain_git_shortlog_as_b4_writes_it(tmp_path):
    repo = tmp_path / "linux"
    commit_three(repo)
    shortlog = subprocess.run(["git", "-C", str(repo), "shortlog", "HEAD~3.."], check=True,
                              capture_output=True, text=True).stdout
    body = f"The blurb.\n\n---\n{shortlog}\n mm/vmscan.c | 2 +-\n\nbase-commit: 123\n"
    assert read_shortlog(body) == (
        ("mm/swap: drain the batch early", LONG),
        ("mm/memcontrol: charge in one place",),
    )


def test_prose_is_no_shortlog():
    assert read_shortlog("Changes since v1 (2):\n  - took Rita's review\n\nThanks\n") == ()
    assert read_shortlog("No listing here.\n") == ()
    # the count is what makes a block: three titles under "(2)" are something else
    assert read_shortlog("Ada Reclaim (2):\n  mm: a\n  mm: b\n  mm: c\n") == ()
    assert read_shortlog("Ada Reclaim (Oracle) (1):\n  mm: a\n") == (("mm: a",),)


def test_titles_compare_whatever_the_wrapping():
    assert same_title("mm: a long\n    title", "mm: a long title")
    assert not same_title("mm: a title", "mm: another title")
