"""Suites: which series a lab benchmarks, and with what.

A suite names the source files it watches (fnmatch patterns; a trailing `/` covers a whole
directory) and the benchmarks that exercise them. A complete series version touching a watched
file is planned for a review run with the first matching suite's benchmarks. The default is the
reclaim suite of the lab this bot was started for.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from bot.config.sections import SuiteSettings

RECLAIM_PATHS = [
    "mm/vmscan.c", "mm/swap.c", "mm/swap_state.c", "mm/swapfile.c", "mm/workingset.c",
    "mm/memcontrol.c", "mm/page_alloc.c", "mm/mmzone.c", "mm/list_lru.c", "mm/shrinker.c",
    "mm/rmap.c", "mm/filemap.c", "mm/readahead.c", "mm/zswap.c", "mm/compaction.c",
    "include/linux/mmzone.h", "include/linux/swap.h", "include/linux/memcontrol.h",
    "include/linux/mm_inline.h", "include/linux/vmstat.h", "include/linux/lru_gen*.h",
]






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
