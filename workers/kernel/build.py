"""Building a kernel (base or patched) in the sandbox, incrementally and at most once.

- Configuration: a base config (`tinyconfig`, `defconfig`: a make target; else a file), the
  fragments merged over it in order (later lines win, as merge_config.sh does), then
  `make olddefconfig`. The merged .config is written into O= by a sandboxed `cp`, not by us.
- Out-of-tree: one source worktree and one base `O=` directory per (tree, base commit, config).
  Only a trusted build writes the base O= directory: the base commit, when a branch or tag of
  the tree holds it. Every other build (a patch is a stranger's code) runs in a copy of it
  made for that build alone (`cp -a --reflink=auto`), mounted where the base objects are so
  that every path is the same, and deleted afterwards whatever happened: it recompiles only
  what its patches touch, and nothing it plants (objects dated in the future, a binary) is seen
  by the next series.
- ccache (when installed and enabled) under the work directory, written by trusted builds only;
  the others read it (CCACHE_READONLY, the directory mounted read-only).
- Extra compiler flags (`kcflags`, passed as Kbuild's KCFLAGS: an align follow-up's
  -falign-functions=64, workers/kernel/alignment.py) are part of the configuration's hash, so
  such a build has its own artifacts and base O= directory, and ccache hashes the flags.
- An artifact cache keyed by (source tree hash, config hash, compiler version); its build.json
  names the source (tree hash, commit, base, the commits applied), checked before any reuse.
  Outputs are copied out with `workers.kernel.outputs` (no symlink followed, regular files only).
- Every make runs in `workers.kernel.sandbox` (no network, no secrets, limits, read-only
  elsewhere); `[build] wall_seconds` bounds the whole build, all its makes together.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bot.config.build import BuildSettings
from bot.git import git_output
from bot.report.compose.build_log import first_errors
from workers.kernel.outputs import UnsafeOutput, copy_output, open_output, read_output
from workers.kernel.sandbox import Limits, limit_message, minimal_env, run_sandboxed

ARTIFACTS = {"bzImage": "arch/x86/boot/bzImage", "vmlinux": "vmlinux"}
CONFIG_TARGETS = ("tinyconfig", "defconfig", "allnoconfig", "allmodconfig", "allyesconfig")


@dataclass(frozen=True)
class BuildFailure:
    location: str  # "mm/vmscan.c:42:5"; empty for linker and make errors
    message: str
    excerpt: tuple[str, ...]


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    commit: str
    cache_key: str
    cached: bool  # the artifact cache had it: nothing was built
    artifact_dir: str | None  # bzImage, .config and build.json
    seconds: float
    objdir: str
    errors: tuple[BuildFailure, ...] = field(default_factory=tuple)
    log: str = ""  # the captured output (capped)
    isolation: str = ""

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data.pop("log")
        return data


def merge_config(config: str, fragments: list[str]) -> str:
    """`config` with each fragment's settings applied in order (later wins), like
    scripts/kconfig/merge_config.sh before olddefconfig."""
    lines = config.splitlines()
    index: dict[str, int] = {}
    for i, line in enumerate(lines):
        symbol = _symbol(line)
        if symbol:
            index[symbol] = i
    for fragment in fragments:
        for line in fragment.splitlines():
            symbol = _symbol(line)
            if not symbol:
                continue
            if symbol in index:
                lines[index[symbol]] = line
            else:
                index[symbol] = len(lines)
                lines.append(line)
    return "\n".join(lines) + "\n"


def _symbol(line: str) -> str | None:
    line = line.strip()
    if line.startswith("CONFIG_") and "=" in line:
        return line.split("=", 1)[0]
    if line.startswith("# CONFIG_") and line.endswith(" is not set"):
        return line[2:].split()[0]
    return None


def config_fingerprint(settings: BuildSettings, kcflags: str = "") -> str:
    """A hash of everything that decides the configuration, the targets and the extra
    compiler flags."""
    digest = hashlib.sha256()
    base = settings.base_config
    if base in CONFIG_TARGETS:
        digest.update(f"target:{base}\n".encode())
    else:
        digest.update(b"file:" + Path(base).read_bytes() + b"\n")
    for fragment in settings.fragment_files():
        digest.update(b"fragment:" + fragment.read_bytes() + b"\n")
    digest.update(("targets:" + " ".join(settings.targets)).encode())
    if kcflags:  # none: the same hash as before builds had flags
        digest.update(f"\nkcflags:{kcflags}".encode())
    return digest.hexdigest()


@functools.cache
def compiler_version(cc: str = "gcc") -> str:
    result = subprocess.run([cc, "--version"], capture_output=True, text=True)
    return result.stdout.splitlines()[0] if result.returncode == 0 else f"{cc} (unknown)"


def source_tree(repo: Path, commit: str) -> str:
    """The git tree `commit` holds: what was built, whatever the commit is called."""
    return git_output(repo, "rev-parse", f"{commit}^{{tree}}").strip()


def cache_key(tree: str, settings: BuildSettings, kcflags: str = "") -> str:
    """The artifact cache's key of a build of the git tree `tree` (see `source_tree`)."""
    parts = [tree, config_fingerprint(settings, kcflags), compiler_version()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def published(repo: Path, commit: str) -> bool:
    """Whether a branch, tag or remote branch of `repo` holds `commit`: the maintainer's code,
    not a patched commit lorelab made (refs/lorelab/*) that a mail's base-commit could name."""
    return bool(git_output(repo, "for-each-ref", "--count=1", f"--contains={commit}",
                           "--format=%(refname)", "refs/heads", "refs/tags", "refs/remotes",
                           check=False).strip())


def _cached(artifact_dir: Path, tree: str, settings: BuildSettings,
            kcflags: str = "") -> dict[str, object] | None:
    """The cached build's record, when it is of this source, configuration, flags and
    compiler."""
    try:
        meta = json.loads((artifact_dir / "build.json").read_text())
    except (OSError, ValueError):
        return None
    if (meta.get("source_tree") != tree
            or meta.get("config") != config_fingerprint(settings, kcflags)
            or meta.get("compiler") != compiler_version()):
        return None
    return meta


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def limits(settings: BuildSettings, wall_seconds: float | None = None) -> Limits:
    """The sandbox limits of one make of a build ([build] settings)."""
    return Limits(cpu_seconds=settings.cpu_seconds, memory_mb=settings.memory_mb,
                  wall_seconds=settings.wall_seconds if wall_seconds is None else wall_seconds,
                  max_file_mb=settings.max_file_mb, max_log_bytes=settings.max_log_bytes,
                  max_processes=settings.max_processes, max_disk_mb=settings.max_disk_mb,
                  cpus=settings.jobs, io_read_mbps=settings.io_read_mbps,
                  io_write_mbps=settings.io_write_mbps, io_read_iops=settings.io_read_iops,
                  io_write_iops=settings.io_write_iops)


def _checkout(repo: Path, src: Path, commit: str) -> None:
    """The source worktree at `commit`; only files that differ are rewritten (incremental)."""
    if not (src / ".git").exists():
        shutil.rmtree(src, ignore_errors=True)
        git_output(repo, "worktree", "prune", check=False)
        src.parent.mkdir(parents=True, exist_ok=True)
        git_output(repo, "worktree", "add", "--detach", "--quiet", str(src), commit)
        return
    git_output(src, "checkout", "--quiet", "--detach", "--force", commit)
    git_output(src, "clean", "-fdxq")


def _private_copy(base_obj: Path, scratch: Path) -> None:
    """`scratch`, this build's own copy of the base objects (empty when there are none)."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    if base_obj.is_dir() and any(base_obj.iterdir()):
        subprocess.run(["cp", "-a", "--reflink=auto", "--", str(base_obj), str(scratch)],
                       check=True, capture_output=True)
    else:
        scratch.mkdir()


def build_commit(
    repo: Path, tree_name: str, commit: str, base_commit: str, settings: BuildSettings,
    work_dir: Path, kcflags: str = "",
) -> BuildResult:
    """Build `commit` (the base or a patched commit on top of `base_commit`), with `kcflags`
    appended to the compiler's flags (Kbuild's KCFLAGS) when given."""
    tree = source_tree(repo, commit)
    key = cache_key(tree, settings, kcflags)
    artifact_dir = work_dir / "artifacts" / key[:2] / key
    slot = f"{tree_name}-{base_commit[:12]}-{config_fingerprint(settings, kcflags)[:12]}"
    src, base_obj = work_dir / "src" / slot, work_dir / "obj" / slot
    meta = _cached(artifact_dir, tree, settings, kcflags)
    if meta is not None:
        return BuildResult(True, commit, key, True, str(artifact_dir), 0.0, str(base_obj))
    with _locked(work_dir / "locks" / f"{slot}.lock"):
        if _cached(artifact_dir, tree, settings, kcflags) is not None:  # built meanwhile
            return build_commit(repo, tree_name, commit, base_commit, settings, work_dir,
                                kcflags)
        trusted = commit == base_commit and published(repo, commit)
        scratch = None if trusted else work_dir / "scratch" / f"{key[:16]}-{os.getpid()}"
        try:
            return _build(repo, tree_name, commit, base_commit, settings, work_dir, key,
                          src, base_obj, scratch, kcflags)
        finally:
            if scratch is not None:  # every untrusted build's directory goes, failed or not
                shutil.rmtree(scratch, ignore_errors=True)


def _build(repo: Path, tree_name: str, commit: str, base_commit: str, settings: BuildSettings,
           work_dir: Path, key: str, src: Path, base_obj: Path, scratch: Path | None,
           kcflags: str = "") -> BuildResult:
    """One build under the slot lock: in the base O= directory (`scratch` None) or in
    `scratch`, a private copy of it mounted there."""
    started = time.monotonic()
    _checkout(repo, src, commit)
    base_obj.mkdir(parents=True, exist_ok=True)
    if scratch is not None:
        _private_copy(base_obj, scratch)
    objdir = base_obj  # where make sees it; on disk it is `outputs`
    outputs = scratch or base_obj
    state = work_dir / "state"
    state.mkdir(parents=True, exist_ok=True)
    (outputs / ".tmp").mkdir(exist_ok=True)
    ccache_dir = work_dir / "ccache"
    extra: dict[str, str] = {"KBUILD_BUILD_TIMESTAMP": "lorelab",
                             "KBUILD_BUILD_USER": "lorelab", "KBUILD_BUILD_HOST": "lorelab"}
    if kcflags:
        extra["KCFLAGS"] = kcflags
    make_vars = []
    readable = [repo, state]
    if settings.ccache and shutil.which("ccache"):
        ccache_dir.mkdir(parents=True, exist_ok=True)
        extra.update(CCACHE_DIR=str(ccache_dir), CCACHE_BASEDIR=str(work_dir / "src"),
                     CCACHE_NOHASHDIR="1")
        if scratch is not None:
            extra.update(CCACHE_READONLY="1", CCACHE_NOSTATS="1",
                         CCACHE_TEMPDIR=str(objdir / ".tmp"))
            readable.append(ccache_dir)
        make_vars.append("CC=ccache gcc")
    env = minimal_env(objdir / ".tmp", extra)
    writable = [objdir] + ([ccache_dir] if "CCACHE_DIR" in extra and scratch is None else [])
    deadline = started + settings.wall_seconds
    stopped: list[str] = []
    isolation = ""

    def run(*argv: str) -> tuple[bool, str]:
        # The worktree's .git file points into the repository: make runs git there
        # (scripts/setlocalversion), so it stays readable wherever it is.
        nonlocal isolation
        result = run_sandboxed(list(argv), cwd=src, writable=writable, readable=readable,
                               limits=limits(settings, max(1.0, deadline - time.monotonic())),
                               env=env, readonly_root=settings.readonly_root,
                               binds={objdir: scratch} if scratch is not None else None,
                               disk=[outputs])
        isolation = result.isolation
        if result.limit:
            stopped.append(result.limit)
        return result.returncode == 0 and not result.limit, result.output

    def make(*args: str) -> tuple[bool, str]:
        return run("make", f"O={objdir}", *make_vars, *args)

    log: list[str] = []
    ok = _configure(make, run, settings, outputs, objdir / ".config", state / f"{key}.config",
                    state / f"{objdir.name}.configured", scratch is None, log)
    if ok:
        ok, out = make(f"-j{max(1, settings.jobs)}", *settings.targets)
        log.append(out)
    seconds = time.monotonic() - started
    text = "".join(log)
    if not ok:
        return _failed(commit, key, seconds, str(base_obj), text, isolation, src, stopped,
                       settings)
    staging = work_dir / "artifacts" / key[:2] / f"{key}.tmp{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for target in settings.targets:
            with contextlib.suppress(FileNotFoundError):  # a target that is not a file
                relative = ARTIFACTS.get(target, target)
                copy_output(outputs, relative, staging / Path(relative).name)
        copy_output(outputs, ".config", staging / "config")
    except (UnsafeOutput, FileNotFoundError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        return BuildResult(False, commit, key, False, None, seconds, str(base_obj),
                           (BuildFailure("", f"build output refused: {exc}", ()),), text,
                           isolation)
    applied = git_output(repo, "rev-list", "--reverse", f"{base_commit}..{commit}").split()
    (staging / "build.json").write_text(json.dumps({
        "commit": commit, "base": base_commit, "tree": tree_name, "objdir": str(base_obj),
        "source_tree": source_tree(repo, commit), "applied": applied,
        "compiler": compiler_version(), "config": config_fingerprint(settings, kcflags),
        "kcflags": kcflags, "seconds": round(seconds, 3), "targets": settings.targets,
    }, indent=2))
    artifact_dir = work_dir / "artifacts" / key[:2] / key
    shutil.rmtree(artifact_dir, ignore_errors=True)
    os.rename(staging, artifact_dir)
    return BuildResult(True, commit, key, False, str(artifact_dir), seconds, str(base_obj),
                       (), text, isolation)


def _failed(commit: str, key: str, seconds: float, objdir: str, text: str, isolation: str,
            src: Path, stopped: list[str], settings: BuildSettings) -> BuildResult:
    """A failed build's result: the limit that stopped it, else its first compiler errors."""
    if stopped:
        message = limit_message(stopped[0], limits(settings)).replace(
            "killed: it", "build", 1)
        errors: tuple[BuildFailure, ...] = (BuildFailure("", message, ()),)
    else:
        errors = tuple(BuildFailure(e.location, e.message, e.excerpt)
                       for e in first_errors(text, source_dir=str(src)))
    return BuildResult(False, commit, key, False, None, seconds, objdir, errors, text,
                       isolation)


def _configure(make: Callable[..., tuple[bool, str]], run: Callable[..., tuple[bool, str]],
               settings: BuildSettings, outputs: Path, config: Path, merged_file: Path,
               stamp: Path, trusted: bool, log: list[str]) -> bool:
    """The base config, the fragments merged in, then olddefconfig. The stamp (ours, outside
    O=) says the base O= directory was configured for this configuration: a copy of it then
    only needs olddefconfig (the patched Kconfig may differ), and .config keeps its mtime."""
    fingerprint = config_fingerprint(settings)
    if stamp.exists() and stamp.read_text() == fingerprint and _has_config(outputs):
        ok, out = make("olddefconfig")
        log.append(out)
        return ok
    if settings.base_config in CONFIG_TARGETS:
        ok, out = make(settings.base_config)
        log.append(out)
        if not ok:
            return False
        try:
            base_text = read_output(outputs, ".config").decode(errors="replace")
        except (UnsafeOutput, FileNotFoundError) as exc:
            log.append(f"\nlorelab: .config refused: {exc}\n")
            return False
    else:
        base_text = Path(settings.base_config).read_text()
    merged_file.write_text(merge_config(base_text,
                                        [f.read_text() for f in settings.fragment_files()]))
    # Written by the sandbox, not by us: .config may be anything the build left there.
    ok, out = run("sh", "-c", 'cmp -s "$0" "$1" || cat "$0" > "$1"', str(merged_file),
                  str(config))
    log.append(out)
    if ok:
        ok, out = make("olddefconfig")
        log.append(out)
    merged_file.unlink(missing_ok=True)
    if ok and trusted:
        stamp.write_text(fingerprint)
    return ok


def _has_config(outputs: Path) -> bool:
    try:
        with open_output(outputs, ".config"):
            return True
    except (UnsafeOutput, FileNotFoundError):
        return False
