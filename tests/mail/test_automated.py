"""Mail that asks tools to ignore it, or that a machine sent, is no patch posting
(`bot.mail.automated`). The header lines are those of real archived mail (kasan-dev, cgroups,
linux-erofs)."""

from __future__ import annotations

import pytest

from bot.mail import MessageKind, parse_message
from tests.ingest.test_hostile_mail import DIFF
from tests.mail.test_mail_parse import mail

COMMON = ("From: Ada Reclaim <ada@example.org>", "Date: Mon, 30 Nov 2026 10:00:00 +0000",
          "Message-ID: <automated-1@example.org>")


@pytest.mark.parametrize("lines", [
    pytest.param(("Subject: Patch \"mm: fix\" has been added to the 6.1-stable tree",
                  "X-stable: commit", "X-Patchwork-Hint: ignore"), id="stable-notice"),
    pytest.param(("Subject: [PATCH AUTOSEL 6.1 12/40] mm: fix",
                  "X-Patchwork-Hint: Ignore"), id="autosel"),
    pytest.param(("Subject: [Bug 204479] KASAN hit at modprobe zram",
                  "X-Bugzilla-Type: changed", "Auto-Submitted: auto-generated"), id="bugzilla"),
    pytest.param(("Subject: [tip: x86/core] mm: fix", "X-Mailer: tip-git-log-daemon",
                  "Robot-ID: <tip-bot2.linutronix.de>"), id="tip-bot2"),
    pytest.param(("Subject: [PATCH 0/2] mm: fixes", "X-Patchwork-Hint: ignore"),
                 id="cover-letter"),
    pytest.param(("Subject: next/master boot bisection: next-20190513 on rk3288-veyron-jaq",
                  "X-Kernelci-Report-Type: bisect", "X-Kernelci-Tree: next"),
                 id="kernelci-bisection"),
    # Greg's notices without the hint: stable's until 2021, his trees' still (linux-pm,
    # linux-scsi, linux-usb).
    pytest.param(('Subject: FAILED: patch "[PATCH] x86/CPU/AMD: Clear RDRAND CPUID bit" failed'
                  " to apply to 4.4-stable tree",), id="failed-without-hint"),
    pytest.param(('Subject: patch "usb: dwc3: gadget: Check for IOC/LST bit" added to usb-linus',),
                 id="tree-notice-without-hint"),
    pytest.param(('Subject: patch "Revert "usb: x"" has been added to the 5.4-stable tree',),
                 id="quoted-title"),
    # linux-next's notices, with the fix-up applied (linux-wireless, linux-arm-kernel).
    pytest.param(("Subject: linux-next: manual merge of the wireless-next tree with the net tree",),
                 id="linux-next-merge"),
    pytest.param(("Subject: linux-next: build failure after merge of the bpf-next tree",),
                 id="linux-next-build"),
    # Andrew Morton's -mm notices, the patch below (nvdimm, stable, kasan-dev).
    pytest.param(("Subject: + dax-busc-replace-several-sprintf-with-sysfs_emit.patch added to"
                  " mm-unstable branch",), id="mm-added"),
    pytest.param(("Subject: + mm-vmscan-fix.patch added to -mm tree",), id="mm-added-old"),
    pytest.param(("Subject: [merged mm-stable] mm-mglru-fix-div-by-zero-in-vmpressure_calc_level"
                  ".patch removed from -mm tree",), id="mm-merged"),
    pytest.param(("Subject: [merged]\n x86-setup-dont-remove-e820_type_ram-for-pfn-0.patch removed"
                  " from -mm tree",), id="mm-merged-folded"),
    pytest.param(("Subject: [to-be-updated] powerpc-watchdog-x.patch removed from -mm tree",),
                 id="mm-to-be-updated"),
    pytest.param(("Subject: - mm-vmscan-fix.patch removed from -mm tree",), id="mm-removed"),
])
def test_a_diff_that_is_no_submission_is_no_patch(lines):
    body = DIFF if "0/2" not in lines[0] else "Two fixes.\n\n" + DIFF.split("---\n", 1)[1][:90]
    assert parse_message(mail(*COMMON, *lines, body=body)).kind is MessageKind.OTHER


@pytest.mark.parametrize("lines, kind", [
    # Auto-Submitted: no is a person's mail (RFC 3834); another hint is no request to ignore.
    pytest.param(("Subject: [PATCH] mm: fix", "Auto-Submitted: no"), MessageKind.PATCH,
                 id="auto-submitted-no"),
    pytest.param(("Subject: [PATCH] mm: fix", "X-Patchwork-Hint: comment"), MessageKind.PATCH,
                 id="other-hint"),
    # The kernel test robot's reply stays a reply (its trailers count).
    pytest.param(("Subject: Re: [PATCH] mm: fix", "In-Reply-To: <p@example.org>",
                  "X-Patchwork-Hint: ignore"), MessageKind.INLINE_DIFF, id="robot-reply"),
    # An answer to a tree's notice, quoting its commit, is a reply; a posting whose title
    # names a patch is a posting.
    pytest.param(('Subject: Re: FAILED: patch "[PATCH] mm: fix" failed to apply to 4.9-stable'
                  " tree", "In-Reply-To: <n@example.org>"), MessageKind.INLINE_DIFF,
                 id="answer-to-a-notice"),
    pytest.param(('Subject: [PATCH] Revert "mm: patch "x" added to the LRU"',),
                 MessageKind.PATCH, id="posting-naming-a-patch"),
    pytest.param(("Subject: [PATCH] linux-next: fix the merge of the mm tree",),
                 MessageKind.PATCH, id="posting-for-linux-next"),
    pytest.param(("Subject: [PATCH] scripts: x.patch added to the tree is checked",),
                 MessageKind.PATCH, id="posting-naming-a-patch-file"),
    pytest.param(("Subject: [RFC PATCH] docs: a.patch removed from the list",),
                 MessageKind.PATCH, id="rfc-naming-a-patch-file"),
])
def test_what_a_machine_sends_otherwise_keeps_its_kind(lines, kind):
    assert parse_message(mail(*COMMON, *lines, body=DIFF)).kind is kind
