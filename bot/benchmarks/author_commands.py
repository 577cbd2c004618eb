"""The author's own experiment: the benchmark command lines a series' author stated, as the lab's
benchmarks with the author's parameters, or why the lab cannot run them.

An author writes "hackbench 125 process 3000", "memtier_benchmark --ratio=1:0 -t 16 ...", a
vm-scalability case name, "Tested in a 4G memcg", "Average result of 18 test runs". Each command
line (bot.analysis.claims.command_lines) in the author's own words becomes an `AuthorCommand`:
mapped, with the spec the lab runs (bot.benchmarks.spec: `hackbench:groups=125:loops=3000:pipe=0`)
and which of the author's parameters it carries, or not mapped, with why ("not installed in the
lab", "no such benchmark in the lab", "parameter -F not supported"). A command is mapped only
when every parameter it states is kept: an experiment that drops one is not the author's.

The author's words are those whose speaker is the author: the unquoted text of a message the
author sent, and text quoted under an attribution to the author (by address, or by name when it
gives none); a reviewer's command quoted in the author's reply is not the author's. Pure: which
programs the lab has installed is the caller's `installed` predicate.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.analysis.claims.benchmarks import VM_SCALABILITY_CASE
from bot.analysis.claims.command_lines import Command, find_all_commands
from bot.analysis.claims.text import Block, Speaker, message_blocks

NOT_INSTALLED = "not installed in the lab"
NO_SUCH_BENCHMARK = "no such benchmark in the lab"
# The most pairs an author's "N runs" is taken for: more is a typo or a different experiment.
MOST_PAIRS = 1000


@dataclass(frozen=True)
class AuthorCommand:
    """One command line of the author's, and what the lab makes of it."""

    text: str  # as the author wrote it, continuation lines joined
    program: str  # hackbench, memtier_benchmark, case-lru-file-readtwice, bzImage, ...
    spec: str | None = None  # what the lab runs; None: not mapped
    kept: tuple[str, ...] = ()  # the author's parameters the spec carries, as written
    why_not: str | None = None  # why it is not mapped

    def to_option(self) -> dict[str, Any]:
        """The form a run's options["commands"] keep."""
        found: dict[str, Any] = {"text": self.text, "program": self.program}
        if self.spec is not None:
            found.update(spec=self.spec, kept=list(self.kept))
        else:
            found["why_not"] = self.why_not
        return found

    @classmethod
    def from_option(cls, option: dict[str, Any]) -> AuthorCommand:
        return cls(text=str(option["text"]), program=str(option.get("program", "")),
                   spec=option.get("spec"), kept=tuple(option.get("kept", ())),
                   why_not=option.get("why_not"))


@dataclass(frozen=True)
class AuthorExperiment:
    """The author's commands, and how many runs of each the author said they made."""

    commands: tuple[AuthorCommand, ...]
    pairs: int | None = None  # "18 runs": the campaign's most pairs; None when not stated
    memcg_max: str | None = None  # "in a 4G memcg", as memory.max takes it

    @property
    def benchmarks(self) -> list[str]:
        """The specs to run, each once, in the order the author stated them."""
        return list(dict.fromkeys(c.spec for c in self.commands if c.spec is not None))

    @property
    def options(self) -> dict[str, Any]:
        """An experiment run's options: each command's text, spec or why not, and the pairs."""
        found: dict[str, Any] = {"commands": [c.to_option() for c in self.commands]}
        if self.pairs is not None:
            found["pairs"] = self.pairs
        return found


@dataclass(frozen=True)
class AuthorMessage:
    """A message whose author's words are read: its body and its From."""

    body: str
    sender: str  # "Name <email>"


Installed = Callable[[str], bool]


def author_experiment(messages: Iterable[AuthorMessage], author_email: str,
                      installed: Installed, author_name: str = "") -> AuthorExperiment:
    """The experiment the author stated across `messages` (the cover letter, the author's
    replies): each command of theirs mapped or not, the runs and the memcg size they gave.

    Quoted text is the author's when its attribution gives the author's address, or, giving
    none, the author's name. A vm-scalability case the author names in prose (or links to) is
    a command too: a case is run by its name alone. The same command stated twice (quoted back
    in a later reply) is one command."""
    author = Speaker("replier", 0, author_name.strip() or None, author_email.strip().lower())
    commands: list[Command] = []
    blocks: list[Block] = []
    for message in messages:
        blocks += [b for b in message_blocks(message.body, message.sender)
                   if _same_person(b.speaker, author)]
        commands += [c for c in find_all_commands(message.body, sender=message.sender)
                     if _same_person(c.speaker, author)]
    prose = "\n".join(line.text for block in blocks for line in block.lines)
    memcg = stated_memcg(prose)
    texts = dict.fromkeys(c.text for c in commands)
    stated = {c.benchmark for c in commands}
    texts.update(dict.fromkeys(case for case in VM_SCALABILITY_CASE.findall(prose)
                               if case not in stated))
    return AuthorExperiment(
        commands=tuple(map_command(text, installed, memcg_max=memcg) for text in texts),
        pairs=stated_runs(prose), memcg_max=memcg)


def _same_person(speaker: Speaker, author: Speaker) -> bool:
    if speaker.email:
        return speaker.email.lower() == author.email
    return bool(author.name and speaker.name) and \
        str(speaker.name).casefold() == str(author.name).casefold()


# --------------------------------------------------------------------------------------------
# What the author's prose says about the runs


_RUNS = (
    re.compile(r"\b(\d+)\s+(?:test\s+|benchmark\s+|separate\s+)?(?:runs|iterations)\b", re.I),
    re.compile(r"\b(?:repeat(?:ed)?|measured|mesured|ran|run|tested)\s+(?:it\s+)?(\d+)\s+times\b",
               re.I),
    re.compile(r"\b(\d+)\s+times\s+each\b", re.I),
)
_SIZE = r"(\d+(?:\.\d+)?)\s*([KMGT])(?:i?B)?"
_MEMCG = (
    re.compile(_SIZE + r"\s+(?:memory\s+)?(?:memcg|cgroup)\b", re.I),
    re.compile(r"\b(?:memcg|cgroup)\s+(?:of|with|limited\s+to|limit(?:ed)?(?:\s+(?:of|to))?)\s+"
               + _SIZE, re.I),
    re.compile(r"\bmemory\.(?:max|limit_in_bytes)\s*(?:=|of|to)?\s*" + _SIZE, re.I),
    re.compile(r"\becho\s+" + _SIZE + r"\s*>\s*\S*memory\.(?:max|limit_in_bytes)\b", re.I),
)


def stated_runs(prose: str) -> int | None:
    """N from "18 test runs", "repeated 10 times", "mesured 10 times each"; the first one
    stated, None when none (or an implausible number) is."""
    found = sorted((m.start(), int(m.group(1))) for pattern in _RUNS
                   for m in pattern.finditer(prose))
    return next((n for _, n in found if 2 <= n <= MOST_PAIRS), None)


def stated_memcg(prose: str) -> str | None:
    """The memcg size the author tested in, as memory.max takes it ("4G"): from "in a 4G
    memcg", "memcg of 512MB", "memory.max=2G", "echo 2G > memory.max"; None when none is
    stated."""
    found = sorted((m.start(), m) for pattern in _MEMCG for m in pattern.finditer(prose))
    if not found:
        return None
    match = found[0][1]
    number, unit = match.group(1), match.group(2).upper()
    if "." in number:  # memory.max takes whole numbers: say it in the next unit down (bytes)
        smaller = ["", "K", "M", "G"]["KMGT".index(unit)]
        number, unit = str(round(float(number) * 1024)), smaller
    return f"{number}{unit}"


# --------------------------------------------------------------------------------------------
# One command line


# Where the command ends and the shell takes over: a pipe, a redirection, a background job.
_SHELL_TAIL = re.compile(r"^(?:\||\|\||&&|;|&|\d?>>?\S*|<\S*|2>&1)$")


def command_words(text: str) -> list[str]:
    """The command's words, the shell's own tail (`| tee log`, `> out`, `&`) cut off."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote: the author's line as it stands
        words = text.split()
    for i, word in enumerate(words):
        if _SHELL_TAIL.match(word):
            return words[:i]
    return words


def map_command(text: str, installed: Installed, *, memcg_max: str | None = None
                ) -> AuthorCommand:
    """The lab's benchmark for one command line of the author's, or why there is none."""
    words = command_words(text)
    program = words[0].rsplit("/", 1)[-1] if words else ""
    mapper = _MAPPERS.get(program)
    if mapper is None and VM_SCALABILITY_CASE.fullmatch(program):
        mapper = _vm_scalability_case
    if mapper is None:
        return AuthorCommand(text, program, why_not=_UNMAPPED.get(
            program, f"{program or text}: {NO_SUCH_BENCHMARK}"))
    return mapper(text, program, words[1:], installed, memcg_max)


@dataclass
class _Options:
    """A command's options read by their spellings, for the mappers below."""

    values: dict[str, str] = field(default_factory=dict)  # canonical name -> value
    flags: list[str] = field(default_factory=list)  # canonical names of flags given
    kept: list[str] = field(default_factory=list)  # as written
    positional: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # as written


def _read_options(words: Sequence[str], valued: dict[str, str],
                  flags: dict[str, str]) -> _Options:
    """Read `words` with `valued` ({spelling: name} of options that take a value: "-g",
    "--groups") and `flags` ({spelling: name}); `-g16`, `-g 16`, `--groups=16` alike, and a
    long option by any prefix that names one option only (`--thread` for `--threads`), as
    getopt_long reads them."""
    found = _Options()
    known = [*valued, *flags]
    i = 0
    while i < len(words):
        word = original = words[i]
        spelling, equals, attached = word.partition("=") if word.startswith("--") else \
            (word, "", "")
        if spelling.startswith("--") and spelling not in known:
            matches = [k for k in known if k.startswith(spelling)]
            if len(matches) == 1:
                spelling = matches[0]
                word = spelling + equals + attached
        if not equals and word.startswith("-") and not word.startswith("--") and len(word) > 2 \
                and word[:2] in valued:
            spelling, attached, equals = word[:2], word[2:], "="
        if spelling in valued:
            if equals:
                value, written = attached, original
            elif i + 1 < len(words):
                value, written = words[i + 1], f"{original} {words[i + 1]}"
                i += 1
            else:
                found.unsupported.append(original)  # an option without its value
                break
            found.values[valued[spelling]] = value
            found.kept.append(written)
        elif spelling in flags:
            found.flags.append(flags[spelling])
            found.kept.append(original)
        elif word.startswith("-") and not _NUMBER.fullmatch(word):
            found.unsupported.append(word)
        else:
            found.positional.append(word)
        i += 1
    return found


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_WHOLE = re.compile(r"\d+")


def _not_supported(text: str, program: str, written: Sequence[str]) -> AuthorCommand:
    noun = "parameter" if len(written) == 1 else "parameters"
    return AuthorCommand(text, program,
                         why_not=f"{program}: {noun} {', '.join(written)} not supported")


def _spec(name: str, parameters: dict[str, object]) -> str:
    return ":".join([name, *(f"{k}={v}" for k, v in parameters.items())])


# hackbench (rt-tests): -p/--pipe, -s/--datasize, -l/--loops, -g/--groups, -f/--fds,
# -T/--threads, -P/--process: the lab's hackbench takes them all (bot/benchmarks/hackbench.py).
_HACKBENCH_VALUED = {"-g": "groups", "--groups": "groups", "-l": "loops", "--loops": "loops",
                     "-s": "datasize", "--datasize": "datasize", "-f": "fds", "--fds": "fds"}
_HACKBENCH_DEFAULTS = {"groups": 10, "loops": 100}
_HACKBENCH_FLAGS = {"-p": "pipe", "--pipe": "pipe", "-T": "threads", "--threads": "threads",
                    "-P": "process", "--processes": "process"}


def _hackbench(text: str, program: str, args: Sequence[str], installed: Installed,
               memcg_max: str | None) -> AuthorCommand:
    """`hackbench -g 16 -l 1000 --process --pipe`, and the old positional form
    `hackbench [-pipe] GROUPS [process|thread] [LOOPS]` (sockets unless -pipe). What the
    author left out is hackbench's own default (10 groups, 100 loops), not the lab's."""
    if not installed("hackbench"):
        return AuthorCommand(text, program, why_not=f"hackbench: {NOT_INSTALLED}")
    # The old form's "-pipe" is one dash and a word: read it before the new form's options.
    old_pipe = "-pipe" in args
    options = _read_options([a for a in args if a != "-pipe"], _HACKBENCH_VALUED,
                            _HACKBENCH_FLAGS)
    if options.unsupported:
        return _not_supported(text, program, options.unsupported)
    parameters: dict[str, object] = dict(_HACKBENCH_DEFAULTS)
    kept = list(options.kept)
    if options.positional and options.kept:  # the old form mixed with the new one's options
        return _not_supported(text, program, options.positional)
    if options.positional:  # the old form
        groups, *rest = options.positional
        mode = rest.pop(0) if rest and rest[0] in ("process", "thread") else "process"
        if not _WHOLE.fullmatch(groups) or len(rest) > 1 or \
                (rest and not _WHOLE.fullmatch(rest[0])):
            return _not_supported(text, program, options.positional)
        parameters["groups"] = int(groups)
        if rest:
            parameters["loops"] = int(rest[0])
        pipe, threads = old_pipe, mode == "thread"
        kept = (["-pipe"] if old_pipe else []) + list(options.positional)
    else:
        for name in dict.fromkeys(_HACKBENCH_VALUED.values()):
            if name in options.values:
                if not _WHOLE.fullmatch(options.values[name]):
                    return _not_supported(text, program, [options.values[name]])
                parameters[name] = int(options.values[name])
        pipe, threads = "pipe" in options.flags or old_pipe, "threads" in options.flags
        if old_pipe:
            kept.insert(0, "-pipe")
    # The lab's defaults are pipes and processes; hackbench's own are sockets and processes.
    if not pipe:
        parameters["pipe"] = 0
    if threads:
        parameters["threads"] = 1
    return AuthorCommand(text, program, spec=_spec("hackbench", parameters), kept=tuple(kept))


def _memtier(text: str, program: str, args: Sequence[str], installed: Installed,
             memcg_max: str | None) -> AuthorCommand:
    """memtier_benchmark drives memcached as the lab's memcached benchmark does with memaslap;
    the lab runs the author's line only with memtier_benchmark itself."""
    if not installed("memtier_benchmark"):
        return AuthorCommand(text, program, why_not=f"memtier_benchmark: {NOT_INSTALLED}")
    return AuthorCommand(text, program, why_not="the lab's memcached benchmark drives memcached "
                                                "with memaslap, not memtier_benchmark: "
                                                f"{NO_SUCH_BENCHMARK}")


def _memcached_server(text: str, program: str, args: Sequence[str], installed: Installed,
                      memcg_max: str | None) -> AuthorCommand:
    return AuthorCommand(text, program, why_not="starts the memcached server, not a benchmark: "
                                                "its load generator's line is the experiment")


# vm-scalability's cases the lab has: readtwice is after case-lru-file-readtwice.
_CASES = {"case-lru-file-readtwice": ("readtwice", "readtwice-memcg")}


def _vm_scalability_case(text: str, program: str, args: Sequence[str], installed: Installed,
                         memcg_max: str | None) -> AuthorCommand:
    """A vm-scalability case by name; the lab's readtwice runs case-lru-file-readtwice's
    workload, in the author's memcg size when they gave one. A case takes no arguments (its
    settings are the environment's): what follows its name on the line is not a parameter."""
    if program not in _CASES:
        return AuthorCommand(text, program, why_not=f"{program}: {NO_SUCH_BENCHMARK}")
    plain, in_memcg = _CASES[program]
    if memcg_max is None:
        return AuthorCommand(text, program, spec=plain)
    return AuthorCommand(text, program, spec=_spec(in_memcg, {"memcg_max": memcg_max}),
                         kept=(f"memcg {memcg_max}",))


def _simulator(text: str, program: str, args: Sequence[str], installed: Installed,
               memcg_max: str | None) -> AuthorCommand:
    """The stand-in tree's reclaim simulator (bot/demo/simtree.py), whose kernel image is the
    program: `arch/x86/boot/bzImage OPS`, OPS per simulated CPU (the lab's reclaim-sim)."""
    if len(args) != 1 or not _WHOLE.fullmatch(args[0]):
        return _not_supported(text, program, args or ["(no ops count)"])
    return AuthorCommand(text, program, spec=_spec("reclaim-sim", {"ops": int(args[0])}),
                         kept=(args[0],))


_Mapper = Callable[[str, str, Sequence[str], Installed, str | None], AuthorCommand]
_MAPPERS: dict[str, _Mapper] = {
    "hackbench": _hackbench,
    "memtier_benchmark": _memtier,
    "memcached": _memcached_server,
    "bzImage": _simulator,
}
# Programs the lab has something like, but not the same: said plainly.
_UNMAPPED = {
    "usemem": f"usemem: {NO_SUCH_BENCHMARK} (its anon-swap writes and reads back anonymous "
              "memory, a different program)",
}
