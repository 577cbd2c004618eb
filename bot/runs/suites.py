"""Suites: which series a lab benchmarks, and with what.

A suite names the source files it watches (fnmatch patterns; a trailing `/` covers a whole
directory) and the benchmarks that exercise them. A complete series version touching a watched
file is planned for a review run with the first matching suite's benchmarks. The default is the
reclaim suite of the lab this bot was started for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

RECLAIM_PATHS = [
    "mm/vmscan.c", "mm/swap.c", "mm/swap_state.c", "mm/swapfile.c", "mm/workingset.c",
    "mm/memcontrol.c", "mm/page_alloc.c", "mm/mmzone.c", "mm/list_lru.c", "mm/shrinker.c",
    "mm/rmap.c", "mm/filemap.c", "mm/readahead.c", "mm/zswap.c", "mm/compaction.c",
    "include/linux/mmzone.h", "include/linux/swap.h", "include/linux/memcontrol.h",
    "include/linux/mm_inline.h", "include/linux/vmstat.h", "include/linux/lru_gen*.h",
]


@dataclass
class PlanSettings:
    """`[plan]`: whether new versions are planned automatically, and how far back."""

    auto: bool = True  # plan review runs for new versions (false: only by command or CLI)
    max_age_days: int = 14  # versions posted longer ago are not planned (a backfill is not)


@dataclass
class SuiteSettings:
    name: str
    watched: list[str] = field(default_factory=list)  # path patterns
    benchmarks: list[str] = field(default_factory=list)  # bot.benchmarks.registry names
    lab_host: str = ""  # empty: the first configured lab host


RECLAIM = SuiteSettings(name="reclaim", watched=RECLAIM_PATHS,
                        benchmarks=["hackbench", "readtwice"])


def watches(pattern: str, path: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern)
    return fnmatchcase(path, pattern)


def suite_for(suites: list[SuiteSettings], paths: Iterable[str]) -> SuiteSettings | None:
    """The first suite (of the configured ones, else the reclaim suite) watching any path."""
    paths = list(paths)
    for suite in suites or [RECLAIM]:
        if any(watches(p, path) for p in suite.watched for path in paths):
            return suite
    return None
