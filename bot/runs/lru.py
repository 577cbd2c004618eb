"""Which LRU a lab kernel runs for a series: MGLRU when the series changes lru_gen code.

Distribution kernels build MGLRU in and leave it off at boot (Debian's CONFIG_LRU_GEN=y,
CONFIG_LRU_GEN_ENABLED unset), as lorelab's lab kernel does; a series that changes lru_gen code
is then never run unless the lab turns MGLRU on (/sys/kernel/mm/lru_gen/enabled). A change is
lru_gen code when a changed line of the base file lies inside `#ifdef CONFIG_LRU_GEN` (its true
branch, at any depth), or when the changed text itself names lru_gen. `changes_lru_gen` decides
it from `git diff -U0 base patched` and the base files, as a pure function; the apply step
records it, and the bench step's `lru_for` turns it and the lab host's `lru` setting into what
the job switches.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A lab host's `lru` setting -> what the job switches to; "series" is decided here.
FIXED = {"mglru": "mglru", "classic": "classic", "kernel": None}

_FILE = re.compile(r"^\+\+\+ b/(.+)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@(.*)$")
_CONDITIONAL = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_NEGATED = re.compile(r"!\s*(?:defined\s*\(?\s*|IS_ENABLED\s*\(\s*)?CONFIG_LRU_GEN\b")
_NAMES_LRU_GEN = re.compile(r"lru_gen|LRU_GEN|\blrugen\b|\bmglru\b", re.I)


def lru_for(setting: str, series_changes_lru_gen: bool) -> str | None:
    """What the job switches the booted kernel to ("mglru", "classic"), or None to leave the
    kernel's own default, for a lab host's `lru` setting and what the series changes."""
    if setting in FIXED:
        return FIXED[setting]
    return "mglru" if series_changes_lru_gen else None


def changes_lru_gen(diff: str, base_file: Callable[[str], str | None]) -> bool:
    """Whether `diff` (unified, as `git diff -U0` prints it) changes lru_gen code."""
    regions: dict[str, set[int]] = {}  # per file: each base file is read and scanned once
    for path, lines, text in _hunks(diff):
        if _NAMES_LRU_GEN.search(text):
            return True
        if path not in regions:
            source = base_file(path)
            regions[path] = lru_gen_lines(source) if source is not None else set()
        if lines & regions[path]:
            return True
    return False


def lru_gen_lines(source: str) -> set[int]:
    """1-based numbers of the lines of `source` inside an `#if` that needs CONFIG_LRU_GEN."""
    found: set[int] = set()
    stack: list[bool] = []  # per open conditional: does its current branch need LRU_GEN?
    for number, line in enumerate(source.splitlines(), start=1):
        match = _CONDITIONAL.match(line)
        if match:
            directive, condition = match[1], match[2]
            if directive in ("if", "ifdef"):
                stack.append(_needs_lru_gen(condition))
            elif directive == "ifndef":
                stack.append(False)
            elif directive in ("elif", "else") and stack:
                stack[-1] = directive == "elif" and _needs_lru_gen(condition)
            elif directive == "endif" and stack:
                stack.pop()
            continue
        if any(stack):
            found.add(number)
    return found


def _needs_lru_gen(condition: str) -> bool:
    text = condition.split("/*")[0]
    return "CONFIG_LRU_GEN" in text and not _NEGATED.search(text)


def _hunks(diff: str) -> list[tuple[str, set[int], str]]:
    """(path, the base file's lines a hunk changes or inserts before, the hunk's own text)."""
    found = []
    path = ""
    current: tuple[str, set[int], list[str]] | None = None
    old_line = 0
    for line in diff.splitlines():
        if file := _FILE.match(line):
            path = file[1]
            continue
        if hunk := _HUNK.match(line):
            if current is not None:
                found.append((current[0], current[1], "\n".join(current[2])))
            # "-12,0" (nothing removed, lines added after line 12) counts line 12's region.
            old_line = int(hunk[1])
            current = (path, set(), [hunk[3]])
            continue
        if current is None or not line or line[0] not in "+- ":
            continue
        current[2].append(line[1:])
        if line[0] == "-":
            current[1].add(old_line)
            old_line += 1
        elif line[0] == "+":
            current[1].add(max(old_line, 1))
        else:
            old_line += 1
    if current is not None:
        found.append((current[0], current[1], "\n".join(current[2])))
    return found
