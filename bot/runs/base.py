"""What to test a series on: the configured kernel trees and the choice of base commit.

The order of the base choice (each step only when the one before gives nothing):
  1. the series' `base-commit:`, if the tree has that commit;
  2. the subject-tag map: `[PATCH mm-unstable]` -> branch mm-unstable;
  3. b4's guess from the blob ids in the patches (`LoreSeries.find_base`), restricted to the
     tree's configured branches;
  4. the head of the list's default branch (else the tree's default branch).
`choose_base` is pure: the git lookups it needs are behind the `TreeLookup` protocol, which
`GitTreeLookup` implements with git and b4.
"""

from __future__ import annotations

import email
import logging
import mailbox
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bot.config.sections import TreeSettings
from bot.git import run_git


def tree_at(path: str) -> TreeSettings:
    """A tree given by its path (`lorelab review --tree PATH`) rather than configured: named by
    its absolute path, so that a worker, a retest or a resume finds it again; its branch is
    the one checked out."""
    root = Path(path).resolve()
    if not (root / ".git").exists():
        raise ValueError(f"{path} is not a git checkout of a kernel tree")
    branch = subprocess.run(["git", "-C", str(root), "symbolic-ref", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return TreeSettings(name=str(root), path=str(root), branches=[branch or "master"])


@dataclass(frozen=True)
class BaseRequest:
    """What a series says about its base."""

    base_commit: str | None = None  # from `base-commit:`
    prefixes: tuple[str, ...] = ()  # subject words other than PATCH/vN/RFC: "mm-unstable"
    lists: tuple[str, ...] = ()  # lists it was sent to
    explicit: str | None = None  # a maintainer's --base REV overrides everything


@dataclass(frozen=True)
class BaseChoice:
    commit: str  # full commit id
    branch: str | None  # the branch it came from, when it came from one
    reason: str  # "explicit", "base-commit", "subject-tag", "b4-guess", "branch-head"
    detail: str  # one line for people: why this base


class BaseNotFound(LookupError):
    """No base could be found; the text says what was tried."""


class TreeLookup(Protocol):
    """The git questions base selection asks of a tree."""

    def resolve(self, rev: str) -> str | None:
        """The full commit id of `rev`, or None when the tree does not have it."""

    def guess_base(self, branches: list[str]) -> str | None:
        """b4's guess from the patches' blob ids, restricted to `branches`, or None."""


def choose_base(tree: TreeSettings, request: BaseRequest, lookup: TreeLookup) -> BaseChoice:
    """The base commit for a series on `tree`, and why (the order in the module docstring)."""
    tried: list[str] = []
    if request.explicit:
        commit = lookup.resolve(request.explicit)
        if commit is None:
            raise BaseNotFound(f"tree {tree.name} has no revision {request.explicit!r}")
        return BaseChoice(commit, None, "explicit", f"given: --base {request.explicit}")
    if request.base_commit:
        commit = lookup.resolve(request.base_commit)
        if commit is not None:
            return BaseChoice(commit, None, "base-commit",
                              "the series' base-commit, found in the tree")
        tried.append(f"base-commit {request.base_commit[:12]} is not in the tree")
    for prefix in request.prefixes:
        branch = tree.subject_tags.get(prefix)
        if branch:
            commit = lookup.resolve(f"refs/heads/{branch}") or lookup.resolve(branch)
            if commit is not None:
                return BaseChoice(commit, branch, "subject-tag",
                                  f"subject tag [PATCH {prefix}] -> head of {branch}")
            tried.append(f"subject tag {prefix} maps to {branch}, which the tree lacks")
    commit = lookup.guess_base(list(tree.branches))
    if commit is not None:
        return BaseChoice(commit, None, "b4-guess", "b4: the patches' blob ids match this commit")
    tried.append("b4 found no commit whose blobs match the patches")
    branch = next((tree.list_branches[n] for n in request.lists if n in tree.list_branches),
                  tree.fallback_branch)
    commit = lookup.resolve(f"refs/heads/{branch}") or lookup.resolve(branch)
    if commit is not None:
        return BaseChoice(commit, branch, "branch-head", f"head of {branch}; " + "; ".join(tried))
    tried.append(f"branch {branch} does not exist")
    raise BaseNotFound(f"no base on tree {tree.name}: " + "; ".join(tried))


_UNDESCRIBED = re.compile(r"Could not describe commit (\S+)$")


class GitTreeLookup:
    """`TreeLookup` on a real git tree; `mbox` (am-ready) feeds b4's blob-id guess."""

    def __init__(self, path: str | Path, mbox: bytes | None = None) -> None:
        self.path = Path(path)
        self.mbox = mbox

    def resolve(self, rev: str) -> str | None:
        result = run_git(self.path, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}",
                         check=False)
        return result.stdout.decode().strip() if result.returncode == 0 else None

    def guess_base(self, branches: list[str]) -> str | None:
        if not self.mbox:
            return None
        import b4

        from bot.series.mbox import _b4_setup

        _b4_setup()
        lmbx = b4.LoreMailbox()
        with tempfile.NamedTemporaryFile(suffix=".mbox") as tmp:
            tmp.write(self.mbox)
            tmp.flush()
            for msg in mailbox.mbox(tmp.name):
                try:
                    lmbx.add_message(email.message_from_bytes(msg.as_bytes(),
                                                              policy=b4.emlpolicy))
                except (ValueError, SystemExit):
                    continue
        heads = [b for b in branches if self.resolve(f"refs/heads/{b}")]
        if not heads:
            return None
        try:
            lser = lmbx.get_series(codereview_trailers=False)
            if lser is None:
                return None
            commit, _, mismatches = lser.find_base(str(self.path), branches=heads)
        except IndexError as exc:
            # b4 names its best commit with `git describe --all`, which fails when no ref is
            # an ancestor (a tree without tags); the commit it found is in the message.
            found = _UNDESCRIBED.match(str(exc))
            if found is None:
                logging.getLogger(__name__).debug("b4 find_base: %s", exc)
                return None
            commit, mismatches = found[1], 0
        except (SystemExit, RuntimeError) as exc:
            logging.getLogger(__name__).debug("b4 find_base: %s", exc)
            return None
        if mismatches:
            return None  # b4 found only a near miss: the branch head is as good a guess
        return self.resolve(commit)
