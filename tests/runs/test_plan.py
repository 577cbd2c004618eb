"""Base selection on real git trees: base-commit, subject tag, b4's blob-id guess, branch head."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.config.sections import TreeSettings
from bot.demo.simtree import batch_series_spec, make_sim_tree
from bot.demo.threads import as_mbox, make_series
from bot.runs.base import BaseNotFound, BaseRequest, GitTreeLookup, choose_base
from tests.support.gitrepo import GIT_ENV, git


def _commit_on(tree: Path, branch: str, path: str, text: str, message: str) -> str:
    git(tree, "checkout", "-q", "-B", branch)
    (tree / path).write_text(text)
    git(tree, "commit", "-q", "-am", message)
    head = git(tree, "rev-parse", "HEAD").strip()
    git(tree, "checkout", "-q", "master")
    return head


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_sim_tree(tmp_path / "linux")


def test_base_commit_wins_when_the_tree_has_it(tree: Path) -> None:
    master = git(tree, "rev-parse", "master").strip()
    settings = TreeSettings("sim", str(tree), subject_tags={"mm-unstable": "mm-unstable"})
    choice = choose_base(settings, BaseRequest(base_commit=master, prefixes=("mm-unstable",)),
                         GitTreeLookup(tree))
    assert (choice.commit, choice.reason) == (master, "base-commit")


def test_unknown_base_commit_falls_to_the_subject_tag(tree: Path) -> None:
    head = _commit_on(tree, "mm-unstable", "Kconfig", "SMP=y\n", "unstable work")
    settings = TreeSettings("sim", str(tree), branches=["master", "mm-unstable"],
                            subject_tags={"mm-unstable": "mm-unstable"})
    choice = choose_base(settings, BaseRequest(base_commit="ab" * 20, prefixes=("mm-unstable",)),
                         GitTreeLookup(tree))
    assert (choice.commit, choice.branch, choice.reason) == (head, "mm-unstable", "subject-tag")


def test_b4_guesses_the_base_from_blob_ids_on_configured_branches(tree: Path) -> None:
    original = git(tree, "rev-parse", "master").strip()
    messages = make_series(tree, batch_series_spec())
    # master moves on and changes mm/vmscan.c: its head no longer has the patches' blobs
    vmscan = (tree / "mm/vmscan.c").read_text().replace("Two LRU lists", "Two LRU lists (!)")
    git(tree, "checkout", "-q", "master")
    (tree / "mm/vmscan.c").write_text(vmscan)
    # dated between the tree (Nov 1) and the series (Nov 30), as b4 searches by date
    when = "2026-11-15T09:00:00+00:00"
    subprocess.run(["git", "-C", str(tree), "commit", "-q", "-am", "mm/vmscan: reword"],
                   check=True, env={**GIT_ENV, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
    settings = TreeSettings("sim", str(tree), branches=["master"])
    choice = choose_base(settings, BaseRequest(), GitTreeLookup(tree, as_mbox(messages)))
    assert (choice.commit, choice.reason) == (original, "b4-guess")


def test_branch_head_of_the_list_default_when_nothing_else_says(tree: Path) -> None:
    head = _commit_on(tree, "mm-stable", "Kconfig", "SMP=n\n", "stable work")
    settings = TreeSettings("sim", str(tree), branches=["master", "mm-stable"],
                            list_branches={"linux-mm": "mm-stable"})
    choice = choose_base(settings, BaseRequest(lists=("linux-mm",)), GitTreeLookup(tree))
    assert (choice.commit, choice.branch, choice.reason) == (head, "mm-stable", "branch-head")
    other = choose_base(settings, BaseRequest(lists=("lkml",)), GitTreeLookup(tree))
    assert other.branch == "master"


def test_explicit_base_and_missing_branch(tree: Path) -> None:
    settings = TreeSettings("sim", str(tree), branches=["nonexistent"])
    with pytest.raises(BaseNotFound, match="nonexistent"):
        choose_base(settings, BaseRequest(), GitTreeLookup(tree))
    master = git(tree, "rev-parse", "master").strip()
    choice = choose_base(settings, BaseRequest(explicit="master"), GitTreeLookup(tree))
    assert (choice.commit, choice.reason) == (master, "explicit")
    with pytest.raises(BaseNotFound):
        choose_base(settings, BaseRequest(explicit="no-such-rev"), GitTreeLookup(tree))


def test_tree_settings_need_branches() -> None:
    with pytest.raises(ValueError):
        TreeSettings("sim", "/x", branches=[])
    assert TreeSettings("sim", "/x", branches=["a"], default_branch="b").fallback_branch == "b"
