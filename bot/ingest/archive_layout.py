"""Where a public-inbox archive's epochs are on disk, in the layouts people hold, and whether a
git repository is one at all.

- a v2 inbox: `git/0.git`, `git/1.git` ... (public-inbox, lore's mirrors made with grokmirror);
- a folder of one list's epoch repositories: the inbox's `git` folder, or GitHub's mirrors of
  lore (`linux-kernel.vger.kernel.org.4`), each cloned bare or not;
- one epoch's repository on its own, numbered by its name (`7.git`, `<list>.7`), else 0;
- a v1 inbox: one repository holding a file per message (`ab/cdef...`, the SHA-1 of its
  Message-ID), as epoch 0.

Over HTTP, an inbox's URL has its epochs at `<URL>/N`; a URL may also name one epoch alone
(`epoch_of_url`).
"""

from __future__ import annotations

import re
from pathlib import Path

from bot.git import GitError, run_git


class GitArchiveError(GitError):
    """The archive cannot be read or fetched; the text says which epoch and why."""


# An epoch's repository by its name: public-inbox's `N.git`, or GitHub's mirrors of lore
# (`linux-kernel.vger.kernel.org.4`, cloned bare or not)
_EPOCH_NAME = re.compile(r"(?P<alone>\d{1,4})\.git|(?P<list>.+)\.(?P<of_list>\d{1,4})(?:\.git)?")


def _epoch_named(name: str) -> tuple[str, int] | None:
    """(list, epoch) that a repository's name says: ("", 3) for `3.git`, ("linux-mm.kvack.org",
    2) for `linux-mm.kvack.org.2`; None for any other name."""
    named = _EPOCH_NAME.fullmatch(name)
    if named is None:
        return None
    return named["list"] or "", int(named["alone"] or named["of_list"])


def epoch_of_url(url: str) -> int | None:
    """The epoch a URL names on its own: lore's `<inbox>/N`, or a repository named as an epoch
    (GitHub's `.../linux-pm.vger.kernel.org.0`, `.../3.git`); None for an inbox's URL."""
    last = url.rstrip("/").rpartition("/")[2]
    if last.isdigit() and len(last) <= 4:
        return int(last)
    named = _epoch_named(last)
    return named[1] if named else None


def find_epochs(root: Path) -> list[tuple[int, Path]]:
    """The repositories of the archive at `root` with their epoch numbers, oldest first, in the
    layouts people hold: a v2 inbox (`root/git/N.git`), a folder of one list's epochs (its
    `git` folder, or GitHub's mirrors `<list>.N`), or one repository on its own, bare or not:
    an epoch cloned alone (numbered by its name, else 0) or a v1 inbox. Empty when `root`
    holds none of these; GitArchiveError when it holds several lists' epochs or one twice."""
    for folder in (root / "git", root):
        if found := _epochs_in(folder):
            return found
    if git_dir := _git_dir(root):
        named = _epoch_named(root.name)
        return [(named[1] if named else 0, git_dir)]
    return []


def _epochs_in(folder: Path) -> list[tuple[int, Path]]:
    """The epochs of one list that are repositories in `folder`, oldest first."""
    by_list: dict[str, dict[int, Path]] = {}
    for path in folder.iterdir() if folder.is_dir() else ():
        named = _epoch_named(path.name)
        if named and (git_dir := _git_dir(path)):
            epochs = by_list.setdefault(named[0], {})
            if named[1] in epochs:
                raise GitArchiveError(f"{folder}: two repositories of epoch {named[1]}: "
                                      f"{epochs[named[1]].name} and {path.name}; keep one")
            epochs[named[1]] = git_dir
    if len(by_list) > 1:
        raise GitArchiveError(f"{folder}: the epochs of several archives "
                              f"({', '.join(sorted(by_list))}); give one of their repositories")
    return sorted(next(iter(by_list.values()), {}).items())


def _git_dir(path: Path) -> Path | None:
    """`path` if it is a bare repository, its `.git` if it is a clone; else None."""
    for git_dir in (path, path / ".git"):
        if (git_dir / "objects").is_dir() and (git_dir / "HEAD").is_file():
            return git_dir
    return None


# A v1 inbox's files: one per message, in a folder named by the first two hex digits of the SHA-1
# of its Message-ID, the file by the other 38
_V1_FOLDER = re.compile(rb"[0-9a-f]{2}")
V1_MESSAGE = re.compile(rb"[0-9a-f]{2}/[0-9a-f]{38}")


def holds_mail(git_dir: Path) -> bool:
    """Whether the head of `git_dir` is a public-inbox epoch's or v1 inbox's: its top tree holds
    `m` or `d`, or v1's folders, or nothing. Checked before a first walk: a kernel tree given by
    mistake would otherwise have its whole history listed, for no mail."""
    names = run_git(git_dir, "ls-tree", "--name-only", "HEAD", bare=True,
                    error=GitArchiveError).stdout.split(b"\n")
    return not any(names) or any(
        name in (b"m", b"d") or _V1_FOLDER.fullmatch(name) for name in names)
