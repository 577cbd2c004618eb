"""The email command language: `#lorelab ...` lines in a reply's body, parsed into commands.

    #lorelab test [BENCH[:k=v...]...] [base=REV] [pairs=N] [align]
                                          benchmark the series (the named benchmarks with their
                                          parameters, or its suite's) against its base, or
                                          against REV; pairs=N: at most N pairs a campaign;
                                          align: rebuild both kernels with forced function
                                          alignment after the latest review (a follow-up).
                                          In a reviewer's own reply carrying an inline diff:
                                          that diff as a third arm (compare)
    #lorelab retest                       run the version's latest test again
    #lorelab stop                         cancel the version's queued and running tests
    #lorelab bisect                       find the patch that brings the latest review's change
    #lorelab compare MSGID                benchmark the inline diff of reply MSGID beside the
                                          series, as a third arm
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
from urllib.parse import unquote

from bot.benchmarks.spec import from_spec

PREFIX = "#lorelab"
NAMES = ("test", "retest", "stop", "bisect", "compare", "help")
UNKNOWN = "unknown"  # the name of a line that names no known command
# pairs=N: fewer cannot reach the overall 5% level (bot.analysis.calibration); more than the
# most is a lab's week, not a request.
MIN_PAIRS, MAX_PAIRS = 4, 100

# (syntax, what it does): the answer to `#lorelab help`.
HELP: tuple[tuple[str, str], ...] = (
    ("#lorelab test", "build and benchmark this version (its suite)"),
    ("#lorelab test BENCH[:k=v...]... [base=REV]",
     "only the benchmarks named, with these parameters; base=REV: on REV"),
    ("#lorelab test ... pairs=N",
     f"at most N pairs of boots a benchmark ({MIN_PAIRS} to {MAX_PAIRS})"),
    ("#lorelab test [BENCH...] align",
     "does the latest review's change survive forced function alignment?"),
    ("#lorelab test (in your reply with a diff)",
     "benchmark your diff beside the series, as a third kernel"),
    ("#lorelab bisect", "which patch brings the latest review's change?"),
    ("#lorelab compare MSGID", "benchmark the diff in reply MSGID beside the series"),
    ("#lorelab retest", "run its latest test again"),
    ("#lorelab stop", "cancel its queued and running tests"),
    ("#lorelab help", "this list"),
)

_COMMAND_LINE = re.compile(r"\s*#lorelab(?:\s+(?P<rest>.*?))?\s*", re.IGNORECASE)
_OUTLOOK_QUOTE = re.compile(r"\s*-{2,}\s*original message\s*-{2,}\s*", re.IGNORECASE)
_WORD_SEPARATORS = re.compile(r"[\s,]+")
_BENCHMARK_NAME = re.compile(r"[a-z0-9][a-z0-9._+-]*")
_PARAMETER = re.compile(r"[a-z_][a-z0-9_]*=[A-Za-z0-9._+-]+")
# A Message-ID's text (without its angle brackets), or a lore URL that ends in one.
_MESSAGE_ID = re.compile(r"[^\s<>@/]+@[^\s<>@/]+")
_MESSAGE_URL = re.compile(r"https?://[^/\s]+/(?:[^/\s]+/)*?(?P<msgid>[^/\s]+(?:@|%40)[^/\s]+)/?")
# A branch, tag, commit id or `rev~N`; never an option (leading `-`) or a range (`..`).
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/~^-]{0,199}")


@dataclass(frozen=True)
class Command:
    """One `#lorelab` line: what it asks for, or why it was not understood."""

    line: int  # 1-based line number in the body
    text: str  # the line as written, without surrounding blanks
    name: str  # one of NAMES, or UNKNOWN
    # test: the benchmarks named, in order, as specs ("readtwice:mb=512"; names in lower case)
    benchmarks: tuple[str, ...] = ()
    base: str | None = None  # test: base=REV
    pairs: int | None = None  # test: pairs=N
    align: bool = False  # test: an align follow-up
    alternative: str | None = None  # compare: the Message-ID of the reply with the diff
    problems: tuple[str, ...] = ()  # each part that was not understood; empty when understood

    @property
    def understood(self) -> bool:
        return not self.problems

    @property
    def arguments(self) -> list[str]:
        """The arguments as recorded: benchmarks, then base=REV, pairs=N, align; the
        alternative's Message-ID."""
        return [*self.benchmarks, *([f"base={self.base}"] if self.base else []),
                *([f"pairs={self.pairs}"] if self.pairs is not None else []),
                *(["align"] if self.align else []),
                *([f"<{self.alternative}>"] if self.alternative else [])]


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
    if name == "test":
        return _parse_test(number, text, arguments, benchmarks)
    if name == "compare":
        return _parse_compare(number, text, arguments)
    problems = tuple(f'"{name}" takes no arguments, not "{w}"' for w in arguments)
    return Command(number, text, name, problems=problems)


def _parse_compare(number: int, text: str, arguments: list[str]) -> Command:
    example = 'e.g. "#lorelab compare <20261130.1234-1-rita@example.org>"'
    if len(arguments) != 1:
        return Command(number, text, "compare", problems=(
            f"compare takes one Message-ID, of the reply that carries the diff; {example}",))
    word = arguments[0]
    url = _MESSAGE_URL.fullmatch(word)
    msgid = unquote(url["msgid"]) if url else word.strip("<>")
    if not _MESSAGE_ID.fullmatch(msgid):
        return Command(number, text, "compare",
                       problems=(f'"{word}" is not a Message-ID; {example}',))
    return Command(number, text, "compare", alternative=msgid)


def _parse_test(number: int, text: str, arguments: list[str],
                benchmarks: Collection[str] | None) -> Command:
    known = None if benchmarks is None else {b.lower() for b in benchmarks}
    names: list[str] = []
    base: str | None = None
    pairs: int | None = None
    align = False
    problems: list[str] = []
    for word in arguments:
        key, equals, value = word.partition("=")
        name, colon, parameters = word.partition(":")
        if equals and not colon and key.lower() == "base":
            if base is not None:
                problems.append("base= given twice")
            elif not _REVISION.fullmatch(value) or ".." in value:
                problems.append(f'"{word}": base= needs a branch, tag or commit, '
                                "e.g. base=v6.18-rc1")
            else:
                base = value
        elif equals and not colon and key.lower() == "pairs":
            if pairs is not None:
                problems.append("pairs= given twice")
            elif not value.isdigit() or not MIN_PAIRS <= int(value) <= MAX_PAIRS:
                problems.append(f'"{word}": pairs= needs a number from {MIN_PAIRS} to '
                                f"{MAX_PAIRS}")
            else:
                pairs = int(value)
        elif word.lower() == "align":
            align = True
        elif equals and not colon:
            problems.append(f'unknown argument "{word}"; test takes benchmarks '
                            "(BENCH:key=value...), base=REV, pairs=N and align")
        elif problem := _benchmark_problem(name.lower(), parameters if colon else None, known):
            problems.append(problem.replace("{word}", word))
        elif (spec := name.lower() + colon + parameters) not in names:
            names.append(spec)
    if align and base is not None:
        problems.append("align follows the latest review, on its base: base= does not go "
                        "with it")
    return Command(number, text, "test", tuple(names), base, pairs, align,
                   problems=tuple(problems))


def _benchmark_problem(name: str, parameters: str | None,
                       known: set[str] | None) -> str | None:
    """What is wrong with a benchmark written NAME or NAME:key=value:..., if anything
    ("{word}" stands for it as written); its parameters are checked against the benchmark's
    own when the known names are given."""
    if not _BENCHMARK_NAME.fullmatch(name):
        return '"{word}" is not a benchmark name'
    if parameters is not None and not all(_PARAMETER.fullmatch(p.lower())
                                          for p in parameters.split(":")):
        return '"{word}": parameters are written BENCH:key=value:key=value'
    if known is None:
        return None
    if name not in known:
        return f'unknown benchmark "{{word}}"; known: {", ".join(sorted(known))}'
    try:
        from_spec(f"{name}:{parameters}" if parameters else name)
    except (ValueError, TypeError) as exc:
        return f'"{{word}}": {exc}'
    return None
