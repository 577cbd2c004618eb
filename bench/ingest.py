"""The ingest benchmark: how close `lorelab ingest mbox` comes to bare stdlib parsing.

Run as `.venv/bin/python bench/ingest.py [--messages 20000] [--archive DIR [--newest]]
[--rounds 3] [--keep DIR] [--json]`.

1. Generates an LKML-like mboxrd file, synthetically and deterministically (seeded): patch
   series with cover letters and 1..12 patches in versions v1..v3 (shallow or deep threading,
   later versions sometimes in reply to the earlier cover), review replies with quoted text,
   inline diffs and trailers, long discussions (some over 100 messages deep), syzbot reports
   and pull requests; quoted-printable, base64, multipart and latin-1 bodies; RFC 2047 names;
   the header blocks lore really carries (Received chains, DKIM-Signature, ARC-*, List-*,
   X-Mailer ...); 1 KB to 60 KB per message; a few cross-posted duplicates. With `--archive`,
   instead, the oldest `--messages` mails of a real list's public-inbox archive (0: all), or
   with `--newest` its newest (the mail a bot following the list reads today), as the git
   path reads them (`bench/archive.py`), written as an mboxrd file the same way.
2. Bare parse: reads the file with the same splitter the ingest uses
   (`bot.ingest.sources.iter_mbox`, which also undoes the mboxrd escaping) and calls
   `email.message_from_bytes(raw, policy=email.policy.compat32)` on each message. The
   splitting is timed inside the bare rate, as it is inside the end-to-end one.
3. End to end: `lorelab ingest mbox FILE --json` in a subprocess into a fresh SQLite database;
   messages/s from wall time (interpreter start, imports and schema creation included; the
   same command on an empty mbox is timed too, as the fixed cost), and the peak RSS of the
   largest of its processes, its own (started by a launcher, `bench/measured.py`: not this
   process's, which holds the corpus).
4. The ratios, bare / end to end: on wall time, and on CPU time (the ingest's own and its
   parse workers', from wait4; the bare parse's from process_time). On a loaded machine wall
   time is what the other jobs leave; the CPU ratio is what it converges to. The CPU ratio is
   given twice: of the whole command, and per message, with the CPU of the same command on
   an empty mbox (start-up, imports, schema creation: 0.4 s, 8% of these 20,000 messages)
   taken off the ingest's, as the bare parse, a loop in a process that has imported its
   parser, pays none of it. A backfill of a list (10^5-10^6 mails) pays it once: the per-
   message ratio is what the whole command's tends to there. Steps 2 and 3 (with the empty mbox)
   are interleaved `--rounds` times (3 by default) and the median of each round's ratio
   counts: the CPU time of identical work moves by a fifth on this shared machine, a ratio of
   runs made back to back much less.
   Where the ingest's CPU goes, in each round too: start-up (the empty mbox), the parse stage
   alone (`bot.ingest.prepare.prepared_batches` over the file, its workers included, in a
   process of its own, timed after its imports) and storing (the rest: series assembly,
   message rows, commits). From these, what the per-message ratio would be were storing free
   (bare / parse stage), and what CPU the target leaves storing (bare / 0.6 - parse stage).
5. A mail server's delivery: `lorelab ingest stdin` once per mail (`--deliveries` of them,
   each a new process, as Postfix or Exim runs it, each storing its mail itself: no agent)
   into a database made beforehand; CPU per mail, beside an interpreter that does nothing
   (`python -c pass`, the floor) and the same delivery through the full command line (what it
   cost before the short way). The agent a delivery leaves behind: bench/delivery.py.

Targets (issue 15): the ratios >= 0.6 (the CPU ratio both of the whole command and per
message is checked against it), peak memory < 500 MB, a delivery <= 0.25 s of CPU.
"""

from __future__ import annotations

import argparse
import base64
import email
import email.policy
import email.quoprimime
import email.utils
import hashlib
import json
import os
import platform
import quopri
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from machine import compile_lorelab, machine
from measured import run_measured

REPO = Path(__file__).resolve().parent.parent
RATIO_TARGET = 0.6
MEMORY_TARGET_MB = 500
DELIVERY_TARGET_CPU = 0.25
MIN_SIZE, MAX_SIZE = 1024, 60 * 1024
START = 1_704_067_200  # 2024-01-01 00:00:00 UTC
MBOX_FROM = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"

# --------------------------------------------------------------------------------------------
# Word material

FIRST = [
    "Andrew", "Johannes", "Michal", "Vlastimil", "David", "Matthew", "Yu", "Kairui", "Shakeel",
    "Roman", "Muchun", "Hugh", "Mel", "Yosry", "Nhat", "Barry", "Baolin", "Ryan", "Kefeng",
    "Huang", "Zi", "Suren", "Lorenzo", "Liam", "Pedro", "Jann", "Peter", "Mike", "Oscar", "Rik",
    "Chris", "Jan", "Christoph", "Dave", "Kirill A.", "Alistair", "Ying", "Miaohe", "Jiaqi",
    "Jörg", "Łukasz", "Zoë", "José", "Håkon", "Ryūsuke", "Ondřej", "Björn", "Sébastien",
    "Thomas", "Uwe", "Gaël", "Dmitry", "Sergey", "Tetsuo", "Hyeonggon", "SeongJae", "Wei",
]
LAST = [
    "Morton", "Weiner", "Hocko", "Babka", "Hildenbrand", "Wilcox", "Zhao", "Song", "Butt",
    "Gushchin", "Song", "Dickins", "Gorman", "Ahmed", "Pham", "Song", "Wang", "Roberts",
    "Wang", "Yan", "Baghdasaryan", "Stoakes", "Howlett", "Falcato", "Horn", "Zijlstra",
    "Rapoport", "Salvador", "van Riel", "Li", "Kara", "Hellwig", "Chinner", "Shutemov",
    "Popple", "Huang", "Lin", "Liu", "Rödel", "Ząbek", "Müller", "Jiménez", "Ødegård",
    "Konishi", "Čapek", "Töpel", "Gléau", "Gleixner", "Kleine-König", "Vyukov", "Senozhatsky",
    "Handa", "Yoo", "Park", "Yang", "Sørensen", "Paßmann", "Dvořák",
]
DOMAINS = [
    "kernel.org", "google.com", "redhat.com", "intel.com", "suse.cz", "suse.de", "huawei.com",
    "bytedance.com", "linux.alibaba.com", "oracle.com", "arm.com", "meta.com", "gmail.com",
    "cmpxchg.org", "linux-foundation.org", "infradead.org", "linux.dev", "nvidia.com",
    "amd.com", "tencent.com", "i-love.sakura.ne.jp", "163.com", "web.de", "posteo.net",
]
AREAS = [
    "mm/vmscan", "mm/swap", "mm/memcontrol", "mm/page_alloc", "mm/huge_memory", "mm: multi-gen LRU",
    "mm/workingset", "mm/compaction", "mm/zswap", "mm/khugepaged", "mm/mmap", "mm/gup",
    "mm/hugetlb", "mm/slub", "mm/damon", "mm/shmem", "mm/filemap", "mm/rmap", "mm/migrate",
    "mm/vmalloc", "mm/kasan", "mm/mempolicy", "mm, lru_gen", "mm/page_owner", "mm/swapfile",
    "mm/memory-failure", "mm/mlock", "mm/madvise", "mm/userfaultfd", "mm/readahead", "mm",
]
VERBS = [
    "fix", "remove", "add", "convert", "avoid", "introduce", "simplify", "use", "drop",
    "rework", "optimize", "batch", "skip", "limit", "account", "clean up", "document",
    "rename", "split", "factor out",
]
OBJECTS = [
    "the LRU lock contention in folio_batch_move_lru()", "a stale comment about page_cluster",
    "a redundant folio_test_lru() check", "an unnecessary TLB flush in try_to_unmap_one()",
    "lruvec_page_state() calls in the reclaim fast path", "nr_scanned accounting for kswapd",
    "the swappiness handling for proactive reclaim", "memcg stat flushing from reclaim",
    "a use-after-free in swapoff", "large folio support to swapin", "the min_seq update race",
    "per-node reclaim statistics", "a deadlock between compaction and reclaim",
    "folio_mapcount() in the rmap walk", "unused parameters of shrink_folio_list()",
    "the refault distance calculation", "zswap writeback of same-filled pages",
    "an off-by-one in the watermark boost", "kswapd wakeups for high-order allocations",
    "a NULL pointer dereference in lru_gen_look_around()", "the pgdat lru_lock",
    "isolate_lru_folios() for folios under writeback", "the shrinker lock",
    "THP splitting on the deferred split queue", "pagevec users in mm/swap.c",
    "mTHP counters to /proc/vmstat", "direct reclaim throttling", "the anon_vma lock",
    "memory.reclaim swappiness argument", "a WARN_ON in folio_add_lru()",
]
TOPICS = [
    "[LSF/MM/BPF TOPIC] Reclaim and the multi-gen LRU, two years in",
    "[bug report] soft lockup in shrink_lruvec() on a 2TB machine",
    "[syzbot] [mm?] WARNING in folio_add_lru",
    "[syzbot] [mm?] KASAN: use-after-free Read in lru_gen_look_around",
    "[regression] 8% drop in vm-scalability.throughput since v6.7",
    "[Question] why does kswapd not reclaim slab here?",
    "[DISCUSSION] making swappiness per-memcg again",
    "Re: [linus:master] [mm] 5a3d8b2c1f: stress-ng.pagemove.page_remaps_per_sec -13.1% regression",
    "[RFC] Remove the legacy LRU once multi-gen LRU is on by default",
    "Memory reclaim on CXL tiered memory: what should demotion do",
]
SENTENCES = [
    "This reduces lru_lock contention when many CPUs fault in page cache at the same time.",
    "The current code takes the lock once per folio, which is wasteful for large batches.",
    "Without this change kswapd can spin on a node that has nothing left to reclaim.",
    "No functional change intended.",
    "I could not measure any difference on a small machine, but the large one shows it.",
    "This was found by code inspection while looking at a related report.",
    "The race window is small but syzbot managed to hit it twice last week.",
    "We have been running this in production on a few thousand hosts for two months.",
    "Later patches in the series depend on this one.",
    "The counters are only read from /proc/vmstat, so the cost of updating them matters more.",
    "Why is this needed at all?",
    "I don't think that is right: the folio may be isolated by then.",
    "Can you share the numbers for the memcg case as well?",
    "That is a fair point, I will fix it in the next version.",
    "This looks like noise to me; the standard deviation is larger than the difference.",
    "Please split the refactoring from the functional change.",
    "The changelog should explain why the old behaviour was wrong, not only what changes.",
    "I am fine with the approach, but the naming could be better.",
    "Have you tested this with CONFIG_LRU_GEN disabled?",
    "With the patch applied the soft lockups are gone.",
    "Ran mmtests' config-workload-thpscale on both kernels, results below.",
    "Hm, I would rather not add another sysctl for this.",
    "Does this still apply on top of mm-unstable?",
    "The patch looks correct to me.",
    "Good catch, thanks.",
    "So the question is whether we want to optimize for the common case or for the worst case.",
    "From the numbers above I cannot tell which of the two is better.",
    "From a quick look, the locking seems fine.",
    "Let's not rush this into the merge window.",
    "Applied to mm-unstable, thanks.",
    "We saw a 3% regression in hackbench with this series on a 2-socket Icelake.",
    "The lkp robot reported a build failure with clang on arm64.",
    "Could we use folio_nr_pages() here instead of open coding it?",
    "I agree with Johannes that this belongs in the memcg code, not in vmscan.c.",
    "The refault distance is compared against the workingset size of the whole node.",
    "Anon and file pages are aged separately, which is what makes this tricky.",
    "This has been broken since the folio conversion, so it needs a Fixes: tag.",
    "Please also Cc stable, older kernels are affected too.",
    "Yes, that is the intent.",
    "I'll send a v2 with the comments addressed.",
]
C_LINES = [
    "struct folio *folio = lru_to_folio(src);", "unsigned long nr_pages = folio_nr_pages(folio);",
    "spin_lock_irq(&lruvec->lru_lock);", "spin_unlock_irq(&lruvec->lru_lock);",
    "if (!folio_test_lru(folio))", "continue;", "return 0;", "return nr_reclaimed;", "}",
    "list_move(&folio->lru, &folios_skipped);", "nr_taken += nr_pages;",
    "__count_vm_events(PGSCAN_SKIP, nr_skipped);", "if (sc->may_swap && !total_swap_pages)",
    "sc->nr_scanned += nr_scanned;", "int type = folio_is_file_lru(folio);",
    "struct lru_gen_folio *lrugen = &lruvec->lrugen;", "VM_WARN_ON_ONCE_FOLIO(!folio, folio);",
    "mem_cgroup_uncharge_list(&free_folios);", "try_to_unmap_flush();",
    "free_unref_folios(&free_folios);", "if (unlikely(!nr_taken))", "goto out;",
    "cond_resched();", "count_memcg_events(memcg, PGSTEAL_ANON, nr_reclaimed);",
    "lru_gen_update_size(lruvec, folio, old_gen, new_gen);",
    "WRITE_ONCE(lrugen->max_seq, seq + 1);",
    "for_each_node_state(nid, N_MEMORY) {", "if (!mem_cgroup_online(memcg))", "break;",
    "struct pglist_data *pgdat = lruvec_pgdat(lruvec);", "unsigned long flags;",
    "local_irq_save(flags);", "local_irq_restore(flags);", "rcu_read_lock();",
    "rcu_read_unlock();", "memcg = mem_cgroup_iter(NULL, NULL, NULL);",
    "} while ((memcg = mem_cgroup_iter(NULL, memcg, NULL)));", "if (folio_test_dirty(folio))",
    "folio_set_reclaim(folio);", "nr_pages = min(nr_pages, SWAP_CLUSTER_MAX);",
    "/* Don't reclaim from a node that is already balanced */", "static inline bool",
    "*nr_scanned += nr;", "int err = -ENOMEM;", "if (err)", "return err;", "} else {",
    "atomic_long_add(nr_pages, &lruvec->nonresident_age);", "smp_mb__after_atomic();",
]
C_FUNCS = [
    "shrink_folio_list", "isolate_lru_folios", "shrink_lruvec", "balance_pgdat",
    "lru_gen_look_around", "folio_batch_move_lru", "workingset_refault", "try_to_free_pages",
    "get_scan_count", "shrink_node", "kswapd", "folio_add_lru", "evict_folios",
    "mem_cgroup_charge", "__alloc_pages_slowpath", "compact_zone", "zswap_store",
]
PATHS = [
    "mm/vmscan.c", "mm/swap.c", "mm/memcontrol.c", "mm/workingset.c", "mm/page_alloc.c",
    "mm/huge_memory.c", "mm/compaction.c", "mm/zswap.c", "mm/swapfile.c", "mm/rmap.c",
    "mm/internal.h", "include/linux/mmzone.h", "include/linux/swap.h", "include/linux/memcontrol.h",
    "include/linux/mm_inline.h", "mm/shmem.c", "mm/filemap.c", "mm/migrate.c",
    "Documentation/admin-guide/mm/multigen_lru.rst", "tools/testing/selftests/mm/cow.c",
]
MAILERS = [
    ("X-Mailer", "git-send-email 2.43.0"), ("X-Mailer", "git-send-email 2.39.5"),
    ("X-Mailer", "b4 0.14.2"), ("User-Agent", "Mutt/2.2.12 (2023-09-09)"),
    ("User-Agent", "Mozilla Thunderbird"), ("User-Agent", "Gnus/5.13 (Gnus v5.13)"),
    ("X-Mailer", "Apple Mail (2.3774.300.61.1.2)"), ("User-Agent", "NeoMutt/20231103"),
    ("X-Mailer", "Microsoft Outlook 16.0"), ("User-Agent", "aerc/0.17.0"),
]
LISTS = [
    ("<linux-mm.kvack.org>", "linux-mm@kvack.org"),
    ("<linux-kernel.vger.kernel.org>", "linux-kernel@vger.kernel.org"),
]


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _encoded_word(text: str, rng: random.Random) -> str:
    """RFC 2047 for a non-ASCII display name, Q or B as different mailers choose."""
    raw = text.encode()
    if rng.random() < 0.5:
        return email.quoprimime.header_encode(raw, "utf-8")
    return f"=?UTF-8?B?{base64.b64encode(raw).decode()}?="


@dataclass(frozen=True)
class Person:
    name: str
    email: str
    header: str  # as it appears in From/To/Cc: RFC 2047 encoded when not ASCII


@dataclass
class Mail:
    """One generated message before it is rendered: enough to thread and quote it."""

    msgid: str
    date: int
    author: Person
    subject: str
    body: str
    parent: Mail | None = None
    references: list[str] = field(default_factory=list)
    to: list[Person] = field(default_factory=list)
    cc: list[Person] = field(default_factory=list)
    list_index: int = 0


# --------------------------------------------------------------------------------------------
# The generator


class Corpus:
    """Makes list messages from a seed. `messages(n)` yields exactly n raw messages in arrival
    order; the same seed gives the same bytes."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        self.people = []
        for _ in range(400):
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            local = re.sub(r"[^a-z0-9]+", ".", _ascii(name).lower()).strip(".")
            mail = f"{local}@{rng.choice(DOMAINS)}"
            header = (email.utils.formataddr((name, mail)) if name.isascii()
                      else f"{_encoded_word(name, rng)} <{mail}>")
            self.people.append(Person(name, mail, header))
        self.maintainer = Person("Andrew Morton", "akpm@linux-foundation.org",
                                 "Andrew Morton <akpm@linux-foundation.org>")
        self.list_people = [Person("", addr, addr) for _, addr in LISTS]
        # Pre-made text, so that making a message is mostly picking and joining.
        self.paragraphs = [self._wrap(" ".join(rng.sample(SENTENCES, rng.randint(1, 5))))
                           for _ in range(400)]
        self.code = [("\t" * rng.randint(1, 3)) + rng.choice(C_LINES) for _ in range(3000)]
        self.epoch = START  # when the next thread starts; threads overlap in time
        self.clock = START  # the current thread's posting time
        self.counter = 0

    # ---- small helpers

    @staticmethod
    def _fold(text: str, width: int = 76, indent: str = "\t ") -> str:
        """A long token (a signature, a blob) folded over header continuation lines."""
        return f"\n{indent}".join(text[i:i + width] for i in range(0, len(text), width))

    @staticmethod
    def _wrap(text: str, width: int = 72) -> str:
        lines, line = [], ""
        for word in text.split():
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
        return "\n".join(lines)

    def _hex(self, n: int) -> str:
        return self.rng.randbytes((n + 1) // 2).hex()[:n]

    def _b64(self, n: int) -> str:
        return base64.b64encode(self.rng.randbytes(n * 3 // 4)).decode()

    def _prose(self, k: int) -> str:
        return "\n\n".join(self.rng.choices(self.paragraphs, k=k))

    def _msgid(self, author: Person, style: str, date: int) -> str:
        self.counter += 1
        rng, domain = self.rng, author.email.rpartition("@")[2]
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(date))
        if style == "git":
            return f"<{stamp}.{rng.randint(1000, 99999)}-{self.counter}-{author.email}>"
        if style == "b4":
            return f"<{stamp[:8]}-series-{self.counter}-v1-{self._hex(12)}@{domain}>"
        if style == "gmail":
            return f"<CA{self._b64(40).replace('/', '_')}{self.counter}@mail.gmail.com>"
        if style == "gnus":
            return f"<87{self._hex(6)}{self.counter}.fsf@{domain}>"
        return f"<Z{self._b64(14).replace('/', '-')}{self.counter}@{domain}>"

    def _advance(self, lo: int, hi: int) -> int:
        self.clock += self.rng.randint(lo, hi)
        return self.clock

    def _subject(self) -> str:
        rng = self.rng
        return f"{rng.choice(AREAS)}: {rng.choice(VERBS)} {rng.choice(OBJECTS)}"

    def _target_size(self) -> int:
        # Log-normal: most mail is a few KB, a long tail reaches the 60 KB cap.
        return int(min(MAX_SIZE - 5000, max(400, self.rng.lognormvariate(8.2, 0.9))))

    # ---- diffs

    def _hunk(self, start: int, func: str) -> tuple[str, int, int]:
        rng = self.rng
        i = rng.randrange(len(self.code) - 40)
        before = self.code[i:i + 3]
        removed = self.code[i + 3:i + 3 + rng.randint(0, 8)]
        added = rng.choices(self.code, k=rng.randint(0 if removed else 1, 12))
        after = self.code[i + 20:i + 23]
        old_n = len(before) + len(removed) + len(after)
        new_n = len(before) + len(added) + len(after)
        lines = [f"@@ -{start},{old_n} +{start},{new_n} @@ static int {func}(void)"]
        lines += [f" {x}" for x in before] + [f"-{x}" for x in removed]
        lines += [f"+{x}" for x in added] + [f" {x}" for x in after]
        return "\n".join(lines), len(added), len(removed)

    def _diff(self, budget: int) -> tuple[str, str]:
        """A unified diff of about `budget` bytes, and its diffstat."""
        rng = self.rng
        paths = rng.sample(PATHS, rng.randint(1, min(6, 1 + budget // 3000)))
        parts, stats = [], []
        per_file = max(300, budget // len(paths))
        for path in paths:
            new = rng.random() < 0.05
            head = [f"diff --git a/{path} b/{path}"]
            if new:
                lines = rng.choices(self.code, k=max(3, per_file // 40))
                head += ["new file mode 100644", f"index 000000000000..{self._hex(12)}",
                         "--- /dev/null", f"+++ b/{path}", f"@@ -0,0 +1,{len(lines)} @@"]
                parts.append("\n".join(head + [f"+{x}" for x in lines]))
                stats.append((path, len(lines), 0))
                continue
            head += [f"index {self._hex(12)}..{self._hex(12)} 100644", f"--- a/{path}",
                     f"+++ b/{path}"]
            hunks, adds, dels, size, line = [], 0, 0, 0, rng.randint(10, 200)
            while size < per_file:
                text, a, d = self._hunk(line, rng.choice(C_FUNCS))
                hunks.append(text)
                adds, dels, size = adds + a, dels + d, size + len(text)
                line += rng.randint(40, 400)
            parts.append("\n".join(head + hunks))
            stats.append((path, adds, dels))
        width = max(len(p) for p, _, _ in stats)
        stat_lines = [f" {p:<{width}} | {a + d:>3} {'+' * min(a, 30)}{'-' * min(d, 30)}"
                      for p, a, d in stats]
        total_a, total_d = sum(a for _, a, _ in stats), sum(d for _, _, d in stats)
        stat_lines.append(f" {len(stats)} file{'s' if len(stats) > 1 else ''} changed, "
                          f"{total_a} insertions(+), {total_d} deletions(-)")
        return "\n".join(parts) + "\n", "\n".join(stat_lines)

    # ---- message kinds

    def _trailers(self, author: Person) -> str:
        rng, lines = self.rng, []
        if rng.random() < 0.2:
            lines.append(f"Fixes: {self._hex(12)} (\"{self._subject()}\")")
        if rng.random() < 0.15:
            reporter = rng.choice(self.people)
            lines.append(f"Reported-by: {reporter.name} <{reporter.email}>")
        if rng.random() < 0.1:
            lines.append(f"Closes: https://lore.kernel.org/oe-lkp/{self._hex(20)}@intel.com")
        if rng.random() < 0.1:
            lines.append("Cc: <stable@vger.kernel.org>")
        lines.append(f"Signed-off-by: {author.name} <{author.email}>")
        return "\n".join(lines)

    def _patch_body(self, author: Person, size: int, version: int) -> str:
        rng = self.rng
        message = self._prose(rng.randint(1, 4))
        if rng.random() < 0.2:
            message += ("\n\nvm-scalability.throughput (higher is better):\n\n"
                        f"  base:    {rng.uniform(1e5, 9e5):.0f}\n"
                        f"  patched: {rng.uniform(1e5, 9e5):.0f} ({rng.uniform(-5, 15):+.1f}%)")
        changelog = ""
        if version > 1 and rng.random() < 0.5:
            changelog = f"\nv{version}: {rng.choice(SENTENCES)}\n"
        diff, stat = self._diff(max(300, size - len(message) - 400))
        return (f"{message}\n\n{self._trailers(author)}\n---{changelog}\n{stat}\n\n{diff}"
                "-- \n2.43.0\n")

    def _cover_body(self, author: Person, title: str, subjects: list[str], version: int,
                    previous: str | None) -> str:
        rng = self.rng
        parts = [self._prose(rng.randint(1, 5))]
        if rng.random() < 0.4:
            rows = "\n".join(f"  {name:<28} {rng.uniform(1e3, 1e6):>12.1f} "
                             f"{rng.uniform(1e3, 1e6):>12.1f} {rng.uniform(-9, 20):>+6.1f}%"
                             for name in ("vm-scalability.throughput", "hackbench.time",
                                          "stress-ng.pagemove.ops", "will-it-scale.per_process"))
            parts.append(f"  {'benchmark':<28} {'base':>12} {'patched':>12} {'change':>7}\n{rows}")
        if version > 1:
            history = [f"v{v}:\n- " + "\n- ".join(rng.sample(SENTENCES, 3))
                       for v in range(version, 1, -1)]
            parts.append("Changes in " + "\n\n".join(history))
            if previous:
                parts.append(f"Link to v{version - 1}: https://lore.kernel.org/r/"
                             f"{previous.strip('<>')}")
        shortlog = f"{author.name} ({len(subjects)}):\n" + "\n".join(f"  {s}" for s in subjects)
        _, stat = self._diff(200 * len(subjects))
        parts.append(f"{shortlog}\n\n{stat}\n\nbase-commit: {self._hex(40)}")
        if rng.random() < 0.4:
            parts.append(f"change-id: {time.strftime('%Y%m%d', time.gmtime(self.clock))}-"
                         f"{re.sub(r'[^a-z0-9]+', '-', title.lower())[:30]}-{self._hex(12)}\n\n"
                         f"Best regards,\n-- \n{author.name} <{author.email}>\n")
        else:
            parts.append("-- \n2.43.0\n")
        return "\n\n".join(parts)

    def _attribution(self, parent: Mail) -> str:
        when = time.gmtime(parent.date)
        if self.rng.random() < 0.5:
            return (f"On {time.strftime('%a, %b %d, %Y at %I:%M:%S%p +0000', when)}, "
                    f"{parent.author.name} wrote:")
        return (f"On {time.strftime('%a, %b %d, %Y at %-I:%M %p', when)} {parent.author.name} "
                f"<{parent.author.email}> wrote:")

    def _reply_body(self, parent: Mail, author: Person, size: int, trailer: str | None,
                    suggest: bool) -> str:
        rng = self.rng
        lines = parent.body.split("\n")
        out = [self._attribution(parent)]
        at, budget = 0, size
        while at < len(lines) and budget > 0:
            take = rng.randint(3, 25)
            chunk = [f"> {x}" if x else ">" for x in lines[at:at + take]]
            out.append("\n".join(chunk))
            out.append("")
            out.append(rng.choice(self.paragraphs))
            out.append("")
            at += take + rng.randint(0, 60)
            budget -= sum(len(x) for x in chunk) + 200
        if suggest:
            diff, _ = self._diff(rng.randint(300, 2000))
            out += ["Something like this (untested):", "", diff]
        if trailer:
            out += [f"{trailer}: {author.name} <{author.email}>", ""]
        if rng.random() < 0.2:
            out += ["-- ", f"Cheers,\n{author.name.split()[0]}", ""]
        return "\n".join(out)

    # ---- threads

    def _new(self, author: Person, subject: str, body: str, parent: Mail | None,
             style: str, gap: tuple[int, int], list_index: int = 0, reply: bool = False,
             msgid: str | None = None) -> Mail:
        """A posting (dated on the thread's clock) or, with `reply`, an answer to `parent`
        (dated `gap` seconds after it)."""
        if reply and parent is not None:
            date = parent.date + self.rng.randint(*gap)
        else:
            date = self._advance(*gap)
        references: list[str] = []
        if parent is not None:
            references = [*parent.references, parent.msgid]
            if len(references) > 60 and self.rng.random() < 0.05:
                references = references[:1] + references[-40:]  # as some clients trim them
        to = [parent.author] if reply and parent is not None else [self.maintainer]
        cc = self.rng.sample(self.people, self.rng.randint(0, 6))
        cc.append(self.list_people[list_index])
        return Mail(msgid or self._msgid(author, style, date), date, author, subject, body, parent,
                    references, to, cc, list_index)

    def series(self) -> Iterator[Mail]:
        rng = self.rng
        author = rng.choice(self.people)
        n = rng.choices(range(1, 13), weights=[30, 12, 12, 8, 7, 6, 5, 4, 3, 3, 2, 3])[0]
        title = self._subject()
        subjects = [self._subject() for _ in range(n)]
        prefix = rng.choices(["PATCH", "RFC PATCH", "PATCH mm-unstable", "PATCH -next"],
                             weights=[80, 10, 7, 3])[0]
        versions = rng.choices([1, 2, 3], weights=[60, 28, 12])[0]
        previous_cover: Mail | None = None
        list_index = 0 if rng.random() < 0.75 else 1
        for version in range(1, versions + 1):
            v = f" v{version}" if version > 1 else ""
            style = "b4" if rng.random() < 0.3 else "git"
            stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(self.clock))
            if style == "git":  # git send-email: one stem per run, a serial per message
                stem = f"{stamp}.{rng.randint(1000, 999999)}"
                ids = iter(f"<{stem}-{k}-{author.email}>" for k in range(1, n + 2))
            else:  # b4: date, slug, version and patch number, a hash
                slug = re.sub(r"[^a-z0-9]+", "-", title.lower())[:24].strip("-")
                tail = f"{self._hex(12)}@{author.email.rpartition('@')[2]}"
                ids = iter(f"<{stamp[:8]}-{slug}-v{version}-{k}-{tail}>" for k in range(n + 1))
            deep = rng.random() < 0.15
            under = previous_cover if previous_cover is not None and rng.random() < 0.4 else None
            if version > 1:
                self._advance(86400, 86400 * 14)
            cover = None
            posted: list[Mail] = []
            if n > 1 or rng.random() < 0.1:
                body = self._cover_body(author, title, subjects, version,
                                        previous_cover.msgid if previous_cover else None)
                cover = self._new(author, f"[{prefix}{v} 0/{n}] {title}", body, under, style,
                                  (0, 2), list_index, msgid=next(ids))
                posted.append(cover)
            elif style == "b4":
                next(ids)  # b4 numbers patches from 1 also without a cover letter
            for i, subject in enumerate(subjects, start=1):
                numbered = f" {i}/{n}" if n > 1 or cover is not None else ""
                parent = (posted[-1] if deep and posted else cover) or under
                size = self._target_size()
                mail = self._new(author, f"[{prefix}{v}{numbered}] {subject}",
                                 self._patch_body(author, size, version), parent, style, (1, 3),
                                 list_index, msgid=next(ids))
                posted.append(mail)
            yield from posted
            yield from self._reviews(posted, list_index)
            previous_cover = cover or posted[0]

    def _reviews(self, posted: list[Mail], list_index: int) -> Iterator[Mail]:
        rng = self.rng
        pending: list[Mail] = []
        for mail in posted:
            for _ in range(rng.choices([0, 1, 2, 3], weights=[45, 35, 15, 5])[0]):
                reviewer = rng.choice(self.people)
                trailer = rng.choices([None, "Reviewed-by", "Acked-by", "Tested-by"],
                                      weights=[55, 28, 12, 5])[0]
                body = self._reply_body(mail, reviewer, rng.randint(300, 6000), trailer,
                                        rng.random() < 0.06)
                reply = self._new(reviewer, f"Re: {mail.subject}", body, mail,
                                  rng.choice(["gmail", "mutt", "gnus"]), (600, 3 * 86400),
                                  list_index, reply=True)
                pending.append(reply)
                if rng.random() < 0.4:  # the author answers
                    answer = self._reply_body(reply, mail.author, rng.randint(300, 3000), None,
                                              False)
                    pending.append(self._new(mail.author, reply.subject, answer, reply, "mutt",
                                             (600, 86400), list_index, reply=True))
        yield from pending

    def discussion(self, depth: int) -> Iterator[Mail]:
        rng = self.rng
        people = rng.sample(self.people, rng.randint(2, 7))
        subject = rng.choice(TOPICS)
        size = self._target_size()
        body = self._prose(max(2, size // 400))
        if subject.startswith("[syzbot]"):
            body = self._syzbot_report()
        root = self._new(people[0], subject, body, None, "gmail", (0, 60))
        yield root
        thread = [root]
        reply_subject = subject if subject.startswith("Re:") else f"Re: {subject}"
        for _ in range(depth - 1):
            # Mostly a chain (each answer to the latest), sometimes a branch off a recent one.
            parent = thread[-1] if rng.random() < 0.93 else rng.choice(thread[-4:])
            author = rng.choice(people)
            body = self._reply_body(parent, author, rng.randint(200, 2500), None,
                                    rng.random() < 0.03)
            mail = self._new(author, reply_subject, body, parent,
                             rng.choice(["gmail", "mutt", "gnus"]), (60, 7200), reply=True)
            thread.append(mail)
            yield mail

    def _syzbot_report(self) -> str:
        rng = self.rng
        frames = "\n".join(f" {rng.choice(C_FUNCS)}+0x{rng.randint(16, 4095):x}/0x"
                           f"{rng.randint(4096, 8191):x} mm/{rng.choice(PATHS)[3:]}:"
                           f"{rng.randint(10, 5000)}" for _ in range(rng.randint(15, 40)))
        return (
            "Hello,\n\nsyzbot found the following issue on:\n\n"
            f"HEAD commit:    {self._hex(12)} Merge tag 'mm-hotfixes-stable'\n"
            "git tree:       upstream\n"
            f"console output: https://syzkaller.appspot.com/x/log.txt?x={self._hex(16)}\n\n"
            "------------[ cut here ]------------\n"
            f"WARNING: CPU: 1 PID: {rng.randint(100, 30000)} at mm/swap.c:{rng.randint(90, 900)} "
            "folio_add_lru+0x2d1/0x3a0\nCall Trace:\n <TASK>\n"
            f"{frames}\n </TASK>\n\n---\nThis report is generated by a bot. It may contain "
            "errors.\nsyzbot engineers can be reached at syzkaller@googlegroups.com.\n"
        )

    def pull_request(self) -> Iterator[Mail]:
        rng = self.rng
        subjects = [self._subject() for _ in range(rng.randint(5, 60))]
        _, stat = self._diff(150 * len(subjects))
        body = (
            "Linus, please merge this batch of hotfixes.\n\n"
            f"The following changes since commit {self._hex(40)}:\n\n"
            "  Linux 6.8-rc1 (2024-01-21 14:11:32 -0800)\n\n"
            "are available in the Git repository at:\n\n"
            "  git://git.kernel.org/pub/scm/linux/kernel/git/akpm/mm "
            f"tags/mm-hotfixes-stable-2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}\n\n"
            f"for you to fetch changes up to {self._hex(40)}:\n\n"
            f"  {subjects[-1]} (2024-02-01 12:00:00 -0800)\n\n"
            "----------------------------------------------------------------\n"
            + "\n".join(f"- {s}" for s in subjects[:8])
            + "\n\n----------------------------------------------------------------\n"
            + "\n".join(f"{rng.choice(self.people).name} (1):\n      {s}\n" for s in subjects)
            + f"\n{stat}\n"
        )
        yield self._new(self.maintainer, f"[GIT PULL] hotfixes for 6.8-rc{rng.randint(2, 7)}",
                        body, None, "git", (0, 60), 1)

    def mails(self) -> Iterator[Mail]:
        rng = self.rng
        while True:
            self.epoch += rng.randint(300, 5400)
            self.clock = self.epoch
            kind = rng.choices(["series", "discussion", "long", "pull"],
                               weights=[78, 17, 0.6, 1])[0]
            if kind == "series":
                yield from self.series()
            elif kind == "discussion":
                yield from self.discussion(rng.randint(1, 40))
            elif kind == "long":
                yield from self.discussion(rng.randint(110, 200))
            else:
                yield from self.pull_request()

    # ---- rendering

    def _date_header(self, ts: int) -> str:
        offset = self.rng.choice([0, 0, -7, -8, -5, 1, 2, 8, 9])
        local = time.gmtime(ts + offset * 3600)
        sign = "+" if offset >= 0 else "-"
        return time.strftime("%a, %d %b %Y %H:%M:%S ", local) + f"{sign}{abs(offset):02d}00"

    def _transport(self, mail: Mail) -> list[str]:
        """What lore's copy carries ahead of the author's own headers: the delivery path."""
        rng = self.rng
        when = time.strftime("%a, %d %b %Y %H:%M:%S +0000 (UTC)", time.gmtime(mail.date + 5))
        domain = mail.author.email.rpartition("@")[2]
        queue = self._hex(11).upper()
        list_id, list_addr = LISTS[mail.list_index]
        headers = [
            f"Return-Path: <owner-{list_addr}>",
            f"X-Original-To: {list_addr}",
            f"Delivered-To: {list_addr}",
            f"Received: from kanga.kvack.org (kanga.kvack.org [205.233.56.17])\n"
            f"\tby smtp.lore.kernel.org (Postfix) with ESMTP id {queue}\n"
            f"\tfor <linux-mm@archiver.kernel.org>; {when}",
            f"Received: by kanga.kvack.org (Postfix)\n\tid {self._hex(10).upper()}; {when}",
        ]
        for hop in range(rng.randint(1, 3)):
            headers.append(
                f"Received: from mail-{hop}.{domain} (mail-{hop}.{domain} "
                f"[209.85.{rng.randint(0, 255)}.{rng.randint(0, 255)}])\n"
                f"\tby imf{rng.randint(1, 30):02d}.hostedemail.com (Postfix) with ESMTP id "
                f"{self._hex(10).upper()}\n\tfor <{list_addr}>; {when}")
        headers += [
            f"X-FDA: {rng.randint(10**10, 10**11)}.{rng.randint(1, 30):02d}.{self._hex(7).upper()}",
            f"Authentication-Results: imf{rng.randint(1, 30):02d}.hostedemail.com;\n"
            f"\tdkim=pass header.d={domain} header.s=20230601 header.b={self._b64(8)};\n"
            f"\tspf=pass (imf.hostedemail.com: domain of {mail.author.email} designates "
            f"209.85.208.41 as permitted sender) smtp.mailfrom={mail.author.email};\n"
            f"\tdmarc=pass (policy=reject) header.from={domain}",
            "ARC-Message-Signature: i=1; a=rsa-sha256; c=relaxed/relaxed; d=hostedemail.com;\n"
            f"\ts=arc-20220608; t={mail.date};\n"
            "\th=from:from:sender:reply-to:subject:subject:date:date:\n"
            "\t message-id:message-id:to:to:cc:cc:mime-version:mime-version:\n"
            "\t content-type:content-type:in-reply-to:in-reply-to:\n"
            "\t references:references:dkim-signature;\n"
            f"\tbh={self._b64(44)};\n\tb={self._fold(self._b64(344))}",
            f"ARC-Seal: i=1; s=arc-20220608; d=hostedemail.com; t={mail.date}; a=rsa-sha256;\n"
            f"\tcv=none;\n\tb={self._fold(self._b64(344))}",
            "ARC-Authentication-Results: i=1;\n\timf.hostedemail.com;\n"
            f"\tdkim=pass header.d={domain} header.s=20230601;\n\tdmarc=pass",
            "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed;\n"
            f"        d={domain}; s=20230601; t={mail.date}; x={mail.date + 604800}; "
            "darn=kvack.org;\n"
            "        h=content-transfer-encoding:cc:to:subject:message-id:date:from\n"
            "         :in-reply-to:references:mime-version:from:to:cc:subject:date\n"
            "         :message-id:reply-to;\n"
            f"        bh={self._b64(44)};\n        b={self._fold(self._b64(344), 70, '         ')}",
        ]
        if rng.random() < 0.3:
            headers.append(f"X-Google-Smtp-Source: AGHT+{self._b64(90)}")
            headers.append(f"X-Received: by 2002:a05:{self._hex(4)}:{self._hex(4)} with SMTP id "
                           f"{self._hex(12)}; {self._date_header(mail.date)}")
        return headers

    def _list_headers(self, mail: Mail) -> list[str]:
        list_id, list_addr = LISTS[mail.list_index]
        if mail.list_index == 0:
            return [
                f"X-HE-Meta: U2FsdGVkX1{self._fold(self._b64(600))}",
                "Sender: owner-linux-mm@kvack.org", "Precedence: bulk",
                "X-Loop: owner-majordomo@kvack.org", f"List-ID: {list_id}",
                "List-Subscribe: <mailto:majordomo@kvack.org>",
                "List-Unsubscribe: <mailto:majordomo@kvack.org>",
            ]
        return [
            "Precedence: bulk", f"X-Mailing-List: {list_addr}", f"List-Id: {list_id}",
            "List-Subscribe: <mailto:linux-kernel+subscribe@vger.kernel.org>",
            "List-Unsubscribe: <mailto:linux-kernel+unsubscribe@vger.kernel.org>",
        ]

    def _encode_body(self, body: str) -> tuple[list[str], bytes]:
        """Content headers and the body as some mail client would have encoded it."""
        rng = self.rng
        roll = rng.random()
        data = body.encode()
        if roll < 0.12:
            return (['Content-Type: text/plain; charset="UTF-8"',
                     "Content-Transfer-Encoding: quoted-printable"], quopri.encodestring(data))
        if roll < 0.15:
            return (["Content-Type: text/plain; charset=utf-8",
                     "Content-Transfer-Encoding: base64"], base64.encodebytes(data))
        if roll < 0.16 and body.isascii() is False:
            latin = body.encode("latin-1", "replace")
            return (["Content-Type: text/plain; charset=iso-8859-1",
                     "Content-Transfer-Encoding: 8bit"], latin)
        if roll < 0.18:
            boundary = f"----=_Part_{self._hex(16)}"
            attachment = base64.encodebytes(self._prose(4).encode()).decode()
            text = (f"--{boundary}\nContent-Type: text/plain; charset=utf-8\n"
                    f"Content-Transfer-Encoding: 8bit\n\n{body}\n--{boundary}\n"
                    "Content-Type: text/plain; charset=us-ascii; name=config-6.8.0-rc1\n"
                    "Content-Disposition: attachment; filename=config-6.8.0-rc1\n"
                    f"Content-Transfer-Encoding: base64\n\n{attachment}--{boundary}--\n")
            return [f'Content-Type: multipart/mixed; boundary="{boundary}"'], text.encode()
        if roll < 0.19:
            boundary = f"pgp{self._hex(12)}"
            signature = self._wrap(self._b64(600), 64)
            text = (f"--{boundary}\nContent-Type: text/plain; charset=us-ascii\n"
                    f"Content-Disposition: inline\n\n{body}\n--{boundary}\n"
                    "Content-Type: application/pgp-signature; name=signature.asc\n\n"
                    f"-----BEGIN PGP SIGNATURE-----\n\n{signature}\n"
                    f"-----END PGP SIGNATURE-----\n\n--{boundary}--\n")
            return ([f'Content-Type: multipart/signed; micalg=pgp-sha256;\n'
                     f'\tprotocol="application/pgp-signature"; boundary="{boundary}"'],
                    text.encode())
        if data.isascii():
            return (["Content-Type: text/plain; charset=us-ascii",
                     "Content-Transfer-Encoding: 7bit"], data)
        return (["Content-Type: text/plain; charset=UTF-8",
                 "Content-Transfer-Encoding: 8bit"], data)

    def render(self, mail: Mail) -> bytes:
        rng = self.rng
        lean = rng.random() < 0.2  # older or locally delivered copies carry little transport
        headers = [] if lean else self._transport(mail)
        subject = mail.subject
        if len(subject) > 70:
            cut = subject.rfind(" ", 0, 70)
            if cut > 0:
                subject = f"{subject[:cut]}\n {subject[cut + 1:]}"
        headers += [
            f"From: {mail.author.header}",
            f"To: {', '.join(p.header for p in mail.to)}",
            "Cc: " + ",\n\t".join(p.header for p in mail.cc),
            f"Subject: {subject}",
            f"Date: {self._date_header(mail.date)}",
            f"Message-ID: {mail.msgid}",
        ]
        if mail.parent is not None:
            headers.append(f"In-Reply-To: {mail.parent.msgid}")
            headers.append("References: " + "\n\t".join(mail.references))
        name, value = rng.choice(MAILERS)
        headers += [f"{name}: {value}", "MIME-Version: 1.0"]
        content, body = self._encode_body(mail.body)
        headers += content
        if not lean:
            headers += self._list_headers(mail)
        else:
            headers.append(f"List-Id: {LISTS[mail.list_index][0]}")
        return ("\n".join(headers) + "\n\n").encode() + body

    def messages(self, count: int, duplicates: float = 0.005) -> list[bytes]:
        """Exactly `count` raw messages in arrival order (by date, with a few late arrivals),
        about `duplicates` of them second copies of earlier ones (a cross-post)."""
        rng = self.rng
        wanted_unique = count - int(count * duplicates)
        made: list[tuple[int, bytes]] = []
        for mail in self.mails():
            if len(made) >= wanted_unique:
                break
            raw = self.render(mail)
            if len(raw) < MIN_SIZE:
                raw = raw.rstrip(b"\n") + b"\n\n" + self._prose(2).encode() + b"\n"
            while len(raw) > MAX_SIZE:  # rare: base64 or QP grew a big patch past the cap
                mail.body = mail.body[: len(mail.body) * 3 // 4]
                raw = self.render(mail)
            # A few messages arrive hours late (greylisting, a slow relay).
            delay = rng.randint(3600, 86400) if rng.random() < 0.01 else 0
            made.append((mail.date + delay, raw))
        made.sort(key=lambda item: item[0])
        out = [raw for _, raw in made]
        for _ in range(count - len(out)):
            out.insert(rng.randrange(len(out) // 2, len(out) + 1),
                       out[rng.randrange(len(out) // 2)])
        return out


def write_mbox(messages: list[bytes], path: Path) -> None:
    """mboxrd: lore's From_ line before each message, body lines "From " escaped as ">From "."""
    escape = re.compile(rb"^(>*From )", re.M)
    with path.open("wb") as fh:
        for raw in messages:
            fh.write(MBOX_FROM)
            fh.write(escape.sub(rb">\1", raw))
            fh.write(b"\n" if raw.endswith(b"\n") else b"\n\n")


# --------------------------------------------------------------------------------------------
# Measuring


def iter_raw(path: Path) -> Iterator[bytes]:
    """The messages of the mbox as the ingest reads them (its own splitter, when importable)."""
    sys.path.insert(0, str(REPO))
    try:
        from bot.ingest.sources import iter_mbox
    except ImportError:  # the splitter moved: an equivalent mboxrd reader
        iter_mbox = None
    if iter_mbox is not None:
        for mail in iter_mbox(path):
            yield mail.data
        return
    unescape = re.compile(rb"^>(>*From )")
    lines: list[bytes] = []
    with path.open("rb") as fh:
        for line in fh:
            if line.startswith(b"From "):
                if lines:
                    yield b"".join(lines[:-1] if lines[-1] == b"\n" else lines)
                lines = []
                continue
            lines.append(unescape.sub(rb"\1", line) if line.startswith(b">") else line)
    if lines:
        yield b"".join(lines[:-1] if lines[-1] == b"\n" else lines)


@dataclass
class BareResult:
    messages: int
    seconds: float
    defects: int
    cpu_seconds: float

    @property
    def rate(self) -> float:
        return self.messages / self.seconds


def bare_parse(path: Path) -> BareResult:
    """One timed pass: every message split off and parsed with compat32."""
    start, cpu_start = time.perf_counter(), time.process_time()
    count = defects = 0
    for raw in iter_raw(path):
        message = email.message_from_bytes(raw, policy=email.policy.compat32)
        count += 1
        defects += bool(message.defects)
    return BareResult(count, time.perf_counter() - start, defects,
                      time.process_time() - cpu_start)


def split_only(path: Path) -> float:
    """Seconds to split the mbox without parsing (what the bare parse spends before parsing)."""
    start = time.perf_counter()
    for _ in iter_raw(path):
        pass
    return time.perf_counter() - start


@dataclass
class IngestResult:
    seconds: float
    cpu_seconds: float  # the child's and its reaped children's (the parse workers)
    peak_rss_mb: float
    exit_code: int
    summary: dict[str, object] | None
    stderr: str


def ingest_env(workdir: Path, db: Path) -> dict[str, str]:
    """The environment of the measured commands: this working tree's code (PYTHONPATH, whatever
    the venv's install points at), a database and a data directory of the run's own."""
    return dict(os.environ, LORELAB_DATABASE_URL=f"sqlite:///{db}", LORELAB_DATA_DIR=str(workdir),
                PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                         os.environ.get("PYTHONPATH")])))


def run_ingest(lorelab: str, mbox: Path, workdir: Path, name: str) -> IngestResult:
    """`lorelab ingest mbox FILE --json` into a fresh SQLite database, timed, with its peak RSS."""
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / f"{name}.db"
    for stale in workdir.glob(f"{name}.db*"):
        stale.unlink()
    env = ingest_env(workdir, db)
    out_path, err_path = workdir / f"{name}.stdout", workdir / f"{name}.stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        # Through a launcher: started from this process, which holds the corpus, the command's
        # peak memory would be this process's (`bench/measured.py`).
        run = run_measured([lorelab, "ingest", "mbox", str(mbox), "--json"], env=env,
                           stdout=out, stderr=err)
    text = out_path.read_text(errors="replace")
    summary = None
    match = re.search(r"\{.*\}", text, re.S)
    if match:
        try:
            summary = json.loads(match.group(0))
        except json.JSONDecodeError:
            summary = None
    return IngestResult(run.seconds, run.cpu_seconds, run.peak_rss_mb, run.returncode, summary,
                        err_path.read_text(errors="replace")[-2000:])


# The parse stage alone, as `ingest mbox` runs it (its settings, its worker processes): the
# CPU of this process and of the workers it reaped, from after the imports to the last batch.
PARSE_STAGE = """\
import resource, sys
from pathlib import Path
from bot.config import load_settings
from bot.ingest.prepare import prepared_batches
from bot.ingest.sources import MboxFile

def used():
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime

settings = load_settings().ingest
start = used()
read = sum(b.read for b in prepared_batches(MboxFile(Path(sys.argv[1])), settings))
print(read, used() - start)
"""


def parse_stage(python: str, mbox: Path, workdir: Path) -> float:
    """CPU seconds of the ingest's parse stage alone over `mbox` (`PARSE_STAGE`)."""
    env = ingest_env(workdir, workdir / "parse-stage.db")  # named, never opened
    done = subprocess.run([python, "-c", PARSE_STAGE, str(mbox)], env=env, check=True,
                          capture_output=True, text=True)
    return float(done.stdout.split()[1])


FULL_COMMAND_LINE = ("from bot.cli import get_app; "
                     "get_app()(['ingest', 'stdin', '--list', 'linux-mm'])")


def _child_cpu(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, int]:
    """CPU seconds of one child process (and its children), and its exit status."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=env)
    assert child.stdin is not None
    child.stdin.write(stdin)
    child.stdin.close()
    _, status, usage = os.wait4(child.pid, 0)
    return usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def deliveries(lorelab: str, messages: list[bytes], workdir: Path) -> dict[str, object]:
    """CPU per `lorelab ingest stdin`, per do-nothing interpreter, per full-CLI delivery."""
    db = workdir / "deliveries.db"
    for stale in workdir.glob("deliveries.db*"):
        stale.unlink()
    # Each delivery stores its own mail: no agent left behind (bench/delivery.py measures it).
    env = dict(ingest_env(workdir, db), LORELAB_INGEST_DELIVERY_AGENT_IDLE="0")
    env.pop("LORELAB_DELIVER_SOCKET", None)
    subprocess.run([lorelab, "db", "upgrade"], env=env, check=True, capture_output=True)
    python = str(Path(lorelab).with_name("python"))
    half = len(messages) // 2
    fast = [_child_cpu([lorelab, "ingest", "stdin", "--list", "linux-mm"], m, env)
            for m in messages[:half]]
    full = [_child_cpu([python, "-c", FULL_COMMAND_LINE], m, env) for m in messages[half:]]
    floor = [_child_cpu([python, "-c", "pass"], b"", env) for _ in range(5)]

    def median(runs: list[tuple[float, int]]) -> float:
        return round(sorted(cpu for cpu, _ in runs)[len(runs) // 2], 3)

    return {
        "what": "CPU seconds per process (median), each storing one mail into SQLite itself",
        "deliveries": len(fast),
        "failed": sum(code != 0 for _, code in fast + full),
        "ingest_stdin_cpu_seconds": median(fast),
        "full_command_line_cpu_seconds": median(full),
        "python_pass_cpu_seconds": median(floor),
        "target_met": median(fast) <= DELIVERY_TARGET_CPU,
    }


def versions(lorelab: str) -> dict[str, str]:
    found = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    try:
        import sqlalchemy

        found["sqlalchemy"] = sqlalchemy.__version__
    except ImportError:
        pass
    try:
        out = subprocess.run([lorelab, "--version"], capture_output=True, text=True, timeout=60)
        found["lorelab"] = out.stdout.strip().split()[-1] if out.stdout.strip() else "?"
    except (OSError, subprocess.SubprocessError):
        found["lorelab"] = "not runnable"
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=60).stdout.strip()
        found["commit"] = commit or "uncommitted"
    except OSError:
        pass
    return found


def corpus(args: argparse.Namespace) -> list[bytes]:
    """The mail to measure: generated, or the oldest (`--newest`: the newest) `--messages` of a
    real list's archive."""
    if args.archive is None:
        return Corpus(args.seed).messages(args.messages)
    from archive import archive_mail  # imports lorelab's git reader: only when asked for

    mail = archive_mail(args.archive)
    if not args.messages:
        return list(mail)
    return list(deque(mail, maxlen=args.messages) if args.newest else islice(mail, args.messages))


def size_stats(messages: list[bytes]) -> dict[str, int]:
    sizes = sorted(len(m) for m in messages)
    return {"min": sizes[0], "median": sizes[len(sizes) // 2],
            "p95": sizes[int(len(sizes) * 0.95)], "max": sizes[-1], "total": sum(sizes)}


def main(argv: list[str] | None = None) -> int:
    """Generate, measure, print; exit 1 when the ingest run failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20000,
                        help="messages to generate, or to take from --archive (0: all of it)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--archive", type=Path,
                        help="a real list's public-inbox archive: its oldest mail, not the "
                             "generated corpus")
    parser.add_argument("--newest", action="store_true",
                        help="with --archive: its newest --messages mails, not its oldest")
    parser.add_argument("--keep", type=Path, help="keep the mbox and the database in DIR")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved (bare pass, ingest) pairs; the median ratio counts")
    parser.add_argument("--no-ingest", action="store_true",
                        help="generate and bare-parse only (no lorelab run)")
    parser.add_argument("--deliveries", type=int, default=20,
                        help="`lorelab ingest stdin` runs to time (0: none)")
    parser.add_argument("--lorelab", default=str(Path(sys.executable).with_name("lorelab")),
                        help="the lorelab command (default: beside this Python)")
    args = parser.parse_args(argv)
    compile_lorelab()

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="lorelab-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    mbox = workdir / "bench.mbox"
    try:
        started = time.perf_counter()
        messages = corpus(args)
        write_mbox(messages, mbox)
        args.messages = len(messages)
        generated = time.perf_counter() - started
        unique = len({hashlib.sha1(m).digest() for m in messages})
        sizes = size_stats(messages)
        delivered = messages[: 2 * args.deliveries]
        del messages

        rounds = max(1, args.rounds)
        # Interleaved: a bare pass, then an ingest, `rounds` times. On a shared machine the CPU
        # time of identical work moves by a fifth from one minute to the next; a ratio of two
        # runs made back to back moves much less, and the median of those ratios is reported.
        bares: list[BareResult] = []
        runs: list[IngestResult] = []
        fixeds: list[IngestResult] = []  # the same command on an empty mbox
        parses: list[float] = []  # the parse stage alone
        python = str(Path(args.lorelab).with_name("python"))
        empty = workdir / "empty.mbox"
        empty.write_bytes(b"")
        for _ in range(rounds if not args.no_ingest else 1):
            bares.append(bare_parse(mbox))
            if not args.no_ingest:
                runs.append(run_ingest(args.lorelab, mbox, workdir, "bench"))
                fixeds.append(run_ingest(args.lorelab, empty, workdir, "empty"))
                parses.append(parse_stage(python, mbox, workdir))
        bare = BareResult(bares[0].messages, statistics.median(b.seconds for b in bares),
                          bares[0].defects, statistics.median(b.cpu_seconds for b in bares))
        report: dict[str, object] = {
            "corpus": (f"the {'newest' if args.newest else 'oldest'} {args.messages} messages "
                       f"of {args.archive}" if args.archive
                       else f"generated, LKML-like, seed {args.seed}"),
            "messages": bare.messages,
            "unique_messages": unique,
            "mbox_bytes": mbox.stat().st_size,
            "mbox_sha256": hashlib.sha256(mbox.read_bytes()).hexdigest(),
            "message_bytes": sizes,
            "generate_seconds": round(generated, 2),
            "bare_parse": {
                "what": "read + split (bot.ingest.sources.iter_mbox) + "
                        "email.message_from_bytes(policy=compat32), in-process, "
                        f"median of {len(bares)} passes",
                "seconds": round(bare.seconds, 3),
                "split_only_seconds": round(split_only(mbox), 3),
                "messages_per_second": round(bare.rate, 1),
                "cpu_seconds": round(bare.cpu_seconds, 3),
                "messages_with_defects": bare.defects,
            },
            "machine": machine(),
            "versions": versions(args.lorelab),
        }
        if bare.messages != args.messages:
            report["warning"] = f"the splitter found {bare.messages} of {args.messages} messages"

        if not args.no_ingest:
            failed = next((r for r in [*runs, *fixeds] if r.exit_code != 0), None)
            seconds = statistics.median([r.seconds for r in runs])
            rate = args.messages / seconds
            report["end_to_end"] = {
                "what": "lorelab ingest mbox FILE --json, subprocess wall time into a fresh "
                        f"SQLite database (start-up and schema creation included), median of "
                        f"{len(runs)} runs",
                "exit_code": failed.exit_code if failed else 0,
                "seconds": round(seconds, 3),
                "cpu_seconds": round(statistics.median([r.cpu_seconds for r in runs]), 3),
                "messages_per_second": round(rate, 1),
                "fixed_cost_seconds": round(statistics.median(f.seconds for f in fixeds), 3),
                "fixed_cost_cpu_seconds": round(statistics.median(f.cpu_seconds for f in fixeds),
                                                3),
                "peak_rss_mb": round(max(r.peak_rss_mb for r in runs), 1),
                "summary": runs[-1].summary,
            }
            if failed is not None:
                # A failed run's wall time says nothing about throughput.
                report["end_to_end"]["stderr_tail"] = failed.stderr  # type: ignore[index]
                report["ratio"] = None
            else:
                walls = [b.seconds / r.seconds for b, r in zip(bares, runs, strict=True)]
                cpus = [b.cpu_seconds / r.cpu_seconds for b, r in zip(bares, runs, strict=True)]
                per_message = [b.cpu_seconds / (r.cpu_seconds - f.cpu_seconds)
                               for b, r, f in zip(bares, runs, fixeds, strict=True)]
                report["rounds"] = [
                    {"bare_cpu_seconds": round(b.cpu_seconds, 3),
                     "ingest_cpu_seconds": round(r.cpu_seconds, 3),
                     "empty_mbox_cpu_seconds": round(f.cpu_seconds, 3),
                     "wall_ratio": round(w, 3), "cpu_ratio": round(c, 3),
                     "per_message_cpu_ratio": round(p, 3)}
                    for b, r, f, w, c, p in zip(bares, runs, fixeds, walls, cpus, per_message,
                                                strict=True)
                ]
                report["ratio"] = round(statistics.median(walls), 3)
                report["cpu_ratio"] = round(statistics.median(cpus), 3)
                report["per_message_cpu_ratio"] = round(statistics.median(per_message), 3)
                report["stages"] = stages(bares, runs, fixeds, parses)
                report["targets"] = {
                    "ratio": f">= {RATIO_TARGET}",
                    "ratio_met": report["ratio"] >= RATIO_TARGET,
                    "cpu_ratio_met": report["cpu_ratio"] >= RATIO_TARGET,
                    "per_message_cpu_ratio_met": report["per_message_cpu_ratio"] >= RATIO_TARGET,
                    "peak_rss_mb": f"< {MEMORY_TARGET_MB}",
                    "memory_met": report["end_to_end"]["peak_rss_mb"] < MEMORY_TARGET_MB,
                }
        if args.deliveries and not args.no_ingest:
            report["delivery"] = deliveries(args.lorelab, delivered, workdir)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)

    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 1 if "end_to_end" in report and report["ratio"] is None else 0


def stages(bares: list[BareResult], runs: list[IngestResult], fixeds: list[IngestResult],
           parses: list[float]) -> dict[str, object]:
    """Where the ingest's CPU goes, medians over the rounds (each figure its own median)."""
    rounds = list(zip(bares, runs, fixeds, parses, strict=True))

    def median(values: Iterator[float]) -> float:
        return round(statistics.median(values), 3)

    return {
        "what": "the ingest's CPU: start-up (the command on an empty mbox), the parse stage "
                "(bot.ingest.prepare.prepared_batches alone, its workers included, after its "
                "imports) and storing (the rest); medians over the rounds",
        "start_up_cpu_seconds": median(f.cpu_seconds for _, _, f, _ in rounds),
        "parse_cpu_seconds": median(p for *_, p in rounds),
        "storing_cpu_seconds": median(r.cpu_seconds - f.cpu_seconds - p
                                      for _, r, f, p in rounds),
        # The per-message ratio were storing free, and the CPU the target leaves storing.
        "parse_cpu_ratio": median(b.cpu_seconds / p for b, _, _, p in rounds),
        "storing_budget_cpu_seconds": median(b.cpu_seconds / RATIO_TARGET - p
                                             for b, _, _, p in rounds),
    }


def print_report(report: dict) -> None:
    bare, m, v = report["bare_parse"], report["machine"], report["versions"]
    sizes = report["message_bytes"]
    print(f"corpus     {report['corpus']}: {report['messages']} messages "
          f"({report['unique_messages']} unique), "
          f"{report['mbox_bytes'] / 1e6:.1f} MB, sizes min {sizes['min']} / median "
          f"{sizes['median']} / p95 {sizes['p95']} / max {sizes['max']} bytes; "
          f"made in {report['generate_seconds']} s")
    print(f"bare parse {bare['messages_per_second']:>9.1f} msg/s  ({bare['seconds']} s; "
          f"{bare['what']}; splitting alone {bare['split_only_seconds']} s; "
          f"{bare['messages_with_defects']} with parser defects)")
    if "end_to_end" in report:
        e2e = report["end_to_end"]
        print(f"end to end {e2e['messages_per_second']:>9.1f} msg/s  ({e2e['seconds']} s; "
              f"{e2e['what']}; fixed cost on an empty mbox {e2e['fixed_cost_seconds']} s, "
              f"{e2e['fixed_cost_cpu_seconds']} s of CPU; "
              f"exit {e2e['exit_code']})")
        if report["ratio"] is None:
            print("ratio      none: the ingest failed (see stderr below)")
        else:
            print(f"ratio      {report['ratio']:.3f} wall  (target >= {RATIO_TARGET}: "
                  f"{'met' if report['targets']['ratio_met'] else 'NOT met'})")
            print(f"           {report['per_message_cpu_ratio']:.3f} CPU per message  (bare "
                  f"{bare['cpu_seconds']} s, ingest {e2e['cpu_seconds']} s with its workers "
                  f"less {e2e['fixed_cost_cpu_seconds']} s on an empty mbox; target >= "
                  f"{RATIO_TARGET}: "
                  f"{'met' if report['targets']['per_message_cpu_ratio_met'] else 'NOT met'})")
            print(f"           {report['cpu_ratio']:.3f} CPU of the whole command  (start-up "
                  f"included, which a list's backfill pays once; target >= {RATIO_TARGET}: "
                  f"{'met' if report['targets']['cpu_ratio_met'] else 'NOT met'})")
            st = report["stages"]
            print(f"stages     start-up {st['start_up_cpu_seconds']} s, parse stage "
                  f"{st['parse_cpu_seconds']} s, storing {st['storing_cpu_seconds']} s of CPU; "
                  f"storing free, the per-message ratio would be {st['parse_cpu_ratio']:.3f}; "
                  f"at the target storing may take {st['storing_budget_cpu_seconds']} s")
            print(f"peak RSS   {e2e['peak_rss_mb']:.1f} MB  (target < {MEMORY_TARGET_MB} MB: "
                  f"{'met' if report['targets']['memory_met'] else 'NOT met'})")
        print(f"summary    {json.dumps(e2e['summary'])}")
        if e2e.get("stderr_tail"):
            print(f"stderr     {e2e['stderr_tail']}")
    if "delivery" in report:
        d = report["delivery"]
        print(f"delivery   {d['ingest_stdin_cpu_seconds']} s CPU per `lorelab ingest stdin` "
              f"storing its mail itself (target <= {DELIVERY_TARGET_CPU}: "
              f"{'met' if d['target_met'] else 'NOT met'}; with the agent a delivery leaves "
              "behind: bench/delivery.py); "
              f"full command line {d['full_command_line_cpu_seconds']} s; `python -c pass` "
              f"{d['python_pass_cpu_seconds']} s; {d['deliveries']} each, {d['failed']} failed")
    if "warning" in report:
        print(f"WARNING    {report['warning']}")
    print(f"load       {os.getloadavg()}")
    print(f"machine    {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, {m['os']}")
    print("versions   " + ", ".join(f"{k} {val}" for k, val in v.items()))


if __name__ == "__main__":
    sys.exit(main())
