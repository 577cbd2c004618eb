"""Benchmark command lines in a message ("$ hackbench -g 16 -l 1000"), reported with its claims
so that the reader sees what was run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bot.analysis.claims.benchmarks import VM_SCALABILITY_CASE
from bot.analysis.claims.text import Block, BodyLine, Speaker, message_blocks

# Executables whose command lines are worth quoting back, and what counts as an argument.
_COMMANDS = frozenset({
    "memtier_benchmark", "memcached", "hackbench", "fio", "dd", "stress-ng", "sysbench", "perf",
    "usemem", "pgbench", "redis-benchmark", "netperf", "ebizzy", "schbench", "kernbench", "tbench",
    "dbench", "pmbench", "run-mmtests.sh",
    # The stand-in tree's reclaim simulator (bot/demo/simtree.py): its kernel image is the
    # program, run as `arch/x86/boot/bzImage OPS`.
    "bzImage",
})  # fmt: skip
_PROMPT = re.compile(r"^\s*(?:[$#]\s+)?(?:\./)?")
_ARGUMENT = re.compile(r"^(?:[-\d/.~]|\w+=)|^(?:bench|stat|record)$")


@dataclass(frozen=True)
class Command:
    benchmark: str
    text: str  # continuation lines joined
    lines: tuple[BodyLine, ...]
    speaker: Speaker

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "text": self.text,
            "lines": [line.to_dict() for line in self.lines],
            "speaker": self.speaker.to_dict(),
        }


def find_commands(block: Block) -> list[Command]:
    """Command lines of known benchmarks in the block, backslash continuations joined."""
    found = []
    lines = [line for line in block.lines if line.text.strip()]
    i = 0
    while i < len(lines):
        words = _PROMPT.sub("", lines[i].text).split()
        executable = words[0] if words else ""
        if "://" in executable:  # a link to a benchmark is not a command line
            i += 1
            continue
        name = executable.rsplit("/", 1)[-1]
        is_case = bool(VM_SCALABILITY_CASE.fullmatch(name))
        if (name in _COMMANDS or is_case) and (
            is_case or (len(words) > 1 and _ARGUMENT.match(words[1]))
        ):
            spanned = [lines[i]]
            while spanned[-1].text.endswith("\\") and i + 1 < len(lines):
                i += 1
                spanned.append(lines[i])
            text = " ".join(ln.text.strip().rstrip("\\").strip() for ln in spanned)
            found.append(Command(name, _PROMPT.sub("", text), tuple(spanned), block.speaker))
        i += 1
    return found


def find_all_commands(body: str, *, sender: str = "") -> list[Command]:
    """Command lines of known benchmarks in the whole message, quoted ones included."""
    found = []
    for block in message_blocks(body, sender):
        found.extend(find_commands(block))
    return found
