"""Forced function alignment, for the builds of an align follow-up (docs/replies.md,
"Follow-ups: is it alignment").

A change that only moves code can move a benchmark by several percent; building both kernels
with every function aligned to a cache line tells such an effect from a real one. The kernel has
an option for it, `CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B` (earlier `_32B`), used when the tree
at the base commit has it, merged as a shipped config fragment (bot/config/kernel/); a tree
without it gets `KCFLAGS=-falign-functions=64`, which Kbuild appends to the compiler's flags.
Either way the build's configuration or flags differ from the ordinary build's, so the
artifact cache, the base `O=` directory and ccache keep the two apart (workers/kernel/build.py).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from bot.config.build import BuildSettings
from bot.git import GitError, git_output

# Where the option is defined: lib/ since it was added; arch/x86/ in case it moves there.
KCONFIG_FILES = ("lib/Kconfig.debug", "arch/x86/Kconfig.debug")
# The options, preferred first, each with the shipped fragment that sets it (and EXPERT).
OPTIONS = {"DEBUG_FORCE_FUNCTION_ALIGN_64B": "force-function-align-64b",
           "DEBUG_FORCE_FUNCTION_ALIGN_32B": "force-function-align-32b"}
ALIGN_FLAGS = "-falign-functions=64"


@dataclass(frozen=True)
class ForcedAlignment:
    """How a build forces function alignment: a Kconfig option, or compiler flags."""

    option: str = ""  # "DEBUG_FORCE_FUNCTION_ALIGN_64B", when the tree has it
    kcflags: str = ""  # "-falign-functions=64" otherwise

    @classmethod
    def from_shown(cls, shown: str) -> ForcedAlignment:
        """Back from what a build recorded (`shown`)."""
        if shown.startswith("CONFIG_"):
            return cls(option=shown.removeprefix("CONFIG_").removesuffix("=y"))
        return cls(kcflags=shown.removeprefix("KCFLAGS="))

    @property
    def shown(self) -> str:
        """As the build record and the reply say it: "CONFIG_...=y" or "KCFLAGS=..."."""
        return f"CONFIG_{self.option}=y" if self.option else f"KCFLAGS={self.kcflags}"

    def build_settings(self, settings: BuildSettings) -> BuildSettings:
        """`settings` with the option's fragment merged last (its own configuration, so its
        own cache key and base O= directory); unchanged for KCFLAGS."""
        if not self.option:
            return settings
        return dataclasses.replace(settings, fragments=[*settings.fragments,
                                                        OPTIONS[self.option]])

    def shown_settings(self, settings: BuildSettings) -> BuildSettings:
        """`build_settings` as a reader's reproduce lines show them: the flags on make's
        command line, where Kbuild takes them as it takes them from the environment."""
        aligned = self.build_settings(settings)
        if not self.kcflags:
            return aligned
        return dataclasses.replace(aligned, targets=[f"KCFLAGS={self.kcflags}",
                                                     *aligned.targets])

    def not_taken(self, artifact_dir: str | None) -> str | None:
        """Why the build in `artifact_dir` is not aligned as asked, or None: olddefconfig
        drops an option whose dependencies are not met, and then nothing was forced."""
        if not self.option or artifact_dir is None:
            return None
        config = (Path(artifact_dir) / "config").read_text(errors="replace")
        if self.shown in config.splitlines():
            return None
        return (f"{self.shown} is not in the built .config: olddefconfig dropped it (it "
                "depends on EXPERT and the architecture), so nothing was aligned")


def forced_alignment(repo: Path, commit: str) -> ForcedAlignment:
    """The way to force function alignment on the tree at `commit`: its Kconfig option, the
    64-byte one before the 32-byte one, else -falign-functions=64 through KCFLAGS."""
    defined: set[str] = set()
    for path in KCONFIG_FILES:
        try:
            text = git_output(repo, "show", f"{commit}:{path}")
        except GitError:  # no such file in this tree
            continue
        defined.update(re.findall(r"^config\s+(\S+)\s*$", text, re.M))
    option = next((name for name in OPTIONS if name in defined), "")
    return ForcedAlignment(option=option, kcflags="" if option else ALIGN_FLAGS)
