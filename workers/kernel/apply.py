"""Applying an am-ready mbox to a kernel tree, in a git worktree of its own.

The maintainer's checkout is never touched: each run gets `git worktree add --detach` at the
chosen base under the work directory, `git am -3` runs there, and the worktree is removed
afterwards, whatever happened. A worktree left behind by a killed run is removed by the next
run on the same tree (runs on one tree hold a lock, so any worktree found is stale). The
patched commit survives as `refs/lorelab/<name>`.

Patch paths are checked before git sees the mbox: no absolute paths, no `..`, nothing under
`.git/`; and so are the sizes of the files its binary hunks make (workers.kernel.binary_patch).
git am itself runs outside the sandbox (it runs nothing from the patch), but in a cgroup of its
own with a memory limit (workers.kernel.job_cgroup) and RLIMIT_FSIZE, so that what the checks
miss costs a bounded amount.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import re
import resource
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bot.git import git_env, run_git
from bot.runs.records import Conflict
from workers.kernel.binary_patch import binary_hunks
from workers.kernel.job_cgroup import JobCgroup, make_job_cgroup

MAX_HUNK_CHARS = 4000  # of conflict text kept per file


COMMITTER = {"GIT_COMMITTER_NAME": "lorelab", "GIT_COMMITTER_EMAIL": "lorelab@localhost"}


class UnsafePatch(ValueError):
    """A patch names a path outside the tree; the text says which."""


@dataclass(frozen=True)
class ApplyResult:
    ok: bool
    base: str
    patched: str | None = None  # the commit after the last patch
    applied: int = 0  # patches applied before the failure (all of them on success)
    failed_patch: str | None = None  # "0002 mm/vmscan: ..." as git am names it
    conflicts: tuple[Conflict, ...] = field(default_factory=tuple)
    output: str = ""  # git am's output


_DIFF_PATHS = re.compile(
    r"^(?:diff --git (?P<a>\S+) (?P<b>\S+)|(?:---|\+\+\+) (?P<ab>[^\t\n]+)"
    r"|(?:rename|copy) (?:from|to) (?P<rc>.+))$",
    re.M,
)


def patch_paths(mbox: bytes) -> set[str]:
    """Every path the diffs in `mbox` name (a/ and b/ prefixes removed)."""
    paths = set()
    for match in _DIFF_PATHS.finditer(mbox.decode("utf-8", errors="replace")):
        for group in ("a", "b", "ab", "rc"):
            value = match[group]
            if value is None or value.strip() == "/dev/null":
                continue
            value = value.strip().strip('"')
            if group != "rc" and value[:2] in ("a/", "b/"):
                value = value[2:]
            paths.add(value)
    return paths


def check_patch_paths(mbox: bytes) -> None:
    """Raise UnsafePatch for an absolute path, a `..` component, or a path under .git/."""
    for path in sorted(patch_paths(mbox)):
        parts = PurePosixPath(path).parts
        if path.startswith("/") or PurePosixPath(path).is_absolute():
            raise UnsafePatch(f"patch names an absolute path: {path}")
        if ".." in parts:
            raise UnsafePatch(f"patch names a path outside the tree: {path}")
        if any(part.lower() == ".git" for part in parts):
            raise UnsafePatch(f"patch names a path under .git: {path}")


def check_binary_sizes(mbox: bytes, max_bytes: int) -> None:
    """Raise UnsafePatch when the binary hunks of `mbox` make more than `max_bytes` in all
    (or inflate to more than that), before anything is inflated."""
    total = 0
    for hunk in binary_hunks(mbox):
        total += max(hunk.result_bytes, hunk.data_bytes)
        if total > max_bytes:
            raise UnsafePatch(
                f"patch carries binary files of more than {max_bytes >> 20} MiB once inflated "
                f"(a {hunk.kind} hunk of {max(hunk.result_bytes, hunk.data_bytes)} bytes); "
                "not applied: send it as a link, or raise [build] max_binary_mb")


def _limit_git(cgroup: JobCgroup, max_file_bytes: int) -> None:  # in the child before exec
    cgroup.join()
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_am(worktree: Path, mbox: bytes, memory_mb: int, max_file_mb: int
           ) -> subprocess.CompletedProcess[bytes]:
    """`git am -3` of `mbox` in `worktree` within `memory_mb` of memory (a cgroup of its own)
    and files of at most `max_file_mb`; a limit that stopped it is said in its stderr."""
    cgroup = make_job_cgroup(max_processes=256, memory_mb=memory_mb, cpus=1)
    try:
        proc = subprocess.run(
            ["git", "-C", str(worktree), "am", "-3", "--keep-cr", "--quiet"], input=mbox,
            capture_output=True, env=git_env(COMMITTER),
            preexec_fn=functools.partial(_limit_git, cgroup, max_file_mb << 20))  # noqa: PLW1509 - no threads in the child
        hit = cgroup.hit()
        if hit == "memory" or proc.returncode == -9:
            proc.stderr += (f"\nlorelab: git am exceeded its memory limit ({memory_mb} MiB): "
                            "the patch makes files too big to apply\n").encode()
        elif proc.returncode in (-25, 128 + 25):  # SIGXFSZ
            proc.stderr += (f"\nlorelab: git am exceeded its file size limit ({max_file_mb} MiB)"
                            "\n").encode()
        if "memory" in cgroup.missing:
            proc.stderr += (f"\nlorelab: no memory cgroup on this host ({cgroup.reason}): "
                            "git am ran without a memory limit\n").encode()
        return proc
    finally:
        cgroup.remove()


@contextlib.contextmanager
def tree_lock(lock_dir: Path, tree_name: str) -> Iterator[None]:
    """Runs on one tree take turns (worktree bookkeeping is per repository)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{tree_name}.git.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def remove_worktree(repo: Path, path: Path) -> None:
    run_git(repo, "worktree", "remove", "--force", "--force", str(path), check=False)
    shutil.rmtree(path, ignore_errors=True)


def prune_stale_worktrees(repo: Path, worktrees: Path) -> list[Path]:
    """Remove every worktree under `worktrees` (call with the tree lock held); the removed."""
    stale = sorted(p for p in worktrees.iterdir()) if worktrees.exists() else []
    for path in stale:
        remove_worktree(repo, path)
    run_git(repo, "worktree", "prune", check=False)
    return stale


def _conflicts(worktree: Path) -> tuple[Conflict, ...]:
    names = run_git(worktree, "diff", "--name-only", "--diff-filter=U", check=False)
    found = []
    for name in names.stdout.decode(errors="replace").split():
        diff = run_git(worktree, "diff", "--", name, check=False).stdout.decode(errors="replace")
        hunks = diff[diff.find("@@"):] if "@@" in diff else diff
        found.append(Conflict(name, hunks[:MAX_HUNK_CHARS]))
    return tuple(found)


_FAILED_AT = re.compile(r"^Patch failed at (.+)$", re.M)
_NOT_APPLYING = re.compile(r"^error: (?:patch failed: (\S+?):\d+|(\S+): patch does not apply)$",
                           re.M)


def apply_mbox(
    repo: Path, work_dir: Path, tree_name: str, name: str, base: str, mbox: bytes,
    *, max_binary_mb: int = 64, memory_mb: int = 2048, max_file_mb: int = 2048,
) -> ApplyResult:
    """`git am -3` of `mbox` on `base` in a fresh worktree; the result, the worktree gone.
    UnsafePatch for a path outside the tree or binary files over `max_binary_mb`."""
    check_patch_paths(mbox)
    check_binary_sizes(mbox, max_binary_mb << 20)
    worktrees = work_dir / "worktrees" / tree_name
    with tree_lock(work_dir / "locks", tree_name):
        prune_stale_worktrees(repo, worktrees)
        worktrees.mkdir(parents=True, exist_ok=True)
        path = worktrees / name
        run_git(repo, "worktree", "add", "--detach", "--quiet", str(path), base)
        try:
            am = run_am(path, mbox, memory_mb, max_file_mb)
            output = (am.stdout + am.stderr).decode(errors="replace")
            if am.returncode == 0:
                patched = run_git(path, "rev-parse", "HEAD").stdout.decode().strip()
                run_git(repo, "update-ref", f"refs/lorelab/{name}", patched)
                applied = int(run_git(path, "rev-list", "--count", f"{base}..HEAD").stdout)
                return ApplyResult(True, base, patched, applied, output=output)
            applied = int(run_git(path, "rev-list", "--count", f"{base}..HEAD").stdout)
            failed = _FAILED_AT.search(output)
            conflicts = _conflicts(path)
            if not conflicts:  # not even a 3-way merge was possible: name the files
                files = sorted({m[1] or m[2] for m in _NOT_APPLYING.finditer(output)})
                conflicts = tuple(Conflict(f, "") for f in files)
            run_git(path, "am", "--abort", check=False)
            return ApplyResult(False, base, None, applied,
                               failed[1].strip() if failed else None, conflicts, output)
        finally:
            remove_worktree(repo, path)
            run_git(repo, "worktree", "prune", check=False)
