"""The "To reproduce without lorelab" lines of a reply: shell a reader can paste, with no lorelab.

The thread with `b4 am`, the base commit, the exact kernel config (fetched from the status page
when it serves it, else made by the same recipe lorelab used), the build command, and each
benchmark's command line with its parameters and how many runs were made. Pure: the report step
passes what the run recorded.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

LORE_ALL = "https://lore.kernel.org/all/"  # every list lore archives; its /MSGID/raw is one mail
# Files of lorelab's own that a benchmark runs are named by their path in lorelab's source.
SOURCE_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class ConfigRecipe:
    """How the kernel's .config was made: a URL serving it, and the recipe that makes it."""

    url: str  # the status page's copy of the exact .config; "" when there is none
    base: str  # a make target ("tinyconfig") or a file
    fragments: tuple[str, ...]  # merged over it, in order
    sha256: str  # of the resulting .config


@dataclass(frozen=True)
class BenchmarkCommand:
    argv: tuple[str, ...]  # with {scratch} filled as /tmp/lorelab-scratch, {kernel} unfilled
    runs: int  # per kernel
    memcg_max: str | None = None
    # How the program argv[0] is made from source (a C benchmark lorelab compiles), if it is.
    build: str = ""


def apply_lines(msgid: str, revision: int, base: str, *, own_subthread: bool) -> list[str]:
    """The series on its base: `b4 am` of the version's first message (its cover letter, else
    patch 1), then `git am` on the base commit. `-v` (`revision` as b4 reads it) because b4
    takes the newest revision in the thread, and a v2 sent in reply to v1 joins v1's thread,
    possibly after this reply; `--no-parent` when every part of the version is `msgid` or a
    reply to it, so that b4 reads only that subthread, not a discussion the version was sent
    into (a bug report where others post their own fixes)."""
    subthread = " --no-parent" if own_subthread else ""
    lines = [f"b4 am -v {revision}{subthread} -o . {shlex.quote(msgid)}"]
    if base:
        lines.append(f"git checkout {base} && git am ./*.mbx")
    return lines


def raw_apply_lines(msgids: Sequence[str], base: str,
                    keep: Mapping[int, str] | None = None) -> list[str]:
    """The series on its base when no `b4 am` line gives exactly its patches (parts in
    different threads on lore, a thread b4 reads otherwise): each patch's raw mail, in order,
    then `git am` of them. `keep`: for a patch (by number) whose Message-ID names several
    mails, which of them was applied, in a comment after its line."""
    width = max(2, len(str(len(msgids))))  # names that sort in patch order for the glob
    lines = []
    for n, msgid in enumerate(msgids, start=1):
        lines.append(f"curl -s -o {n:0{width}d}.eml {raw_url(msgid)}")
        if keep and n in keep:
            lines.append(f"# {n:0{width}d}.eml: lore gives every mail under this Message-ID; "
                         f"keep only {keep[n]}")
    lines.append(f"git checkout {base} && git am ./*.eml" if base else "git am ./*.eml")
    return lines


def raw_url(msgid: str) -> str:
    """lore's URL of one mail as it was sent, quoted for the shell. A Message-ID is the
    sender's to choose (`<$(reboot)@example.org>` is a valid one): never pasted bare into a
    line a reader runs. The path escapes what public-inbox escapes in its own links."""
    return shlex.quote(LORE_ALL + quote(msgid, safe="-._~!$&'()*+,;=:@") + "/raw")


def build_lines(config: ConfigRecipe, targets: Sequence[str] = ("bzImage",)) -> list[str]:
    lines = []
    if config.url:
        lines.append(f"curl -o .config {config.url}   # sha256 {config.sha256[:12]}")
    else:
        if config.base in ("tinyconfig", "defconfig", "allnoconfig"):
            lines.append(f"make {config.base}")
        else:
            lines.append(f"cp {_shown(config.base)} .config")
        for fragment in config.fragments:
            lines.append(f"scripts/kconfig/merge_config.sh -m .config {_shown(fragment)}")
        lines.append(f"make olddefconfig   # .config sha256 {config.sha256[:12]}")
    lines.append(f"make -j$(nproc) {' '.join(targets)}")
    return lines


def bench_lines(commands: Sequence[BenchmarkCommand], booted: bool) -> list[str]:
    where = "each a fresh boot" if booted else "on this host"
    lines = []
    for command in commands:
        memcg = f", in a memcg of memory.max={command.memcg_max}" if command.memcg_max else ""
        argv = [_word(part) for part in command.argv]
        if command.build:
            lines.append(" ".join(_shown(part) for part in command.build.split()))
            argv[0] = f"./{Path(command.argv[0]).name}"  # what that line made, not our cache
        lines.append(f"# {command.runs} runs per kernel ({where}{memcg}), alternating:")
        lines.append(" ".join(argv))
    return lines


def _word(part: str) -> str:
    # The stand-in tree's "kernel" is the program it builds, where make put it.
    if part == "{kernel}":
        return "arch/x86/boot/bzImage"
    return shlex.quote(_shown(part))


def _shown(part: str) -> str:
    """A path inside lorelab's source as its path there (the reader has no such directory)."""
    path = Path(part)
    if path.is_absolute():
        try:
            return str(path.resolve().relative_to(SOURCE_ROOT))
        except ValueError:
            return part
    return part
