"""Running git, one way: without the user's or the system's configuration (so that the same
input gives the same result everywhere), never asking for a password, and failing with git's
own words."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path


class GitError(RuntimeError):
    """A git command that failed; the text is the command and git's stderr."""


# For reading a whole archive (a public-inbox epoch): git maps a pack into memory in windows of
# up to 1 GB, 8 GB in all, and keeps them; a walk over an epoch touches nearly all of its pack,
# so git's resident memory grew to the pack's size (`git log` over linux-block's 313 MB pack:
# 381 MB; an epoch of lore's LKML is a 1 GB pack). Small windows bound it at the same CPU
# (104 MB there). Options for before the subcommand.
BOUNDED_PACK_MAPS = ("-c", "core.packedGitWindowSize=16m", "-c", "core.packedGitLimit=64m")


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any GIT_* variable (a hook's GIT_DIR, say), with no
    global or system config and no prompt, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    env.update(extra or {})
    return env


def run_git(repo: Path | str, *args: str, input: bytes | None = None, check: bool = True,
            env: Mapping[str, str] | None = None, bare: bool = False,
            error: type[Exception] = GitError) -> subprocess.CompletedProcess[bytes]:
    """`git -C repo ARGS` (`--git-dir repo` when `bare`); `error` when it fails and `check`."""
    where = ["--git-dir", str(repo)] if bare else ["-C", str(repo)]
    proc = subprocess.run(["git", *where, *args], input=input, capture_output=True,
                          env=git_env(env))
    if check and proc.returncode != 0:
        raise error(f"{repo}: git {' '.join(args)}: "
                    f"{proc.stderr.decode(errors='replace').strip()}")
    return proc


def git_output(repo: Path | str, *args: str, **options: object) -> str:
    """What `run_git` printed, as text."""
    return run_git(repo, *args, **options).stdout.decode(errors="replace")  # type: ignore[arg-type]
