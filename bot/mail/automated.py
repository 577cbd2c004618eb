"""Mail that is never a patch posting, whatever it carries: its sender asked tools to ignore it,
a machine sent it, or it is a tree's notice.

Such mail carries diffs that are not submissions: Greg's "Patch ... has been added to the
6.1-stable tree", Sasha's `[PATCH AUTOSEL 6.1 12/40]` backport candidates and the kernel test
robot's suggested fixes (all marked `X-Patchwork-Hint: ignore`, patchwork's convention),
bugzilla's comments (`Auto-Submitted: auto-generated`, RFC 3834), tip-bot2's notice of each
commit merged (`Robot-ID`) and KernelCI's bisection reports, which show the breaking commit
(`X-Kernelci-Report-Type`). Greg's stable notices until 2021 and his trees' to this day carry no
hint (`FAILED: patch "[PATCH] x" failed to apply to 4.9-stable tree`, `patch "x" added to
usb-linus`, the commit below the note), nor do linux-next's notices, which carry the fix-up
applied to the tree (`linux-next: manual merge of the net-next tree with the net tree`,
`linux-next: build failure after merge of the bpf-next tree`), nor Andrew Morton's notices of
the -mm tree, which carry the patch and reach every list its Cc lines name (`+
dax-busc-replace-several-sprintf-with-sysfs_emit.patch added to mm-unstable branch`, nvdimm;
stable, kasan-dev): those are told by their subject, which no posting has. As patches they
became series, which the planner tests and the bot answers when they are complete and touch a
watched file: Greg's notice that a fix to mm/vmscan.c went into 6.1-stable, tested on the mm
tree. They stay what else they are (a review, a reply), so a
robot's reply keeps its trailers.
"""

from __future__ import annotations

import re

from bot.mail.mime import Headers, first

# Fields only a robot's mail has: tip-bot2's, KernelCI's.
_ROBOT_FIELDS = frozenset({"robot-id", "x-kernelci-report-type"})
AUTOMATED_FIELDS = frozenset({"x-patchwork-hint", "auto-submitted", *_ROBOT_FIELDS})
# A stable or maintainer tree's notice of one commit: `[FAILED: ]patch "<title>" ...` (the
# title may hold quotes of its own: `Revert "x"`); linux-next's of a tree. Matched only on a
# subject that starts as one can: `never_posted` then costs 0.56 us a mail, not 0.93.
_TREE_NOTICE = re.compile(
    r'(?:FAILED: )?patch ".*" (?:has been added to|added to|failed to apply to) \S'
    r"|linux-next: .*\btrees?\b",
    re.I,
)
# Andrew Morton's -mm notices, the patch below (To: mm-commits, Cc: whom the patch Cc's):
# `+ x.patch added to mm-unstable branch`, `[merged mm-stable] x.patch removed from -mm tree`,
# `[to-be-updated] ...`, `- x.patch removed ...`; a posting's own tags name PATCH. Matched only
# on a subject naming a `.patch` file: every posting starts with `[`, and the pattern there
# cost a microsecond a mail.
_MM_NOTICE = re.compile(
    r"(?:[+-] |\[(?![^]]*patch)[^]]*\] ?)\S+\.patch (?:added to|removed from) \S", re.I
)


def never_posted(headers: Headers, subject: str) -> bool:
    """Whether the mail asks tools to ignore it, or says a machine sent it: by its headers, or
    by its (decoded) subject, a tree's notice."""
    hint = first(headers, "x-patchwork-hint")
    if hint is not None and hint.strip().lower() == "ignore":
        return True
    return (auto_submitted(first(headers, "auto-submitted"))
            or not _ROBOT_FIELDS.isdisjoint(headers)
            or (subject[:1] in "FfPpLl" and _TREE_NOTICE.match(subject) is not None)
            or (".patch " in subject and _MM_NOTICE.match(subject) is not None))


def auto_submitted(value: str | None) -> bool:
    """Whether an Auto-Submitted field's value (None: no such field) says a machine sent the
    mail: anything but `no`, its parameters aside (RFC 3834)."""
    return value is not None and value.split(";")[0].strip().lower() != "no"
