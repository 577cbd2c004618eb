"""The first errors of a failed kernel build, as a reply quotes them (never the whole log).

Reads gcc and clang diagnostics (`file:line:col: error: ...`, with the "In function" line above
and the two lines of source and caret below), then linker and modpost errors, and as a last
resort the first `make: *** ...` line with the two lines before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE = 96  # excerpt lines are indented by 2 in a reply and must stay within 100 columns
CONTEXT_LINES = 2

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_DIAGNOSTIC = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? "
    r"(?P<kind>fatal error|error|warning|note): (?P<message>.*)$"
)
_IN_FUNCTION = re.compile(r"^[^\s:][^:]*: In (?:function|member function) .*:$")
_LINKER = re.compile(
    r"undefined reference to|undefined symbol|multiple definition of|ERROR: modpost:"
    r"|ld(?:\.lld)?: error:"
)
_MAKE_ERROR = re.compile(r"^make(?:\[\d+\])?: \*\*\* ")


@dataclass(frozen=True)
class BuildError:
    location: str  # "mm/vmscan.c:1437:25"; empty for linker and make errors
    message: str
    excerpt: tuple[str, ...]  # the lines quoted in the reply, error line included


def clip(line: str, width: int = MAX_LINE) -> str:
    line = line.rstrip()
    return line if len(line) <= width else line[: width - 3] + "..."


# An out-of-tree build (make O=DIR) names sources relative to DIR: "../mm/vmscan.c".
_BUILD_DIR_PREFIX = re.compile(r"^(?:\.\./)+")


def first_errors(log: str, limit: int = 3, source_dir: str | None = None) -> list[BuildError]:
    """Up to `limit` distinct errors in log order, each with its context lines; paths are
    given relative to the source tree (`source_dir`, when the build named files by it)."""
    if source_dir:
        log = log.replace(source_dir.rstrip("/") + "/", "")
    lines = [_BUILD_DIR_PREFIX.sub("", _ANSI.sub("", line).rstrip()) for line in log.splitlines()]
    found = _compiler_errors(lines, limit)
    if not found:
        found = _linker_errors(lines, limit)
    if not found:
        found = _make_error(lines)
    return found


def _compiler_errors(lines: list[str], limit: int) -> list[BuildError]:
    found: list[BuildError] = []
    seen: set[tuple[str, str]] = set()
    for i, line in enumerate(lines):
        match = _DIAGNOSTIC.match(line)
        if not match or "error" not in match["kind"]:
            continue
        location = ":".join(p for p in (match["file"], match["line"], match["col"]) if p)
        if (location, match["message"]) in seen:
            continue
        seen.add((location, match["message"]))
        excerpt = []
        if i > 0 and _IN_FUNCTION.match(lines[i - 1]):
            excerpt.append(lines[i - 1])
        excerpt.append(line)
        for following in lines[i + 1 : i + 1 + CONTEXT_LINES]:
            if _DIAGNOSTIC.match(following) or _MAKE_ERROR.match(following):
                break
            excerpt.append(following)
        found.append(BuildError(location, match["message"], tuple(clip(x) for x in excerpt)))
        if len(found) == limit:
            break
    return found


def _linker_errors(lines: list[str], limit: int) -> list[BuildError]:
    found = []
    for i, line in enumerate(lines):
        if _LINKER.search(line):
            # ld names the object and function on the line before: "ld: x.o: in function `f':"
            before = [lines[i - 1]] if i > 0 and ": in function" in lines[i - 1] else []
            found.append(BuildError("", line.strip(), tuple(clip(x) for x in [*before, line])))
            if len(found) == limit:
                break
    return found


def _make_error(lines: list[str]) -> list[BuildError]:
    for i, line in enumerate(lines):
        if _MAKE_ERROR.match(line):
            excerpt = [x for x in lines[max(0, i - CONTEXT_LINES) : i + 1] if x]
            return [BuildError("", line.strip(), tuple(clip(x) for x in excerpt))]
    return []
