"""A stand-in kernel tree whose "kernel" is a userspace page-reclaim simulator, for fast tests.

The tree builds like a kernel (`make O=DIR defconfig|tinyconfig|olddefconfig`, then
`make O=DIR bzImage`, with real header dependencies so that a patched rebuild is incremental),
and its `arch/x86/boot/bzImage` is a program: an LRU reclaim simulator in `mm/vmscan.c` with one
thread per simulated CPU, that prints `ops/s: N` when run (what a `local` runner benchmarks).

`make_sim_tree` creates the git tree; `BATCH_COUNTERS` is a two-patch series that folds the
reclaim event counters into one atomic update per batch, as the seed lru_gen patch does: with
two CPUs updating the shared counters it makes the simulator measurably faster.
`PACED_RECLAIM` is a four-patch series whose third patch alone makes it much slower.
`PADDING` only adds an unused function: a change of code layout alone, which the simulator's
model of instruction fetch (above shrink_lruvec()) feels unless functions are 64-byte aligned.
Those two are measured on `ONE_CPU_CONFIG`, where the host's placement of the CPUs cannot hide
them.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.demo.threads import Change, SeriesSpec, commit_tree

_MAKEFILE = """\
# SPDX-License-Identifier: GPL-2.0
VERSION = 6
PATCHLEVEL = 18
SUBLEVEL = 0
NAME = Reclaim Simulator

# A stand-in for the kernel's build: `make O=DIR defconfig|tinyconfig|olddefconfig` and
# `make O=DIR bzImage`. Every output goes under O=; the "kernel" is a userspace reclaim
# simulator (run it: it prints ops/s), built with real dependency tracking so that a
# rebuild after a patch recompiles only what the patch touched.

srctree := $(CURDIR)
O ?= .
objtree := $(abspath $(O))
CC = gcc

CFLAGS := -O2 -Wall -Werror=implicit-function-declaration -std=gnu11 -pthread \\
\t  -I$(srctree)/include -I$(objtree)/include -MMD -MP
OBJS := $(objtree)/init/main.o $(objtree)/mm/vmscan.o
IMAGE := $(objtree)/arch/x86/boot/bzImage

PHONY := all bzImage clean tinyconfig defconfig olddefconfig
all: bzImage

bzImage: $(IMAGE)

$(IMAGE): $(OBJS)
\t@mkdir -p $(dir $@)
\t$(CC) $(CFLAGS) -o $@ $(OBJS)
\t@echo "Kernel: arch/x86/boot/bzImage is ready"

$(objtree)/%.o: $(srctree)/%.c $(objtree)/include/generated/autoconf.h
\t@mkdir -p $(dir $@)
\t$(CC) $(CFLAGS) -c -o $@ $<

# Written only when the configuration changed, so that olddefconfig rebuilds nothing.
$(objtree)/include/generated/autoconf.h: $(objtree)/.config
\t@sh $(srctree)/scripts/kconfig.sh autoconf $(srctree) $(objtree)

$(objtree)/.config:
\t@echo "no .config in $(objtree): run make O=$(O) defconfig first" >&2; exit 1

tinyconfig defconfig olddefconfig:
\t@sh $(srctree)/scripts/kconfig.sh $@ $(srctree) $(objtree)

clean:
\trm -rf $(objtree)/init $(objtree)/mm $(objtree)/arch $(objtree)/include

-include $(OBJS:.o=.d)

# Extra compiler flags from the environment or the command line, appended as Kbuild does
# (KCFLAGS=-falign-functions=64 is how an align follow-up forces function alignment); the
# recipes above read CFLAGS when they run, after this line.
CFLAGS += $(KCFLAGS)

.PHONY: $(PHONY)
"""

_KCONFIG = """\
SMP=y
SIM_NR_CPUS=2
SIM_PAGES=4096
VM_EVENT_COUNTERS=y
"""

_KCONFIG_SH = """\
#!/bin/sh
# A stand-in for scripts/kconfig: every symbol and its default is a line "NAME=default" in
# Kconfig. Files are replaced only when their content changes, as Kbuild's filechk does.
set -e
target=$1 srctree=$2 objtree=$3
mkdir -p "$objtree/include/generated"

replace_if_changed() {
\tif cmp -s "$1" "$2"; then rm -f "$1"; else mv "$1" "$2"; fi
}

olddefconfig() {
\t[ -f "$objtree/.config" ] || : > "$objtree/.config"
\tawk '
\tFNR == NR {
\t\tif ($0 ~ /^CONFIG_[A-Za-z0-9_]+=/) {
\t\t\teq = index($0, "="); val[substr($0, 8, eq - 8)] = substr($0, eq + 1)
\t\t} else if ($0 ~ /^# CONFIG_[A-Za-z0-9_]+ is not set/) {
\t\t\tval[substr($2, 8)] = "n"
\t\t}
\t\tnext
\t}
\t/^[A-Za-z0-9_]+=/ {
\t\teq = index($0, "="); name = substr($0, 1, eq - 1); v = substr($0, eq + 1)
\t\tif (name in val) v = val[name]
\t\tif (v == "n") print "# CONFIG_" name " is not set"; else print "CONFIG_" name "=" v
\t}' "$objtree/.config" "$srctree/Kconfig" > "$objtree/.config.new"
\treplace_if_changed "$objtree/.config.new" "$objtree/.config"
}

case "$target" in
tinyconfig|defconfig)
\tcp "$srctree/arch/x86/configs/$target" "$objtree/.config"
\tolddefconfig ;;
olddefconfig)
\tolddefconfig ;;
autoconf)
\tsed -n -e 's/^CONFIG_\\([A-Za-z0-9_]*\\)=y$/#define CONFIG_\\1 1/p' \\
\t       -e 's/^CONFIG_\\([A-Za-z0-9_]*\\)=\\(.*\\)$/#define CONFIG_\\1 \\2/p' \\
\t       "$objtree/.config" > "$objtree/include/generated/autoconf.h.new"
\treplace_if_changed "$objtree/include/generated/autoconf.h.new" \\
\t\t"$objtree/include/generated/autoconf.h" ;;
*)
\techo "kconfig.sh: unknown target $target" >&2; exit 2 ;;
esac
"""

_DEFCONFIG = """\
# The defaults: two CPUs, 16 MB of simulated memory, event counters on.
"""

_TINYCONFIG = """\
# The smallest: one CPU, no event counters.
# CONFIG_SMP is not set
CONFIG_SIM_PAGES=1024
# CONFIG_VM_EVENT_COUNTERS is not set
"""

_MMZONE_H = """\
/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_MMZONE_H
#define _LINUX_MMZONE_H

#include <generated/autoconf.h>
#include <pthread.h>
#include <stdbool.h>

#define DEF_PRIORITY 12

enum lru_list {
\tLRU_INACTIVE,
\tLRU_ACTIVE,
\tNR_LRU_LISTS
};

#define PG_referenced\t0x1u
#define PG_resident\t0x2u

struct page {
\tstruct page *prev, *next;
\tunsigned int flags;
\tunsigned int lru;
\tunsigned long index;\t/* which page of the file it holds */
};

/* One node's LRU lists: each simulated CPU reclaims its own node. */
struct lruvec {
\tstruct page lists[NR_LRU_LISTS];\t/* list heads */
\tunsigned long nr[NR_LRU_LISTS];
\tstruct page *free;\t\t\t/* free frames */
\tpthread_spinlock_t lru_lock;
};

void lru_add(struct lruvec *lruvec, struct page *page, enum lru_list lru);
unsigned long shrink_lruvec(struct lruvec *lruvec, unsigned long nr_to_reclaim);

#endif /* _LINUX_MMZONE_H */
"""

_VMSTAT_H = """\
/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_VMSTAT_H
#define _LINUX_VMSTAT_H

#include <generated/autoconf.h>

enum vm_event_item {
\tPGFAULT,
\tPGSCAN,
\tPGSTEAL,
\tPGACTIVATE,
\tPGDEACTIVATE,
\tNR_VM_EVENT_ITEMS
};

/*
 * The global event counters, shared by every CPU: an update is an atomic
 * read-modify-write on a cache line the other CPUs write too.
 */
extern unsigned long vm_events[NR_VM_EVENT_ITEMS];

#ifdef CONFIG_VM_EVENT_COUNTERS
static inline void count_vm_events(enum vm_event_item item, unsigned long delta)
{
\t__atomic_fetch_add(&vm_events[item], delta, __ATOMIC_SEQ_CST);
}
#else
static inline void count_vm_events(enum vm_event_item item, unsigned long delta) { }
#endif

static inline void count_vm_event(enum vm_event_item item)
{
\tcount_vm_events(item, 1);
}

#endif /* _LINUX_VMSTAT_H */
"""

_MAIN_C = """\
// SPDX-License-Identifier: GPL-2.0
/*
 * init/main.c - the reclaim simulator's "boot": one thread per simulated CPU,
 * each faulting pages of a file larger than its memory, so that every fault
 * past warm-up reclaims. Prints the throughput as lkp-tests parses it.
 *
 * Usage: bzImage [operations per CPU]
 */

#include <linux/mmzone.h>
#include <linux/vmstat.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef CONFIG_SMP
#define NR_CPUS CONFIG_SIM_NR_CPUS
#else
#define NR_CPUS 1
#endif

unsigned long vm_events[NR_VM_EVENT_ITEMS];
static const char *const vm_event_names[] = {
\t"pgfault", "pgscan", "pgsteal", "pgactivate", "pgdeactivate",
};

struct cpu {
\tpthread_t thread;
\tstruct lruvec lruvec;
\tstruct page *frames;\t\t/* CONFIG_SIM_PAGES of memory */
\tstruct page **mapping;\t\t/* file index -> frame, or NULL */
\tunsigned long long seed;
\tunsigned long ops;
};

#define FILE_PAGES (CONFIG_SIM_PAGES * 4)
#define NO_INDEX (~0UL)

static unsigned long next_index(struct cpu *cpu)
{
\t/* xorshift64*; a quarter of the accesses go to a hot eighth of the file */
\tcpu->seed ^= cpu->seed >> 12;
\tcpu->seed ^= cpu->seed << 25;
\tcpu->seed ^= cpu->seed >> 27;
\tunsigned long long r = cpu->seed * 2685821657736338717ULL;

\tif ((r >> 60) < 4)
\t\treturn (r >> 8) % (FILE_PAGES / 8);
\treturn (r >> 8) % FILE_PAGES;
}

static void *cpu_run(void *arg)
{
\tstruct cpu *cpu = arg;
\tstruct lruvec *lruvec = &cpu->lruvec;

\tfor (unsigned long i = 0; i < cpu->ops; i++) {
\t\tunsigned long index = next_index(cpu);
\t\tstruct page *page = cpu->mapping[index];

\t\tif (page && page->flags & PG_resident) {
\t\t\tpage->flags |= PG_referenced;
\t\t\tcontinue;
\t\t}
\t\tcount_vm_event(PGFAULT);
\t\tif (!lruvec->free)
\t\t\tshrink_lruvec(lruvec, 1);
\t\tpage = lruvec->free;
\t\tlruvec->free = page->next;
\t\tif (page->index != NO_INDEX)
\t\t\tcpu->mapping[page->index] = NULL;\t/* its old contents were evicted */
\t\tpage->flags = PG_resident;
\t\tpage->index = index;
\t\tcpu->mapping[index] = page;
\t\tpthread_spin_lock(&lruvec->lru_lock);
\t\tlru_add(lruvec, page, LRU_INACTIVE);
\t\tpthread_spin_unlock(&lruvec->lru_lock);
\t}
\treturn NULL;
}

int main(int argc, char **argv)
{
\tunsigned long ops = argc > 1 ? strtoul(argv[1], NULL, 10) : 4000000;
\tstatic struct cpu cpus[NR_CPUS];
\tstruct timespec start, end;

\tfor (int c = 0; c < NR_CPUS; c++) {
\t\tstruct cpu *cpu = &cpus[c];

\t\tcpu->ops = ops;
\t\tcpu->seed = 0x9E3779B97F4A7C15ULL * (c + 1);
\t\tcpu->frames = calloc(CONFIG_SIM_PAGES, sizeof(*cpu->frames));
\t\tcpu->mapping = calloc(FILE_PAGES, sizeof(*cpu->mapping));
\t\tif (!cpu->frames || !cpu->mapping)
\t\t\treturn 1;
\t\tpthread_spin_init(&cpu->lruvec.lru_lock, PTHREAD_PROCESS_PRIVATE);
\t\tfor (int l = 0; l < NR_LRU_LISTS; l++)
\t\t\tcpu->lruvec.lists[l].next = cpu->lruvec.lists[l].prev = &cpu->lruvec.lists[l];
\t\tfor (long p = CONFIG_SIM_PAGES - 1; p >= 0; p--) {
\t\t\tcpu->frames[p].index = NO_INDEX;
\t\t\tcpu->frames[p].next = cpu->lruvec.free;
\t\t\tcpu->lruvec.free = &cpu->frames[p];
\t\t}
\t}
\tclock_gettime(CLOCK_MONOTONIC, &start);
\tfor (int c = 0; c < NR_CPUS; c++)
\t\tpthread_create(&cpus[c].thread, NULL, cpu_run, &cpus[c]);
\tfor (int c = 0; c < NR_CPUS; c++)
\t\tpthread_join(cpus[c].thread, NULL);
\tclock_gettime(CLOCK_MONOTONIC, &end);

\tdouble seconds = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;

\tprintf("cpus: %d\\n", NR_CPUS);
\tfor (int item = 0; item < NR_VM_EVENT_ITEMS; item++)
\t\tprintf("%s: %lu\\n", vm_event_names[item], vm_events[item]);
\tprintf("seconds: %.3f\\n", seconds);
\tprintf("ops/s: %.0f\\n", NR_CPUS * ops / seconds);
\treturn 0;
}
"""

_VMSCAN_C = """\
// SPDX-License-Identifier: GPL-2.0
/*
 * mm/vmscan.c - page reclaim for the lorelab reclaim simulator.
 *
 * Two LRU lists per lruvec, as the kernel had them before MGLRU: new
 * folios go to the head of the inactive list; reclaim takes folios from
 * the tail of the inactive list, activates the referenced ones and frees
 * the rest, and refills the inactive list from the tail of the active one.
 */

#include <linux/mmzone.h>
#include <linux/vmstat.h>

/* How many folios reclaim isolates from an LRU list at a time. */
#define SWAP_CLUSTER_MAX\t32UL

/* Reclaim statistics are folded into the global vm events every this many. */
#define VM_EVENT_BATCH\t\t1

struct scan_control {
\tunsigned long nr_to_reclaim;
\tunsigned long nr_reclaimed;
\tunsigned long pending[NR_VM_EVENT_ITEMS];
};

static void flush_vm_events(struct scan_control *sc)
{
\tfor (int item = 0; item < NR_VM_EVENT_ITEMS; item++) {
\t\tif (sc->pending[item]) {
\t\t\tcount_vm_events(item, sc->pending[item]);
\t\t\tsc->pending[item] = 0;
\t\t}
\t}
}

static inline void sc_count(struct scan_control *sc, enum vm_event_item item)
{
\tif (++sc->pending[item] >= VM_EVENT_BATCH) {
\t\tcount_vm_events(item, sc->pending[item]);
\t\tsc->pending[item] = 0;
\t}
}

void lru_add(struct lruvec *lruvec, struct page *page, enum lru_list lru)
{
\tstruct page *head = &lruvec->lists[lru];

\tpage->next = head->next;
\tpage->prev = head;
\thead->next->prev = page;
\thead->next = page;
\tpage->lru = lru;
\tlruvec->nr[lru]++;
}

static void lru_del(struct lruvec *lruvec, struct page *page)
{
\tpage->prev->next = page->next;
\tpage->next->prev = page->prev;
\tlruvec->nr[page->lru]--;
}

static void shrink_active_list(struct lruvec *lruvec, unsigned long nr_to_scan,
\t\t\t       struct scan_control *sc)
{
\tstruct page *head = &lruvec->lists[LRU_ACTIVE];

\twhile (nr_to_scan-- && head->prev != head) {
\t\tstruct page *page = head->prev;

\t\tlru_del(lruvec, page);
\t\tpage->flags &= ~PG_referenced;
\t\tlru_add(lruvec, page, LRU_INACTIVE);
\t\tcount_vm_event(PGDEACTIVATE);
\t}
}

static void shrink_inactive_list(struct lruvec *lruvec, unsigned long nr_to_scan,
\t\t\t\t struct scan_control *sc)
{
\tstruct page *head = &lruvec->lists[LRU_INACTIVE];

\twhile (nr_to_scan-- && head->prev != head) {
\t\tstruct page *page = head->prev;

\t\tlru_del(lruvec, page);
\t\tsc_count(sc, PGSCAN);
\t\tif (page->flags & PG_referenced) {
\t\t\tpage->flags &= ~PG_referenced;
\t\t\tlru_add(lruvec, page, LRU_ACTIVE);
\t\t\tsc_count(sc, PGACTIVATE);
\t\t\tcontinue;
\t\t}
\t\tpage->flags &= ~PG_resident;
\t\tpage->next = lruvec->free;
\t\tlruvec->free = page;
\t\tsc->nr_reclaimed++;
\t\tsc_count(sc, PGSTEAL);
\t}
}

/* Keep the inactive list at least as long as the active one, as the kernel does. */
static bool inactive_is_low(struct lruvec *lruvec)
{
\treturn lruvec->nr[LRU_INACTIVE] < lruvec->nr[LRU_ACTIVE];
}

/*
 * Instruction fetch, modelled. Where a hot function starts within a 64-byte
 * cache line decides how many lines the front end fetches for it, so a patch
 * that only moves code (an unused function added above it) can make a
 * benchmark faster or slower. The kernel test robot kept reporting such
 * "changes", which is why the kernel grew CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B
 * (earlier _32B). A userspace program does not feel this reliably enough for
 * a test, so the simulator models it, exaggerated so that a loaded machine
 * can tell (on a contended virtual machine the rest of the simulator slows
 * down and a stall of a quarter of this one moved it by only 38%): the
 * first FETCH_HOT_BYTES of shrink_lruvec() are its hot path, and each
 * reclaim pass stalls FETCH_STALL_SPINS for every line they spill
 * into past the first, computed from the function's own address. Built with
 * -falign-functions=64 every function starts a line, and nothing spills.
 */
#define FETCH_LINE\t\t64
#define FETCH_HOT_BYTES\t\t48
#define FETCH_STALL_SPINS\t48000

static inline void fetch_stall(const char *code)
{
\tunsigned long offset = (unsigned long)code % FETCH_LINE;
\tunsigned long spilled = (offset + FETCH_HOT_BYTES - 1) / FETCH_LINE;

\tfor (unsigned long spin = spilled * FETCH_STALL_SPINS; spin; spin--)
\t\t__asm__ volatile("");
}

/*
 * shrink_lruvec()'s code, read through its symbol: taking the function's
 * address in C would make gcc emit it before the functions above it.
 */
extern const char shrink_lruvec_code[] __asm__("shrink_lruvec");

/*
 * Starts a cache line, so that where shrink_lruvec() falls within its line
 * depends only on what lies between the two, not on the code the linker put
 * before this file or on the functions above.
 */
__attribute__((aligned(FETCH_LINE))) void vmscan_text_start(void)
{
}

unsigned long shrink_lruvec(struct lruvec *lruvec, unsigned long nr_to_reclaim)
{
\tstruct scan_control sc = { .nr_to_reclaim = nr_to_reclaim };
\tint priority = DEF_PRIORITY;

\tpthread_spin_lock(&lruvec->lru_lock);
\twhile (sc.nr_reclaimed < sc.nr_to_reclaim && priority-- > 0) {
\t\tfetch_stall(shrink_lruvec_code);
\t\tif (inactive_is_low(lruvec))
\t\t\tshrink_active_list(lruvec, SWAP_CLUSTER_MAX, &sc);
\t\tshrink_inactive_list(lruvec, SWAP_CLUSTER_MAX, &sc);
\t}
\tflush_vm_events(&sc);
\tpthread_spin_unlock(&lruvec->lru_lock);
\treturn sc.nr_reclaimed;
}
"""

SIM_FILES: dict[str, str] = {
    "Makefile": _MAKEFILE,
    "Kconfig": _KCONFIG,
    "scripts/kconfig.sh": _KCONFIG_SH,
    "arch/x86/configs/defconfig": _DEFCONFIG,
    "arch/x86/configs/tinyconfig": _TINYCONFIG,
    "include/linux/mmzone.h": _MMZONE_H,
    "include/linux/vmstat.h": _VMSTAT_H,
    "init/main.c": _MAIN_C,
    "mm/vmscan.c": _VMSCAN_C,
}

BATCH_COUNTERS: tuple[Change, ...] = (
    Change(
        path="mm/vmscan.c",
        old="#define VM_EVENT_BATCH\t\t1",
        variants=("#define VM_EVENT_BATCH\t\tSWAP_CLUSTER_MAX", "#define VM_EVENT_BATCH\t\t64"),
        subject="mm/vmscan: batch reclaim event counter updates",
        body="Every folio shrink_inactive_list() scans updates the global vm event\n"
             "counters with an atomic add, and with several CPUs in reclaim that cache\n"
             "line bounces between them. Fold the updates into scan_control and flush\n"
             "them once per batch, as lru_gen does for its counters.",
    ),
    Change(
        path="mm/vmscan.c",
        old="\t\tcount_vm_event(PGDEACTIVATE);",
        variants=("\t\tsc_count(sc, PGDEACTIVATE);",),
        subject="mm/vmscan: count deactivations in the same batch",
        body="shrink_active_list() still updates PGDEACTIVATE once per folio. Count it\n"
             "in scan_control like the other reclaim events.",
    ),
)

BATCH_TITLE = "mm/vmscan: batch reclaim event counter updates"


_BATCH_SPEC = SeriesSpec(title=BATCH_TITLE, patches=2, changes=BATCH_COUNTERS,
                         change_id="20261130-vmscan-batch-counters")


def batch_series_spec(**overrides: Any) -> SeriesSpec:
    """The two-patch batching series, with a cover letter, as a `SeriesSpec`."""
    return replace(_BATCH_SPEC, **overrides)


# A four-patch series whose third patch makes reclaim much slower (a busy wait per reclaimed
# page: the simulator runs several times slower; a wait of a quarter of this one slowed it by
# only a half on a contended virtual machine) and whose other three change only comments: what
# a bisection (bot/runs/bisection.py) must pin on 3/4, even on a loaded machine.
PACED_RECLAIM: tuple[Change, ...] = (
    Change(
        path="init/main.c",
        old=" * Usage: bzImage [operations per CPU]",
        variants=(" * Usage: bzImage [operations per simulated CPU]",),
        subject="init: say that the operation count is per simulated CPU",
        body="The argument is the number of operations each simulated CPU makes, not\n"
             "the total. Say so.",
    ),
    Change(
        path="mm/vmscan.c",
        old="/* Keep the inactive list at least as long as the active one, as the kernel does. */",
        variants=("/* The inactive list is kept at least as long as the active one. */",),
        subject="mm/vmscan: reword the inactive_is_low comment",
        body="A comment only.",
    ),
    Change(
        path="mm/vmscan.c",
        old="\t\tsc->nr_reclaimed++;",
        variants=("\t\tsc->nr_reclaimed++;\n"
                  "\t\tfor (volatile int spin = 0; spin < 400; spin++)\n"
                  "\t\t\t;\t/* let the other CPUs' faults through */",),
        subject="mm/vmscan: pace reclaim behind the other CPUs' faults",
        body="Reclaim that frees folios back to back starves the faults of the other\n"
             "CPUs. Wait a little after each folio freed.",
    ),
    Change(
        path="init/main.c",
        old="\t/* xorshift64*; a quarter of the accesses go to a hot eighth of the file */",
        variants=("\t/* xorshift64*: a quarter of the accesses go to the hot eighth of "
                  "the file */",),
        subject="init: tidy the access pattern comment",
        body="A comment only.",
    ),
)

PACED_TITLE = "mm/vmscan: reclaim pacing and comment fixes"


_PACED_SPEC = SeriesSpec(title=PACED_TITLE, patches=4, changes=PACED_RECLAIM,
                         change_id="20261201-vmscan-pacing")


def paced_series_spec(**overrides: Any) -> SeriesSpec:
    """The four-patch series whose 3/4 slows the simulator, with a cover letter."""
    return replace(_PACED_SPEC, **overrides)


# A one-patch series that only pads code: an unused helper above shrink_lruvec(), no functional
# change. It moves shrink_lruvec() by 32 bytes within its cache line (27 bytes of code with gcc
# 12 -O2, rounded up to gcc's 16-byte function alignment): from 16 bytes into its line, where
# its hot path fits, to 48, where it spills into the next line. The simulator's model of
# instruction fetch makes that several times slower with default flags, and nothing with
# -falign-functions=64: what an align follow-up calls "likely a code-alignment effect".
PADDING: tuple[Change, ...] = (
    Change(
        path="mm/vmscan.c",
        old="unsigned long shrink_lruvec(struct lruvec *lruvec, unsigned long nr_to_reclaim)",
        variants=("/* How far the active list outgrew the inactive one: what deactivation "
                  "would move. */\n"
                  "unsigned long lruvec_active_excess(const struct lruvec *lruvec)\n"
                  "{\n"
                  "\tunsigned long active = lruvec->nr[LRU_ACTIVE], "
                  "inactive = lruvec->nr[LRU_INACTIVE];\n"
                  "\n"
                  "\treturn active > inactive ? active - inactive : 0;\n"
                  "}\n"
                  "\n"
                  "unsigned long shrink_lruvec(struct lruvec *lruvec, "
                  "unsigned long nr_to_reclaim)",),
        subject="mm/vmscan: add lruvec_active_excess()",
        body="A tracepoint under discussion wants to know how far an lruvec's active\n"
             "list outgrew its inactive one. Add the helper; it has no caller yet, so\n"
             "there is no functional change.",
    ),
)

PADDING_TITLE = "mm/vmscan: add lruvec_active_excess()"


_PADDING_SPEC = SeriesSpec(title=PADDING_TITLE, patches=1, changes=PADDING, cover=False,
                           change_id="20261201-vmscan-active-excess")


def padding_series_spec(**overrides: Any) -> SeriesSpec:
    """The one-patch series that only adds an unused function, as a `SeriesSpec`."""
    return replace(_PADDING_SPEC, **overrides)


# The base configuration to measure a series' own CPU work on (PACED_RECLAIM, PADDING): one
# simulated CPU. With two (defconfig) about half of a quiet run is the event counters' cache line
# moving between the CPUs, a cost set by how the host runs this machine's vCPUs, not by the
# series: in one CI run it turned the padding's several-fold slowdown into -35%, inside a
# test's 100% margin. On one CPU, 3/4 of the paced series measured 9x slower quiet and under
# load, and the padding 28x quiet and 44x under load (two CPUs: 3.6x to 7x, and 9x quiet).
ONE_CPU_CONFIG = "tinyconfig"


def make_sim_tree(path: Path) -> Path:
    """A new git repository at `path` with the simulator tree: one commit on master, with a
    fixed author and date, so its id is the same every time."""
    return commit_tree(
        path,
        SIM_FILES,
        "Import the reclaim simulator tree\n\n"
        "A userspace LRU reclaim simulator laid out and built like a kernel tree.",
    )


_OPS = re.compile(r"^ops/s:\s*([0-9.]+)\s*$", re.M)


def ops_per_second(output: str) -> float:
    """The simulator's throughput from its output; ValueError when it printed none."""
    match = _OPS.search(output)
    if match is None:
        raise ValueError("no 'ops/s:' line in the simulator's output")
    return float(match[1])
