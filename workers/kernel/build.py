"""Building a kernel (base or patched) in the sandbox, incrementally and at most once.

- Configuration: a base config (`tinyconfig`, `defconfig`: a make target; else a file), the
  fragments merged over it in order (later lines win, as merge_config.sh does), then
  `make olddefconfig`.
- Out-of-tree: one source worktree and one `O=` directory per (tree, base commit, config),
  reused by every build on that base, so that the patched build after the base build
  recompiles only what the patches touch (git checkout changes only the files that differ).
- ccache (when installed and enabled) under the work directory.
- An artifact cache keyed by (source tree hash, config hash, compiler version): a tree that
  was built once with the same configuration and compiler is not built again.
- Every make runs in `workers.kernel.sandbox` (no network, no secrets, limits, read-only elsewhere).
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
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bot.config.build import BuildSettings
from bot.git import git_output
from bot.report.compose.build_log import first_errors
from workers.kernel.sandbox import Limits, minimal_env, run_sandboxed

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


def config_fingerprint(settings: BuildSettings) -> str:
    """A hash of everything that decides the configuration and the targets."""
    digest = hashlib.sha256()
    base = settings.base_config
    if base in CONFIG_TARGETS:
        digest.update(f"target:{base}\n".encode())
    else:
        digest.update(b"file:" + Path(base).read_bytes() + b"\n")
    for fragment in settings.fragment_files():
        digest.update(b"fragment:" + fragment.read_bytes() + b"\n")
    digest.update(("targets:" + " ".join(settings.targets)).encode())
    return digest.hexdigest()


@functools.cache
def compiler_version(cc: str = "gcc") -> str:
    result = subprocess.run([cc, "--version"], capture_output=True, text=True)
    return result.stdout.splitlines()[0] if result.returncode == 0 else f"{cc} (unknown)"


def cache_key(repo: Path, commit: str, settings: BuildSettings) -> str:
    tree_hash = git_output(repo, "rev-parse", f"{commit}^{{tree}}").strip()
    parts = [tree_hash, config_fingerprint(settings), compiler_version()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _limits(settings: BuildSettings) -> Limits:
    return Limits(cpu_seconds=settings.cpu_seconds, memory_mb=settings.memory_mb,
                  wall_seconds=settings.wall_seconds, max_file_mb=settings.max_file_mb,
                  max_log_bytes=settings.max_log_bytes)


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


def build_commit(
    repo: Path, tree_name: str, commit: str, base_commit: str, settings: BuildSettings,
    work_dir: Path,
) -> BuildResult:
    """Build `commit` (the base or a patched commit on top of `base_commit`)."""
    key = cache_key(repo, commit, settings)
    artifact_dir = work_dir / "artifacts" / key[:2] / key
    if (artifact_dir / "build.json").exists():
        return BuildResult(True, commit, key, True, str(artifact_dir), 0.0,
                           json.loads((artifact_dir / "build.json").read_text())["objdir"])
    slot = f"{tree_name}-{base_commit[:12]}-{config_fingerprint(settings)[:12]}"
    src, objdir = work_dir / "src" / slot, work_dir / "obj" / slot
    with _locked(work_dir / "locks" / f"{slot}.lock"):
        if (artifact_dir / "build.json").exists():  # built while we waited for the lock
            return build_commit(repo, tree_name, commit, base_commit, settings, work_dir)
        started = time.monotonic()
        _checkout(repo, src, commit)
        objdir.mkdir(parents=True, exist_ok=True)
        tmp = objdir / ".tmp"
        tmp.mkdir(exist_ok=True)
        ccache_dir = work_dir / "ccache"
        extra: dict[str, str] = {"KBUILD_BUILD_TIMESTAMP": "lorelab",
                                 "KBUILD_BUILD_USER": "lorelab", "KBUILD_BUILD_HOST": "lorelab"}
        make_vars = []
        if settings.ccache and shutil.which("ccache"):
            ccache_dir.mkdir(parents=True, exist_ok=True)
            extra.update(CCACHE_DIR=str(ccache_dir), CCACHE_BASEDIR=str(work_dir / "src"),
                         CCACHE_NOHASHDIR="1")
            make_vars.append("CC=ccache gcc")
        env = minimal_env(tmp, extra)
        writable = [objdir] + ([ccache_dir] if "CCACHE_DIR" in extra else [])

        def make(*args: str) -> tuple[bool, str, str]:
            # The worktree's .git file points into the repository: make runs git there
            # (scripts/setlocalversion), so it stays readable wherever it is.
            result = run_sandboxed(["make", f"O={objdir}", *make_vars, *args], cwd=src,
                                   writable=writable, readable=[repo], limits=_limits(settings),
                                   env=env, readonly_root=settings.readonly_root)
            return result.returncode == 0 and not result.timed_out, result.output, \
                result.isolation

        log: list[str] = []
        ok, out, isolation = _configure(make, settings, objdir, log)
        if ok:
            ok, out, isolation = make(f"-j{max(1, settings.jobs)}", *settings.targets)
            log.append(out)
        seconds = time.monotonic() - started
        text = "".join(log)
        if not ok:
            errors = tuple(BuildFailure(e.location, e.message, e.excerpt)
                           for e in first_errors(text, source_dir=str(src)))
            return BuildResult(False, commit, key, False, None, seconds, str(objdir),
                               errors, text, isolation)
        staging = artifact_dir.with_name(f"{key}.tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for target in settings.targets:
            produced = objdir / ARTIFACTS.get(target, target)
            if produced.exists():
                shutil.copy2(produced, staging / Path(produced).name)
        shutil.copy2(objdir / ".config", staging / "config")
        (staging / "build.json").write_text(json.dumps({
            "commit": commit, "base": base_commit, "tree": tree_name, "objdir": str(objdir),
            "compiler": compiler_version(), "config": config_fingerprint(settings),
            "seconds": round(seconds, 3), "targets": settings.targets,
        }, indent=2))
        shutil.rmtree(artifact_dir, ignore_errors=True)
        os.rename(staging, artifact_dir)
        return BuildResult(True, commit, key, False, str(artifact_dir), seconds, str(objdir),
                           (), text, isolation)


def _configure(make, settings: BuildSettings, objdir: Path, log: list[str]):  # type: ignore[no-untyped-def]
    """The base config, the fragments merged in, then olddefconfig."""
    config = objdir / ".config"
    stamp = objdir / ".lorelab-config"
    fingerprint = config_fingerprint(settings)
    if config.exists() and stamp.exists() and stamp.read_text() == fingerprint:
        # This O= directory was configured for this base and configuration: the patched tree
        # only needs olddefconfig (its Kconfig may differ), and .config keeps its mtime.
        ok, out, isolation = make("olddefconfig")
        log.append(out)
        return ok, out, isolation
    if settings.base_config in CONFIG_TARGETS:
        ok, out, isolation = make(settings.base_config)
        log.append(out)
        if not ok:
            return ok, out, isolation
        base_text = config.read_text()
    else:
        base_text = Path(settings.base_config).read_text()
    merged = merge_config(base_text, [f.read_text() for f in settings.fragment_files()])
    if not config.exists() or config.read_text() != merged:
        config.write_text(merged)
    ok, out, isolation = make("olddefconfig")
    log.append(out)
    if ok:
        stamp.write_text(fingerprint)
    return ok, out, isolation
