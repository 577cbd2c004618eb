"""Reclaim counters: parse /proc/vmstat and a memcg's memory.stat, and the change between two reads.

Both files are "name value" lines. The counters that describe reclaim (scanned and stolen pages,
refaults, direct-reclaim stalls, swap traffic) are selected by fnmatch patterns so that new
kernel counters (pgscan_proactive, ...) are picked up without a code change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

RECLAIM_COUNTERS: tuple[str, ...] = (
    "pgscan*",
    "pgsteal*",
    "workingset_refault_*",
    "allocstall*",
    "pswpin",
    "pswpout",
)


def counter_unit(name: str) -> str:
    """What a reclaim counter counts: stalls for allocstall*, pages for the others."""
    return "stalls" if name.startswith("allocstall") else "pages"


def parse_counters(text: str) -> dict[str, int]:
    """{name: value} from /proc/vmstat or memory.stat text; ValueError on a malformed line."""
    counters: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"line {number}: expected 'name value', got {line!r}")
        name, value = parts
        try:
            counters[name] = int(value)
        except ValueError:
            raise ValueError(f"line {number}: {name} is not an integer: {value!r}") from None
    return counters


def select_counters(
    counters: Mapping[str, int], patterns: Iterable[str] = RECLAIM_COUNTERS
) -> dict[str, int]:
    """The counters whose names match any pattern, in the file's order."""
    patterns = tuple(patterns)
    return {
        name: value
        for name, value in counters.items()
        if any(fnmatchcase(name, pattern) for pattern in patterns)
    }


def counter_delta(
    before: Mapping[str, int],
    after: Mapping[str, int],
    patterns: Iterable[str] = RECLAIM_COUNTERS,
) -> dict[str, int]:
    """after - before for the matching counters present in both readings.

    A counter present in only one reading (a different kernel between the reads) is left out
    rather than guessed.
    """
    chosen_after = select_counters(after, patterns)
    return {name: value - before[name] for name, value in chosen_after.items() if name in before}
