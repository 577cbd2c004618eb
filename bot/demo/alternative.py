"""A reviewer's alternative to a patch of the stand-in tree's BATCH_COUNTERS series, for tests
and demos of compare runs (docs/replies.md, "Follow-ups: the reviewer's alternative").

As the seed lru_gen reply proposes "how about this" in place of a posted patch, the reviewer
here answers patch 2/2 ("count deactivations in the same batch") with a diff written against
the tree after patch 1/2: it batches PGDEACTIVATE as 2/2 does, and also counts faults per
simulated CPU, folding them into the shared counters once at the end, which removes the last
atomic update every fault makes. It makes the simulator faster than the series: by 10-40%
in runs on a 2-core virtual machine, the more the more often its two CPUs run at once (the
counters' cache line bounces between them), so by less on a loaded machine.
`lighter_pacing` answers the pacing patch of bot.demo.simtree.PACED_RECLAIM (3/4, a busy
wait after every folio freed, which makes the simulator several times slower) with a wait after
every 32nd folio only: CPU work the machine's load does not change, so that the alternative is
measured faster than the series on any machine. `stale_alternative` is a diff written against
some other tree: it applies neither in place of
2/2 nor on top of the series. The diffs are made from the simulator's own files, so that they
follow the tree as it changes.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.demo.simtree import BATCH_COUNTERS, PACED_RECLAIM, SIM_FILES
from bot.demo.threads import Change, Person, make_reply

REVIEWER: Person = ("Rhea Viewer", "rhea@example.net")


@dataclass(frozen=True)
class Edit:
    """A reviewer's change to one file: `old` (one or more whole lines, found exactly once)
    replaced by `new`."""

    path: str
    old: str
    new: str

    def apply(self, text: str) -> str:
        if text.count(self.old) != 1:
            raise ValueError(f"{self.path}: {self.old.strip()!r} found {text.count(self.old)} "
                             "times")
        return text.replace(self.old, self.new)


# Patch 2/2's own change, then faults counted per CPU and folded into vm_events at the end.
FASTER: tuple[Change | Edit, ...] = (
    BATCH_COUNTERS[1],
    Edit("init/main.c", "\tunsigned long ops;\n",
         "\tunsigned long ops;\n"
         "\tunsigned long pgfault;\t\t/* folded into vm_events at the end */\n"),
    Edit("init/main.c", "\t\tcount_vm_event(PGFAULT);\n", "\t\tcpu->pgfault++;\n"),
    Edit("init/main.c", "\t\tpthread_join(cpus[c].thread, NULL);\n",
         "\t\tpthread_join(cpus[c].thread, NULL);\n"
         "\tfor (int c = 0; c < NR_CPUS; c++)\n"
         "\t\tcount_vm_events(PGFAULT, cpus[c].pgfault);\n"),
)

FASTER_REPLY = """\
This still does an atomic add on the shared vm_events line for every fault
(count_vm_event(PGFAULT) in the fault path), and with two CPUs that is the
line that bounces now. How about this instead of 2/2: count faults per CPU
and fold them in once at the end, beside the deactivations?
"""

PACING = PACED_RECLAIM[2]
LIGHTER_PACING_REPLY = """\
Waiting after every folio freed costs far more than the faults it lets
through. How about waiting once per SWAP_CLUSTER_MAX folios instead?
"""

STALE_REPLY = """\
We did this differently in our tree; how about this instead?
"""


def files_after(changes: Sequence[Change | Edit],
                files: Mapping[str, str] = SIM_FILES) -> dict[str, str]:
    """The tree's files with `changes` applied in order."""
    result = dict(files)
    for change in changes:
        result[change.path] = change.apply(result[change.path])
    return result


def git_diff(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """The changed files as `git diff` shows them (without index lines, as a mail client's
    paste often is): a diff --git header, --- a/ and +++ b/ lines, hunks with 3 lines of
    context."""
    out = []
    for path in sorted(before):
        if before[path] == after[path]:
            continue
        out.append(f"diff --git a/{path} b/{path}\n")
        out.extend(difflib.unified_diff(before[path].splitlines(keepends=True),
                                        after[path].splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}", n=3))
    return "".join(out)


def faster_alternative() -> str:
    """The reviewer's diff in place of 2/2: against the tree after patch 1/2."""
    after_first = files_after(BATCH_COUNTERS[:1])
    return git_diff(after_first, files_after(FASTER, after_first))


def lighter_pacing() -> str:
    """The reviewer's diff in place of the pacing patch (`PACING`, sent as a one-patch series):
    against the tree without it, the wait after every 32nd folio freed."""
    return git_diff(SIM_FILES, files_after((Edit(
        "mm/vmscan.c", "\t\tsc->nr_reclaimed++;\n",
        "\t\tsc->nr_reclaimed++;\n"
        "\t\tif (sc->nr_reclaimed % SWAP_CLUSTER_MAX == 0)\n"
        "\t\t\tfor (volatile int spin = 0; spin < 100; spin++)\n"
        "\t\t\t\t;\t/* let the other CPUs' faults through */\n"),)))


def stale_alternative() -> str:
    """A diff against a tree where the batch was 8: it applies neither in place of 2/2 nor on
    top of the series."""
    elsewhere = files_after((Edit("mm/vmscan.c", "#define VM_EVENT_BATCH\t\t1\n",
                                  "#define VM_EVENT_BATCH\t\t8\n"),))
    return git_diff(elsewhere, files_after((Edit("mm/vmscan.c", "#define VM_EVENT_BATCH\t\t8\n",
                                                 "#define VM_EVENT_BATCH\t\t128\n"),),
                                           elsewhere))


def alternative_reply(patch: bytes, diff: str, text: str = FASTER_REPLY,
                      author: Person = REVIEWER) -> bytes:
    """The reviewer's answer to `patch` (its raw mail) carrying `diff` inline."""
    return make_reply(patch, author=author, body=text, diff=diff, quote_lines=6)
