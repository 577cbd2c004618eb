"""A kernel tree's MAINTAINERS file: its sections, and who maintains a set of paths.

A section is a title line followed by entries `T:<tab>value`, up to a blank line. Entries read:
M: maintainer, R: designated reviewer, L: list, S: status, F: files, X: excluded files,
N: file-name regex, K: content regex (kept for the record: a keyword makes someone interested
in a patch, not responsible for it, so it does not decide who maintains a path).

Path patterns (F: and X:) follow scripts/get_maintainer.pl:
- `*` and `?` are wildcards that also match `/`, but a pattern without a trailing slash only
  matches paths with as many `/` as itself: `drivers/net/*` is the files in drivers/net,
  not below;
- a trailing `/` means the directory and everything below it: `mm/`;
- a pattern naming a directory without the trailing slash (`mm`) covers it as `mm/` would;
  get_maintainer.pl asks the file system, here a path below it is proof enough that it is one;
- an X: pattern matching a path takes the section off that path, whatever its F: lines say.
Unlike get_maintainer.pl, a file pattern does not match longer names (`mm/vmscan.c` does not
match `mm/vmscan.c.orig`).

Pure but for `read_maintainers`, which reads the file.
"""

from __future__ import annotations

import email.utils
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

_ENTRY = re.compile(r"([A-Z]):\s*(.*)")
_WILDCARDS = re.compile(r"[*?[]")


@dataclass
class Section:
    """One MAINTAINERS section, e.g. "MEMORY MANAGEMENT - RECLAIM"."""

    title: str
    maintainers: list[str] = field(default_factory=list)  # M: "Name <address>"
    reviewers: list[str] = field(default_factory=list)  # R:
    lists: list[str] = field(default_factory=list)  # L:
    status: str = ""  # S:
    files: list[str] = field(default_factory=list)  # F:
    excludes: list[str] = field(default_factory=list)  # X:
    regexes: list[str] = field(default_factory=list)  # N:
    keywords: list[str] = field(default_factory=list)  # K:

    def people(self) -> set[str]:
        """The M: and R: addresses, lower case."""
        return {address.lower() for _, address in email.utils.getaddresses(
            [*self.maintainers, *self.reviewers]) if "@" in address}


class PathPattern:
    """One F: or X: pattern, as get_maintainer.pl matches it (see the module docstring)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.tree = pattern.endswith("/")
        self.literal = not _WILDCARDS.search(pattern)
        self.slashes = pattern.count("/")
        self.regex = None if self.literal else re.compile(_glob_to_regex(pattern))

    def matches(self, path: str) -> bool:
        if self.literal:
            if self.tree:
                return path.startswith(self.pattern)
            return path == self.pattern or path.startswith(self.pattern + "/")
        assert self.regex is not None
        if self.tree:
            return self.regex.match(path) is not None
        return self.regex.fullmatch(path) is not None and path.count("/") == self.slashes


def _glob_to_regex(pattern: str) -> str:
    """`*` -> `.*`, `?` -> `.`, `[...]` kept as a class, everything else literal."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        close = pattern.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif close != -1:
            out.append(pattern[i : close + 1])
            i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@dataclass
class Maintainers:
    """The sections of one MAINTAINERS file, ready to match paths against."""

    sections: list[Section]
    problems: list[str] = field(default_factory=list)  # e.g. N: regexes that do not compile

    def __post_init__(self) -> None:
        self._matchers: list[tuple[Section, list[PathPattern], list[PathPattern],
                                   list[re.Pattern[str]]]] = []
        for section in self.sections:
            regexes = []
            for text in section.regexes:
                try:
                    regexes.append(re.compile(text))
                except re.error as exc:
                    self.problems.append(f"{section.title}: N: {text}: {exc}")
            self._matchers.append((section, [PathPattern(p) for p in section.files],
                                   [PathPattern(p) for p in section.excludes], regexes))

    def sections_for(self, path: str) -> list[Section]:
        """The sections covering `path`, in file order."""
        found = []
        for section, files, excludes, regexes in self._matchers:
            if any(x.matches(path) for x in excludes):
                continue
            if any(f.matches(path) for f in files) or any(r.search(path) for r in regexes):
                found.append(section)
        return found

    def maintainers_for(self, paths: Iterable[str]) -> set[str]:
        """The M: and R: addresses (lower case) of every section covering any of `paths`."""
        people: set[str] = set()
        for path in paths:
            for section in self.sections_for(path):
                people |= section.people()
        return people


def parse_maintainers(text: str) -> Maintainers:
    """Sections from the text of a MAINTAINERS file; the prose at its top has no entries and
    is left out, like any title without entries."""
    sections: list[Section] = []
    current: Section | None = None
    title = ""
    for line in text.splitlines():
        entry = _ENTRY.fullmatch(line.rstrip())
        if entry is None:
            current = None
            title = line.strip()
            continue
        if current is None:
            current = Section(title)
            sections.append(current)
        _add_entry(current, entry[1], entry[2].strip())
    return Maintainers(sections)


def _add_entry(section: Section, tag: str, value: str) -> None:
    lists = {"M": section.maintainers, "R": section.reviewers, "L": section.lists,
             "F": section.files, "X": section.excludes, "N": section.regexes,
             "K": section.keywords}
    if tag == "S":
        section.status = value
    elif tag in lists and value:
        lists[tag].append(value)


def read_maintainers(path: Path) -> Maintainers:
    """The MAINTAINERS file at `path`; no sections when there is none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return Maintainers([])
    return parse_maintainers(text)
