"""The email command language: `#lorelab ...` lines in a reply's body, parsed into commands.

    #lorelab test [BENCH...] [base=REV]   benchmark the series (the named benchmarks, or its
                                          suite's) against its base, or against REV
    #lorelab retest                       run the version's latest test again
    #lorelab stop                         cancel the version's queued and running tests
    #lorelab help                         list the commands

Each command is a line of its own starting with `#lorelab` (any case, leading and trailing
blanks allowed). Quoted text is never read: lines starting with `>` (at any depth, so the
quote under an "On ..., X wrote:" attribution), everything below an Outlook-style
"-----Original Message-----" marker, and the signature (below "-- ", or "--" where a client
trimmed it). A command someone quotes back when answering is therefore not run again. A line
that starts with `#lorelab` but is not a valid command is kept, with the problems found, so
that its sender can be told what was not understood.

Pure: text in, `Command`s out. Who may run what is `bot.commands.policy`; doing it is
`bot.commands.handler`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

PREFIX = "#lorelab"
NAMES = ("test", "retest", "stop", "help")
UNKNOWN = "unknown"  # the name of a line that names no known command

# (syntax, what it does): the answer to `#lorelab help`.
HELP: tuple[tuple[str, str], ...] = (
    ("#lorelab test", "build and benchmark this version (its suite)"),
    ("#lorelab test BENCH... [base=REV]", "only the benchmarks named; base=REV: on REV"),
    ("#lorelab retest", "run its latest test again"),
    ("#lorelab stop", "cancel its queued and running tests"),
    ("#lorelab help", "this list"),
)

_COMMAND_LINE = re.compile(r"\s*#lorelab(?:\s+(?P<rest>.*?))?\s*", re.IGNORECASE)
_OUTLOOK_QUOTE = re.compile(r"\s*-{2,}\s*original message\s*-{2,}\s*", re.IGNORECASE)
_WORD_SEPARATORS = re.compile(r"[\s,]+")
_BENCHMARK_NAME = re.compile(r"[a-z0-9][a-z0-9._+-]*")
# A branch, tag, commit id or `rev~N`; never an option (leading `-`) or a range (`..`).
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/~^-]{0,199}")


@dataclass(frozen=True)
class Command:
    """One `#lorelab` line: what it asks for, or why it was not understood."""

    line: int  # 1-based line number in the body
    text: str  # the line as written, without surrounding blanks
    name: str  # one of NAMES, or UNKNOWN
    benchmarks: tuple[str, ...] = ()  # test: the benchmarks named (lower case), in order
    base: str | None = None  # test: base=REV
    problems: tuple[str, ...] = ()  # each part that was not understood; empty when understood

    @property
    def understood(self) -> bool:
        return not self.problems

    @property
    def arguments(self) -> list[str]:
        """The arguments as recorded: benchmark names, then base=REV."""
        return [*self.benchmarks, *([f"base={self.base}"] if self.base else [])]


def unquoted_lines(body: str) -> list[tuple[int, str]]:
    """(1-based line number, line) for every line of `body` its sender wrote themselves."""
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(body.split("\n"), start=1):
        line = line.rstrip("\r")
        if line in ("-- ", "--") or _OUTLOOK_QUOTE.fullmatch(line):
            break  # the signature, or a top-posted reply's quote: nothing below is a command
        if line.lstrip().startswith(">"):
            continue
        lines.append((number, line))
    return lines


def parse_commands(body: str, benchmarks: Collection[str] | None = None) -> list[Command]:
    """The `#lorelab` lines of a mail body, in order. `benchmarks`: the known benchmark names
    (None: any well-formed name is accepted and checked when the run starts)."""
    commands = []
    for number, line in unquoted_lines(body):
        match = _COMMAND_LINE.fullmatch(line)
        if match is not None:
            commands.append(parse_command(number, line.strip(), match["rest"] or "", benchmarks))
    return commands


def parse_command(number: int, text: str, rest: str,
                  benchmarks: Collection[str] | None) -> Command:
    """One command line: `rest` is what follows `#lorelab`."""
    words = [w for w in _WORD_SEPARATORS.split(rest) if w]
    if not words:
        return Command(number, text, UNKNOWN,
                       problems=(f"no command after {PREFIX}; known: {', '.join(NAMES)}",))
    name, arguments = words[0].lower(), words[1:]
    if name not in NAMES:
        return Command(number, text, UNKNOWN,
                       problems=(f'unknown command "{words[0]}"; known: {", ".join(NAMES)}',))
    if name != "test":
        problems = tuple(f'"{name}" takes no arguments, not "{w}"' for w in arguments)
        return Command(number, text, name, problems=problems)
    return _parse_test(number, text, arguments, benchmarks)


def _parse_test(number: int, text: str, arguments: list[str],
                benchmarks: Collection[str] | None) -> Command:
    known = None if benchmarks is None else {b.lower() for b in benchmarks}
    names: list[str] = []
    base: str | None = None
    problems: list[str] = []
    for word in arguments:
        key, equals, value = word.partition("=")
        if equals and key.lower() == "base":
            if base is not None:
                problems.append("base= given twice")
            elif not _REVISION.fullmatch(value) or ".." in value:
                problems.append(f'"{word}": base= needs a branch, tag or commit, '
                                "e.g. base=v6.18-rc1")
            else:
                base = value
        elif equals:
            problems.append(f'unknown argument "{word}"; test takes benchmark names and base=REV')
        elif not _BENCHMARK_NAME.fullmatch(word.lower()):
            problems.append(f'"{word}" is not a benchmark name')
        elif known is not None and word.lower() not in known:
            problems.append(f'unknown benchmark "{word}"; known: {", ".join(sorted(known))}')
        elif word.lower() not in names:
            names.append(word.lower())
    return Command(number, text, "test", tuple(names), base, tuple(problems))
