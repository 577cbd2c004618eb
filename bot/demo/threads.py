"""Real patch threads made with real git, for tests and `lorelab demo`.

`make_tree` creates a small kernel-style git tree; `make_series` commits a few small reclaim
changes on a branch of it and runs `git format-patch`, then turns each file into the message that
`git send-email` would have sent to linux-mm (deterministic Message-ID, Date, List-Id).
`make_reply` writes a reviewer's answer as a mail client would, and `as_mbox` packs messages
into an mboxrd file. Everything is deterministic: the same spec gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email
import email.policy
import email.quoprimime
import email.utils
import hashlib
import re
import tempfile
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bot.git import git_output
from bot.mail.subject import without_reply_words

Person = tuple[str, str]  # (display name, email address)
Threading = Literal["shallow", "deep", "none"]

LIST_ID = "<linux-mm.kvack.org>"
LIST_ADDRESS = "linux-mm@kvack.org"
DEFAULT_AUTHOR: Person = ("Ada Reclaim", "ada@example.org")
DEFAULT_START = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)

_TREE_AUTHOR: Person = ("Tree Keeper", "tree@example.org")
_TREE_DATE = "2026-11-01T09:00:00+0000"
MBOXRD_FROM_LINE = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"

# --------------------------------------------------------------------------------------------
# The tree

_MAKEFILE = """\
# SPDX-License-Identifier: GPL-2.0
VERSION = 6
PATCHLEVEL = 18
SUBLEVEL = 0
EXTRAVERSION =
NAME = Baby Opossum Posse

# A stand-in for the kernel's top-level Makefile: enough for `make -n` and for
# tools that look for a kernel tree by its Makefile.
obj-y += mm/

KBUILD_CFLAGS := -Wall -Wundef -Werror=strict-prototypes -fno-strict-aliasing
KBUILD_CFLAGS += -O2 -fno-common -std=gnu11

PHONY := all
all:
\t@echo "lorelab demo tree $(VERSION).$(PATCHLEVEL).$(SUBLEVEL)$(EXTRAVERSION)"

clean:
\t@rm -f mm/*.o

.PHONY: $(PHONY) clean
"""

_README = """\
Linux kernel (lorelab demo tree)
================================

This is not a kernel. It is a handful of files laid out like the memory
management part of one, so that patch series can be made, mailed, applied
and reviewed in tests without a full kernel checkout.

  mm/vmscan.c             page reclaim
  mm/swap.c               LRU batching and swap setup
  mm/workingset.c         refault detection
  include/linux/mmzone.h  zones, nodes and LRU lists
"""

_MMZONE_H = """\
/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_MMZONE_H
#define _LINUX_MMZONE_H

#include <linux/spinlock.h>
#include <linux/list.h>
#include <linux/wait.h>
#include <linux/numa.h>

/* Free memory management - zoned buddy allocator.  */
#ifndef CONFIG_ARCH_FORCE_MAX_ORDER
#define MAX_PAGE_ORDER 10
#else
#define MAX_PAGE_ORDER CONFIG_ARCH_FORCE_MAX_ORDER
#endif

#define DEF_PRIORITY 12

enum lru_list {
\tLRU_INACTIVE_ANON,
\tLRU_ACTIVE_ANON,
\tLRU_INACTIVE_FILE,
\tLRU_ACTIVE_FILE,
\tLRU_UNEVICTABLE,
\tNR_LRU_LISTS
};

struct lruvec {
\tstruct list_head\t\tlists[NR_LRU_LISTS];
\t/* per lruvec lru_lock for memcg */
\tspinlock_t\t\t\tlru_lock;
\tunsigned long\t\t\tanon_cost;
\tunsigned long\t\t\tfile_cost;
\tatomic_long_t\t\t\tnonresident_age;
\tunsigned long\t\t\trefaults[2];
\tunsigned long\t\t\tflags;
};

typedef struct pglist_data {
\tint node_id;
\twait_queue_head_t kswapd_wait;
\tstruct task_struct *kswapd;
\tint kswapd_order;
\tint kswapd_failures;
\tunsigned long totalreserve_pages;
\tstruct lruvec __lruvec;
} pg_data_t;

#endif /* _LINUX_MMZONE_H */
"""

_VMSCAN_C = """\
// SPDX-License-Identifier: GPL-2.0
/*
 *  Copyright (C) 1991, 1992, 1993, 1994  Linus Torvalds
 *
 *  Swap reorganised 29.12.95, Stephen Tweedie.
 *  kswapd added: 7.1.96  sct
 */

#include <linux/mm.h>
#include <linux/swap.h>
#include <linux/mmzone.h>
#include <linux/memcontrol.h>
#include <linux/sched.h>

#include "internal.h"

/* How many folios shrink_inactive_list() isolates from the LRU at a time. */
#define RECLAIM_BATCH\t\t32UL

/* Give up on a node after this many kswapd runs that reclaimed nothing. */
#define MAX_RECLAIM_RETRIES\t16

int vm_swappiness = 60;

struct scan_control {
\tunsigned long nr_to_reclaim;
\tunsigned long nr_scanned;
\tunsigned long nr_reclaimed;
\tgfp_t gfp_mask;
\tint order;
\tint priority;
\tunsigned int may_writepage:1;
\tunsigned int may_swap:1;
};

static bool should_continue_reclaim(struct scan_control *sc)
{
\tif (sc->nr_reclaimed >= sc->nr_to_reclaim)
\t\treturn false;
\tif (sc->priority < DEF_PRIORITY - 2)
\t\treturn sc->nr_scanned > 0;
\treturn true;
}

static unsigned long shrink_inactive_list(unsigned long nr_to_scan,
\t\t\t\t\t  struct lruvec *lruvec,
\t\t\t\t\t  struct scan_control *sc)
{
\tunsigned long nr_taken, nr_reclaimed;
\tLIST_HEAD(folio_list);

\tnr_taken = isolate_lru_folios(min(nr_to_scan, RECLAIM_BATCH), lruvec,
\t\t\t\t      &folio_list, sc);
\tif (!nr_taken)
\t\treturn 0;

\tnr_reclaimed = shrink_folio_list(&folio_list, lruvec_pgdat(lruvec), sc);
\tsc->nr_reclaimed += nr_reclaimed;
\treturn nr_reclaimed;
}

static int swappiness_for(struct mem_cgroup *memcg)
{
\tif (!memcg)
\t\treturn vm_swappiness;
\treturn mem_cgroup_swappiness(memcg);
}

static void shrink_lruvec(struct lruvec *lruvec, struct scan_control *sc)
{
\tunsigned long nr[NR_LRU_LISTS];
\tenum lru_list lru;

\tget_scan_count(lruvec, sc, nr);
\twhile (nr[LRU_INACTIVE_ANON] || nr[LRU_INACTIVE_FILE]) {
\t\tfor_each_evictable_lru(lru) {
\t\t\tif (nr[lru]) {
\t\t\t\tunsigned long nr_to_scan = min(nr[lru], SWAP_CLUSTER_MAX);

\t\t\t\tnr[lru] -= nr_to_scan;
\t\t\t\tshrink_list(lru, nr_to_scan, lruvec, sc);
\t\t\t}
\t\t}
\t\tif (!should_continue_reclaim(sc))
\t\t\tbreak;
\t}
}

static bool kswapd_should_sleep(pg_data_t *pgdat, int order)
{
\tif (pgdat->kswapd_failures >= MAX_RECLAIM_RETRIES)
\t\treturn true;
\treturn pgdat_balanced(pgdat, order, ZONE_NORMAL);
}

unsigned long try_to_free_pages(struct zonelist *zonelist, int order, gfp_t gfp_mask)
{
\tstruct scan_control sc = {
\t\t.nr_to_reclaim = SWAP_CLUSTER_MAX,
\t\t.gfp_mask = current_gfp_context(gfp_mask),
\t\t.order = order,
\t\t.priority = DEF_PRIORITY,
\t\t.may_writepage = !laptop_mode,
\t\t.may_swap = 1,
\t};

\treturn do_try_to_free_pages(zonelist, &sc);
}
"""

_SWAP_C = """\
// SPDX-License-Identifier: GPL-2.0-only
/*
 *  linux/mm/swap.c
 *
 *  Copyright (C) 1991, 1992, 1993, 1994  Linus Torvalds
 */

#include <linux/mm.h>
#include <linux/swap.h>
#include <linux/pagevec.h>
#include <linux/mm_inline.h>

/* How many pages do we try to swap or page in/out together? As a power of 2 */
int page_cluster;
const int page_cluster_max = 31;

/* Folios added to the LRU are gathered in per-CPU batches of this size. */
#define LRU_ADD_BATCH\t\t15

struct cpu_fbatches {
\tlocal_lock_t lock;
\tstruct folio_batch lru_add;
\tstruct folio_batch lru_deactivate;
\tstruct folio_batch lru_activate;
};

static DEFINE_PER_CPU(struct cpu_fbatches, cpu_fbatches) = {
\t.lock = INIT_LOCAL_LOCK(lock),
};

static void lru_add_fn(struct lruvec *lruvec, struct folio *folio)
{
\tint was_unevictable = folio_test_clear_unevictable(folio);
\tlong nr_pages = folio_nr_pages(folio);

\tfolio_set_lru(folio);
\tlruvec_add_folio(lruvec, folio);
\tif (was_unevictable)
\t\t__count_vm_events(UNEVICTABLE_PGRESCUED, nr_pages);
}

static bool folio_batch_add_and_check(struct folio_batch *fbatch, struct folio *folio)
{
\treturn !folio_batch_add(fbatch, folio) || folio_batch_count(fbatch) >= LRU_ADD_BATCH;
}

void folio_add_lru(struct folio *folio)
{
\tstruct folio_batch *fbatch;

\tVM_BUG_ON_FOLIO(folio_test_lru(folio), folio);

\tfolio_get(folio);
\tlocal_lock(&cpu_fbatches.lock);
\tfbatch = this_cpu_ptr(&cpu_fbatches.lru_add);
\tif (folio_batch_add_and_check(fbatch, folio))
\t\tfolio_batch_move_lru(fbatch, lru_add_fn);
\tlocal_unlock(&cpu_fbatches.lock);
}

void __init swap_setup(void)
{
\tunsigned long megs = totalram_pages() >> (20 - PAGE_SHIFT);

\t/* Use a smaller cluster for small-memory machines */
\tif (megs < 16)
\t\tpage_cluster = 2;
\telse
\t\tpage_cluster = 3;
}
"""

_WORKINGSET_C = """\
// SPDX-License-Identifier: GPL-2.0
/*
 * Workingset detection
 *
 * Copyright (C) 2013 Red Hat, Inc., Johannes Weiner
 */

#include <linux/memcontrol.h>
#include <linux/mm_inline.h>
#include <linux/writeback.h>
#include <linux/pagemap.h>
#include <linux/atomic.h>
#include <linux/swap.h>

#define WORKINGSET_SHIFT 1
#define EVICTION_SHIFT\t((BITS_PER_LONG - BITS_PER_XA_VALUE) +\t\\
\t\t\t WORKINGSET_SHIFT + NODES_SHIFT + \\
\t\t\t MEM_CGROUP_ID_SHIFT)
#define EVICTION_MASK\t(~0UL >> EVICTION_SHIFT)

static void *pack_shadow(int memcgid, pg_data_t *pgdat, unsigned long eviction,
\t\t\t bool workingset)
{
\teviction &= EVICTION_MASK;
\teviction = (eviction << MEM_CGROUP_ID_SHIFT) | memcgid;
\teviction = (eviction << NODES_SHIFT) | pgdat->node_id;
\teviction = (eviction << WORKINGSET_SHIFT) | workingset;

\treturn xa_mk_value(eviction);
}

/**
 * workingset_refault - Evaluate the refault of a previously evicted folio.
 * @folio: The freshly allocated replacement folio.
 * @shadow: Shadow entry of the evicted folio.
 */
void workingset_refault(struct folio *folio, void *shadow)
{
\tbool file = folio_is_file_lru(folio);
\tstruct lruvec *lruvec;
\tunsigned long refault_distance;
\tunsigned long workingset_size;

\tlruvec = folio_lruvec(folio);
\trefault_distance = lru_refault_distance(lruvec, shadow);
\tworkingset_size = lruvec_page_state(lruvec, NR_ACTIVE_FILE);
\tif (!file)
\t\tworkingset_size += lruvec_page_state(lruvec, NR_INACTIVE_FILE);

\tif (refault_distance > workingset_size)
\t\treturn;

\tfolio_set_active(folio);
\tworkingset_age_nonresident(lruvec, folio_nr_pages(folio));
\tmod_lruvec_state(lruvec, WORKINGSET_ACTIVATE_BASE + file, folio_nr_pages(folio));
}
"""

TREE_FILES: dict[str, str] = {
    "Makefile": _MAKEFILE,
    "README": _README,
    "include/linux/mmzone.h": _MMZONE_H,
    "mm/swap.c": _SWAP_C,
    "mm/vmscan.c": _VMSCAN_C,
    "mm/workingset.c": _WORKINGSET_C,
}


# --------------------------------------------------------------------------------------------
# What a patch changes


@dataclass(frozen=True)
class Change:
    """One patch's content: replace one line of one file, and the commit message saying why.

    `variants` are alternative replacements; `variant` picks one. A later version of a series
    that keeps a patch unchanged keeps the same variant (same diff, so the same patch-id and
    b4 carries the trailers over); `revised()` picks the next one (a changed patch).
    """

    path: str
    old: str  # one whole line of the file, without its newline; must occur exactly once
    variants: tuple[str, ...]  # each replaces `old`; may span several lines
    subject: str  # the commit subject, e.g. "mm/vmscan: ..."
    body: str  # the commit message body, without Signed-off-by
    variant: int = 0

    @property
    def new(self) -> str:
        return self.variants[self.variant % len(self.variants)]

    def revised(self) -> Change:
        """The same change done differently, as a reviewer asked for in the next version."""
        return dataclasses.replace(self, variant=(self.variant + 1) % len(self.variants))

    def apply(self, text: str) -> str:
        lines = text.split("\n")
        hits = [i for i, line in enumerate(lines) if line == self.old]
        if len(hits) != 1:
            raise ValueError(f"{self.path}: {self.old.strip()!r} found {len(hits)} times")
        lines[hits[0]] = self.new
        return "\n".join(lines)


def _c(path: str, old: str, variants: Sequence[str], subject: str, body: str) -> Change:
    return Change(path, old, tuple(variants), subject, body)


# The catalogue of small changes. The mm/vmscan.c and mm/swap.c ones are the default pool.
EDITS: tuple[Change, ...] = (
    _c("mm/vmscan.c", "#define RECLAIM_BATCH\t\t32UL",
       ["#define RECLAIM_BATCH\t\t64UL", "#define RECLAIM_BATCH\t\t128UL"],
       "mm/vmscan: isolate folios from the LRU in larger batches",
       "Isolating 32 folios at a time takes and drops the lru_lock more often than\n"
       "needed on machines with hundreds of gigabytes of page cache. Isolate more\n"
       "folios per round trip so that the lock is taken less often."),
    _c("mm/vmscan.c", "#define MAX_RECLAIM_RETRIES\t16",
       ["#define MAX_RECLAIM_RETRIES\t8", "#define MAX_RECLAIM_RETRIES\t12"],
       "mm/vmscan: let kswapd give up on a hopeless node sooner",
       "kswapd keeps retrying a node that reclaims nothing for sixteen runs, burning\n"
       "CPU while the allocating tasks enter direct reclaim anyway. Halve the number\n"
       "of fruitless runs before kswapd goes to sleep."),
    _c("mm/vmscan.c", "\tif (sc->priority < DEF_PRIORITY - 2)",
       ["\tif (sc->priority < DEF_PRIORITY - 1)", "\tif (sc->priority < DEF_PRIORITY - 3)"],
       "mm/vmscan: stop scanning earlier when reclaim makes no progress",
       "should_continue_reclaim() keeps going down to DEF_PRIORITY - 2 even when\n"
       "nothing was scanned in the last round. Check for progress one priority\n"
       "level earlier."),
    _c("mm/vmscan.c", "\t\tif (!should_continue_reclaim(sc))",
       ["\t\tcond_resched();\n\t\tif (!should_continue_reclaim(sc))",
        "\t\tif (!should_continue_reclaim(sc) || fatal_signal_pending(current))"],
       "mm/vmscan: reschedule between rounds of shrink_lruvec()",
       "A large memcg can keep shrink_lruvec() looping for tens of milliseconds on a\n"
       "non-preemptible kernel, which shows up as soft lockup warnings under heavy\n"
       "reclaim. Give the scheduler a chance between rounds."),
    _c("mm/vmscan.c", "\t\t.nr_to_reclaim = SWAP_CLUSTER_MAX,",
       ["\t\t.nr_to_reclaim = max(SWAP_CLUSTER_MAX, 1UL << order),",
        "\t\t.nr_to_reclaim = SWAP_CLUSTER_MAX << min(order, 3),"],
       "mm/vmscan: reclaim at least one high-order block in direct reclaim",
       "Direct reclaim for a high-order allocation stops after SWAP_CLUSTER_MAX pages\n"
       "even when that cannot possibly free a block of the requested order. Aim for\n"
       "at least one block of that order."),
    _c("mm/vmscan.c", "\tif (pgdat->kswapd_failures >= MAX_RECLAIM_RETRIES)",
       ["\tif (READ_ONCE(pgdat->kswapd_failures) >= MAX_RECLAIM_RETRIES)",
        "\tif (data_race(pgdat->kswapd_failures) >= MAX_RECLAIM_RETRIES)"],
       "mm/vmscan: annotate the lockless read of kswapd_failures",
       "kswapd_failures is written by kswapd and read locklessly here, which KCSAN\n"
       "reports as a data race. Mark the read."),
    _c("mm/vmscan.c", "\t\treturn vm_swappiness;",
       ["\t\treturn READ_ONCE(vm_swappiness);", "\t\treturn data_race(vm_swappiness);"],
       "mm/vmscan: read vm_swappiness once",
       "vm_swappiness can change under us through the sysctl. Read it once so that\n"
       "one reclaim pass works with one value."),
    _c("mm/vmscan.c", "\t\t\t\tunsigned long nr_to_scan = min(nr[lru], SWAP_CLUSTER_MAX);",
       ["\t\t\t\tunsigned long nr_to_scan = min(nr[lru], RECLAIM_BATCH);",
        "\t\t\t\tunsigned long nr_to_scan = min(nr[lru], 2 * SWAP_CLUSTER_MAX);"],
       "mm/vmscan: scan each LRU list in reclaim-sized batches",
       "shrink_lruvec() hands SWAP_CLUSTER_MAX folios at a time to shrink_list(),\n"
       "which then isolates in batches of its own. Use one batch size for both."),
    _c("mm/vmscan.c", "\tsc->nr_reclaimed += nr_reclaimed;",
       ["\tsc->nr_reclaimed += nr_reclaimed;\n\tcount_vm_events(PGSTEAL_ANON, nr_reclaimed);",
        "\tsc->nr_reclaimed += nr_reclaimed;\n\tcount_memcg_events(lruvec_memcg(lruvec), "
        "PGSTEAL_ANON, nr_reclaimed);"],
       "mm/vmscan: account reclaimed folios in shrink_inactive_list()",
       "The reclaimed folios of shrink_inactive_list() are missing from the pgsteal\n"
       "counters in /proc/vmstat, which makes reclaim efficiency hard to follow.\n"
       "Count them."),
    _c("mm/vmscan.c", "int vm_swappiness = 60;",
       ["int vm_swappiness = 100;", "int vm_swappiness = 80;"],
       "mm/vmscan: raise the default swappiness",
       "With fast swap devices (zram, NVMe) the default of 60 leaves anonymous memory\n"
       "resident while hot page cache is thrown out. Balance the two LRUs evenly by\n"
       "default."),
    _c("mm/swap.c", "#define LRU_ADD_BATCH\t\t15",
       ["#define LRU_ADD_BATCH\t\t31", "#define LRU_ADD_BATCH\t\t63"],
       "mm/swap: raise the per-CPU LRU add batch",
       "Adding folios to the LRU fifteen at a time makes the lru_lock one of the\n"
       "hottest locks in page-fault heavy workloads. Batch more folios per lock\n"
       "acquisition."),
    _c("mm/swap.c", "\tif (megs < 16)",
       ["\tif (megs < 64)", "\tif (megs < 32)"],
       "mm/swap: use the small page cluster on machines below 64M",
       "Machines with 16M of memory are gone, but small VMs and embedded boards with\n"
       "less than 64M are not. Use the smaller readahead cluster there too."),
    _c("mm/swap.c", "\t\tpage_cluster = 3;",
       ["\t\tpage_cluster = 4;", "\t\tpage_cluster = min(4, page_cluster_max);"],
       "mm/swap: read ahead 16 pages from swap by default",
       "Swap devices today are SSDs and zram, for which reading 16 pages costs about\n"
       "as much as reading 8. Double the default swap readahead cluster."),
    _c("mm/swap.c", "\tVM_BUG_ON_FOLIO(folio_test_lru(folio), folio);",
       ["\tVM_WARN_ON_ONCE_FOLIO(folio_test_lru(folio), folio);",
        "\tif (VM_WARN_ON_ONCE_FOLIO(folio_test_lru(folio), folio))\n\t\treturn;"],
       "mm/swap: warn instead of crashing on a folio already on the LRU",
       "A folio that is already on the LRU is a bug, but not one worth bringing the\n"
       "machine down for. Warn once instead."),
    _c("mm/swap.c", "\tif (was_unevictable)",
       ["\tif (unlikely(was_unevictable))", "\tif (was_unevictable && nr_pages)"],
       "mm/swap: mark the unevictable rescue path unlikely",
       "Rescuing an unevictable folio is rare; tell the compiler so."),
    _c("mm/swap.c", "\tfolio_set_lru(folio);",
       ["\tfolio_set_lru(folio);\n\tsmp_mb__after_atomic();",
        "\tfolio_set_lru(folio);\n\tsmp_wmb();"],
       "mm/swap: order PG_lru against the LRU list update",
       "folio_isolate_lru() on another CPU may see PG_lru set before the folio is on\n"
       "the list. Add the barrier that pairs with the one in folio_isolate_lru()."),
    _c("mm/workingset.c", "\tif (refault_distance > workingset_size)",
       ["\tif (refault_distance >= workingset_size)",
        "\tif (refault_distance > workingset_size + SWAP_CLUSTER_MAX)"],
       "mm/workingset: activate refaults at the workingset size boundary",
       "A refault whose distance equals the workingset size would have stayed\n"
       "resident with one more page of memory. Treat it as part of the workingset."),
    _c("include/linux/mmzone.h", "\tint kswapd_failures;",
       ["\tunsigned int kswapd_failures;", "\tatomic_t kswapd_failures;"],
       "mm: make pglist_data::kswapd_failures unsigned",
       "The failure count never goes below zero; make its type say so."),
)

DEFAULT_POOL: tuple[Change, ...] = tuple(
    c for c in EDITS if c.path in ("mm/vmscan.c", "mm/swap.c")
)


def default_changes(title: str, count: int) -> tuple[Change, ...]:
    """`count` different changes to mm/vmscan.c or mm/swap.c, chosen by the series title."""
    if not 1 <= count <= len(DEFAULT_POOL):
        raise ValueError(f"a default series has 1..{len(DEFAULT_POOL)} patches, not {count}")
    start = int(hashlib.sha1(title.encode()).hexdigest(), 16) % len(DEFAULT_POOL)
    return tuple(DEFAULT_POOL[(start + i) % len(DEFAULT_POOL)] for i in range(count))


# --------------------------------------------------------------------------------------------
# A series


@dataclass(frozen=True)
class SeriesSpec:
    """What one posting of a patch series looks like.

    `changes` gives each patch's content explicitly; otherwise `same_changes_as` reuses an
    earlier version's patches (with the 1-based patch numbers in `revised` changed a little);
    otherwise the patches come from `default_changes(title, patches)`.
    """

    title: str  # the cover letter's subject, without the [PATCH ...] prefix
    author: Person = DEFAULT_AUTHOR
    patches: int = 3
    version: int = 1
    cover: bool = True
    threading: Threading = "shallow"
    in_reply_to: str | None = None  # "<msgid>": thread this posting under an earlier one
    change_id: str | None = None  # b4's "change-id:" line, e.g. "20261130-lru-batch-3f2a9c1e0b7d"
    subject_prefix: str = "PATCH"  # "RFC PATCH", "PATCH mm-unstable", "RESEND PATCH"
    to: tuple[str, ...] = (LIST_ADDRESS,)
    cc: tuple[str, ...] = ()
    # The first message's Date (the rest follow a minute apart); by default DEFAULT_START plus
    # a week for each version after the first, so that later versions are also later by date.
    start_date: dt.datetime | None = None
    changes: tuple[Change, ...] | None = None
    same_changes_as: SeriesSpec | None = None
    revised: tuple[int, ...] = ()
    blurb: str | None = None  # the cover letter's text; a short default when None

    def __post_init__(self) -> None:
        if self.threading not in ("shallow", "deep", "none"):
            raise ValueError(f"threading must be shallow, deep or none, not {self.threading!r}")
        if self.version < 1:
            raise ValueError("version starts at 1")
        if self.changes is not None and len(self.changes) != self.patches:
            raise ValueError(f"{len(self.changes)} changes given for {self.patches} patches")
        if self.start_date is not None and self.start_date.tzinfo is None:
            raise ValueError("start_date needs a time zone")

    @property
    def date(self) -> dt.datetime:
        """The Date of the first message."""
        if self.start_date is not None:
            return self.start_date
        return DEFAULT_START + dt.timedelta(weeks=self.version - 1)

    @property
    def slug(self) -> str:
        """The title as b4 makes a branch name of it: lower case, dashes, at most 40 chars."""
        slug = re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")
        return slug[:40].rstrip("-") or "series"

    @property
    def message_count(self) -> int:
        return self.patches + (1 if self.cover else 0)


def series_changes(spec: SeriesSpec) -> tuple[Change, ...]:
    """The change each patch of `spec` makes, in patch order."""
    if spec.changes is not None:
        changes = list(spec.changes)
    elif spec.same_changes_as is not None:
        changes = list(series_changes(spec.same_changes_as))[: spec.patches]
        used = {(c.path, c.old) for c in changes}
        spare = [c for c in DEFAULT_POOL if (c.path, c.old) not in used]
        changes += spare[: spec.patches - len(changes)]
        if len(changes) < spec.patches:
            raise ValueError(f"no room for {spec.patches} patches")
    else:
        changes = list(default_changes(spec.title, spec.patches))
    for number in spec.revised:
        if not 1 <= number <= len(changes):
            raise ValueError(f"revised patch {number} is not in 1..{len(changes)}")
        changes[number - 1] = changes[number - 1].revised()
    return tuple(changes)


def series_message_ids(spec: SeriesSpec) -> list[str]:
    """The Message-IDs `make_series` gives the messages of `spec`, cover letter (if any) first.

    `<{yyyymmdd}-{slug}[-{tag}]-v{N}-{i}@{author's domain}>` where i is 0 for the cover letter
    and the patch number otherwise, and tag names a prefix other than PATCH (rfc, resend,
    mm-unstable) so that an RFC and its PATCH posting do not collide.
    """
    domain = spec.author[1].rpartition("@")[2] or "example.org"
    stem = f"{spec.date:%Y%m%d}-{_branch_name(spec)}"
    first = 0 if spec.cover else 1
    return [f"<{stem}-{i}@{domain}>" for i in range(first, spec.patches + 1)]


def _identity(person: Person, date: str) -> dict[str, str]:
    name, mail = person
    return {
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": mail, "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": mail, "GIT_COMMITTER_DATE": date,
    }


def make_tree(path: Path) -> Path:
    """A new git repository at `path` (created if missing) with a small kernel-style tree.

    One commit on `master` with a fixed author and date, so its id is the same every time.
    """
    return commit_tree(
        path,
        TREE_FILES,
        "Import the lorelab demo tree\n\n"
        "A few files laid out like the memory management part of a kernel tree.",
    )


def commit_tree(path: Path, files: dict[str, str], message: str) -> Path:
    """`git init` at `path` and commit `files` (name -> text) on master as the tree keeper."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    git_output(path, "init", "-q", "-b", "master")
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git_output(path, "add", "--", *files)
    git_output(path, "commit", "-q", "--no-verify", "-m", message,
         env=_identity(_TREE_AUTHOR, _TREE_DATE))
    return path


def _git_date(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S%z")


def _commit_series(tree: Path, spec: SeriesSpec, branch: str) -> None:
    """Commit the series on `branch` off master with plumbing: HEAD and the work tree stay put."""
    changes = series_changes(spec)
    files: dict[str, str] = {}
    parent = git_output(tree, "rev-parse", "master^{commit}").strip()
    first = 1 if spec.cover else 0
    with tempfile.TemporaryDirectory(prefix="lorelab-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git_output(tree, "read-tree", parent, env=index)
        for number, change in enumerate(changes, start=1):
            if change.path not in files:
                files[change.path] = git_output(tree, "show", f"{parent}:{change.path}")
            files[change.path] = change.apply(files[change.path])
            blob = git_output(tree, "hash-object", "-w", "--stdin",
                              input=files[change.path].encode()).strip()
            git_output(tree, "update-index", "--cacheinfo", f"100644,{blob},{change.path}",
                       env=index)
            tree_id = git_output(tree, "write-tree", env=index).strip()
            name, mail = spec.author
            message = f"{change.subject}\n\n{change.body}\n\nSigned-off-by: {name} <{mail}>\n"
            when = spec.date + dt.timedelta(minutes=first + number - 1)
            parent = git_output(tree, "commit-tree", tree_id, "-p", parent,
                          env=_identity(spec.author, _git_date(when)),
                          input=message.encode()).strip()
    git_output(tree, "update-ref", f"refs/heads/{branch}", parent)


def _branch_name(spec: SeriesSpec) -> str:
    """"{slug}[-{tag}]-v{N}", tag naming the words of the prefix other than PATCH."""
    words = [w for w in spec.subject_prefix.lower().split() if w != "patch"]
    tag = "".join(f"-{re.sub(r'[^a-z0-9]+', '-', w).strip('-')}" for w in words)
    return f"{spec.slug}{tag}-v{spec.version}"


_HEADER_ORDER = ("From", "To", "Cc", "Subject", "Date", "Message-ID", "X-Mailer", "In-Reply-To",
                 "References", "List-Id", "MIME-Version", "Content-Type",
                 "Content-Transfer-Encoding")


def _split_headers(raw: str) -> tuple[list[tuple[str, str]], str]:
    """(name, raw value with its folding) pairs and the body of a format-patch file."""
    head, _, body = raw.partition("\n\n")
    headers: list[tuple[str, str]] = []
    for line in head.split("\n"):
        if line.startswith("From ") and not headers:
            continue  # the mbox "From <sha> Mon Sep 17 00:00:00 2001" line
        if line[:1] in (" ", "\t") and headers:
            name, value = headers[-1]
            headers[-1] = (name, f"{value}\n{line}")
        else:
            name, _, value = line.partition(":")
            headers.append((name, value.strip()))
    return headers, body


def _fold_ids(ids: Iterable[str]) -> str:
    return "\n\t".join(ids)


def _default_blurb(spec: SeriesSpec, changes: Sequence[Change]) -> str:
    files = sorted({c.path for c in changes})
    text = textwrap.fill(
        f"This series is about {spec.title[:1].lower()}{spec.title[1:]}. While looking at "
        f"reclaim under memory pressure I found a few small things in {' and '.join(files)} "
        "worth changing; each patch says why.", width=72)
    text += (
        "\n\nTested with vm-scalability (case-lru-file-readtwice) and hackbench on a\n"
        "2-socket machine; numbers are in the individual patches where they matter."
    )
    if spec.version > 1:
        text += f"\n\nChanges in v{spec.version}:\n"
        if spec.revised:
            numbers = ", ".join(str(n) for n in spec.revised)
            text += f"- Reworked patch {numbers} as suggested in review.\n"
        else:
            text += "- Rebased, no functional change.\n"
        text += "- Collected review tags.\n"
        previous = spec.in_reply_to
        if previous is None and spec.same_changes_as is not None:
            previous = series_message_ids(spec.same_changes_as)[0]
        if previous:
            text += (f"- Link to v{spec.version - 1}: "
                     f"https://lore.kernel.org/r/{previous.strip('<>')}\n")
        text = text.rstrip("\n")
    return text


def _encode_address(address: str) -> str:
    # git send-email writes non-ASCII names RFC 2047 encoded; format-patch leaves them raw.
    name, mail = email.utils.parseaddr(address)
    return _format_person((name, mail)) if mail else address


def make_series(tree: Path, spec: SeriesSpec) -> list[bytes]:
    """The messages of one posting of `spec`, cover letter first, as `git send-email` sends them.

    The commits go on a branch named after the series (master is not touched); the messages
    are `git format-patch` output with the mbox From_ line removed, the cover letter filled in,
    and deterministic Message-ID, Date, In-Reply-To/References, X-Mailer and List-Id headers.
    """
    tree = Path(tree)
    changes = series_changes(spec)
    branch = _branch_name(spec)
    _commit_series(tree, spec, branch)

    args = ["format-patch", "-q", "--base=master", f"--subject-prefix={spec.subject_prefix}"]
    if spec.cover:
        args.append("--cover-letter")
    if spec.version > 1:
        args.append(f"-v{spec.version}")
    args.append("--no-thread" if spec.threading == "none" else f"--thread={spec.threading}")
    if spec.in_reply_to:
        args.append(f"--in-reply-to={spec.in_reply_to}")
    args += [f"--to={_encode_address(a)}" for a in spec.to]
    args += [f"--cc={_encode_address(a)}" for a in spec.cc]
    identity = _identity(spec.author, _git_date(spec.date))
    git_version = git_output(tree, "--version").split()[-1]
    with tempfile.TemporaryDirectory(prefix="lorelab-format-patch-") as out:
        git_output(tree, *args, "-o", out, f"master..{branch}", env=identity)
        files = sorted(Path(out).iterdir())
        texts = [f.read_text(encoding="utf-8") for f in files]
    if len(texts) != spec.message_count:
        raise RuntimeError(f"git format-patch wrote {len(texts)} files, expected "
                           f"{spec.message_count}")

    ours = series_message_ids(spec)
    parsed = [_split_headers(t) for t in texts]
    theirs = {dict(h).get("Message-Id", f"<unset-{i}>").strip(): ours[i]
              for i, (h, _) in enumerate(parsed)}

    def rewrite(value: str) -> list[str]:
        return [theirs.get(i, i) for i in re.findall(r"<[^>]+>", value)]

    messages = []
    for i, (headers, body) in enumerate(parsed):
        fields = dict(headers)
        if spec.cover and i == 0:
            subject = fields["Subject"].replace("*** SUBJECT HERE ***", spec.title)
            fields["Subject"] = _encode_words(subject)
            blurb = spec.blurb if spec.blurb is not None else _default_blurb(spec, changes)
            body = body.replace("*** BLURB HERE ***", blurb)
        if spec.change_id:
            body = re.sub(r"^(base-commit: [0-9a-f]+)$", rf"\1\nchange-id: {spec.change_id}",
                          body, count=1, flags=re.M)
        when = spec.date + dt.timedelta(minutes=i)
        fields["Date"] = email.utils.format_datetime(when)
        fields["Message-ID"] = ours[i]
        fields["X-Mailer"] = f"git-send-email {git_version}"
        fields["List-Id"] = LIST_ID
        for name in ("In-Reply-To", "References"):
            if name in fields:
                fields[name] = _fold_ids(rewrite(fields[name]))
        fields.pop("Message-Id", None)
        fields.setdefault("MIME-Version", "1.0")
        fields.setdefault("Content-Type", "text/plain; charset=UTF-8")
        fields.setdefault("Content-Transfer-Encoding", "8bit")
        head = "".join(f"{name}: {fields[name]}\n" for name in _HEADER_ORDER if name in fields)
        messages.append(f"{head}\n{body}".encode())
    return messages


# --------------------------------------------------------------------------------------------
# Replies and mboxes


def _parse(raw: bytes) -> email.message.EmailMessage:
    return email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[return-value]


def _text_body(message: email.message.EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",)) or message
    try:
        return part.get_content()
    except (LookupError, KeyError):
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", errors="replace")


def _addresses(message: email.message.EmailMessage, *names: str) -> list[tuple[str, str]]:
    values = [str(message[n]) for n in names if message[n] is not None]
    return [(n, a) for n, a in email.utils.getaddresses(values) if a]


def _encode_words(text: str) -> str:
    """RFC 2047 encoded words for a header value with non-ASCII text; ASCII is left alone.

    Done by hand because b4 switches off the stdlib's header encoding of utf-8 for the whole
    process (`email.charset.add_charset("utf-8", None)`) once it is imported.
    """
    if text.isascii():
        return text
    words, chunk = [], ""
    for char in text:
        # An encoded word is at most 75 characters: 10 for "=?utf-8?q?" and "?=", 65 of text.
        if len(email.quoprimime.header_encode((chunk + char).encode(), "utf-8")) > 75:
            words.append(chunk)
            chunk = ""
        chunk += char
    words.append(chunk)
    return "\n ".join(email.quoprimime.header_encode(w.encode(), "utf-8") for w in words)


def _format_person(person: Person) -> str:
    name, mail = person
    if name.isascii():
        return email.utils.formataddr((name, mail))
    return f"{_encode_words(name)} <{mail}>"


def _reply_subject(subject: str) -> str:
    return "Re: " + without_reply_words(subject)


def make_reply(
    parent: bytes,
    *,
    author: Person,
    body: str,
    trailers: Sequence[str] = (),
    quote: bool = True,
    quote_lines: int = 12,
    diff: str | None = None,
    date: dt.datetime | None = None,
    msgid: str | None = None,
) -> bytes:
    """A reply to `parent` as a mail client sends it to the list.

    One "Re:" in the subject; In-Reply-To the parent and References the parent's References
    plus its Message-ID; To the parent's sender and Cc everyone else; the first `quote_lines`
    lines of the parent quoted with "> " under an attribution line when `quote` is true; then
    `body`, an optional inline `diff` (a reviewer's suggestion), and `trailers`
    ("Reviewed-by: Name <email>"). Date defaults to an hour after the parent's, Message-ID to
    one derived from the parent, the author and the text.
    """
    message = _parse(parent)
    parent_id = str(message["Message-ID"] or "").strip()
    if not parent_id:
        raise ValueError("the parent has no Message-ID to reply to")
    parent_date = email.utils.parsedate_to_datetime(str(message["Date"])) if message["Date"] \
        else DEFAULT_START
    when = date or parent_date + dt.timedelta(hours=1)
    if when.tzinfo is None:
        raise ValueError("date needs a time zone")

    references = re.findall(r"<[^>]+>", str(message["References"] or ""))
    if not references and message["In-Reply-To"]:
        references = re.findall(r"<[^>]+>", str(message["In-Reply-To"]))
    references.append(parent_id)

    senders = _addresses(message, "From")
    others = _addresses(message, "To", "Cc")
    mine = author[1].lower()
    to = [p for p in senders if p[1].lower() != mine] or senders
    seen = {a.lower() for _, a in to} | {mine}
    cc = []
    for person in others:
        if person[1].lower() not in seen:
            seen.add(person[1].lower())
            cc.append(person)

    parts = []
    if quote:
        sender = (senders[0][0] or senders[0][1]) if senders else "someone"
        stamp = parent_date.strftime("%a, %b %d, %Y at %I:%M:%S%p %z")
        quoted = _text_body(message).split("\n")[:quote_lines]
        parts.append(f"On {stamp}, {sender} wrote:\n"
                     + "\n".join(f"> {line}".rstrip() for line in quoted) + "\n")
    parts.append(body.strip("\n") + "\n")
    if diff:
        parts.append(diff.strip("\n") + "\n")
    if trailers:
        parts.append("\n".join(trailers) + "\n")
    text = "\n".join(parts)

    if msgid is None:
        digest = hashlib.sha1("\0".join([parent_id, author[1], text]).encode()).hexdigest()
        domain = author[1].rpartition("@")[2] or "example.org"
        msgid = f"<{when:%Y%m%d%H%M%S}.{digest[:16]}@{domain}>"

    fields = [
        ("From", _format_person(author)),
        ("To", ", ".join(_format_person(p) for p in to)),
        ("Cc", ",\n\t".join(_format_person(p) for p in cc)),
        ("Subject", _encode_words(_reply_subject(str(message["Subject"] or "")))),
        ("Date", email.utils.format_datetime(when)),
        ("Message-ID", msgid),
        ("In-Reply-To", parent_id),
        ("References", _fold_ids(references)),
        ("List-Id", str(message["List-Id"] or LIST_ID)),
        ("MIME-Version", "1.0"),
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Disposition", "inline"),
        ("Content-Transfer-Encoding", "8bit"),
        ("User-Agent", "Mutt/2.2.12 (2023-09-09)"),
    ]
    head = "".join(f"{name}: {value}\n" for name, value in fields if value)
    return f"{head}\n{text}".encode()


_FROM_LINE = re.compile(rb"^(>*From )", re.M)


def as_mbox(messages: Iterable[bytes]) -> bytes:
    """The messages as one mboxrd file, in the given order (lore's From_ line, ">From " escaped)."""
    out = []
    for raw in messages:
        raw = raw.replace(b"\r\n", b"\n")
        if not raw.endswith(b"\n"):
            raw += b"\n"
        out.append(MBOXRD_FROM_LINE + _FROM_LINE.sub(rb">\1", raw) + b"\n")
    return b"".join(out)
