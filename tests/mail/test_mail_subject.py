"""Subjects read by b4's rules: what the series stage sees of `[PATCH v3 mm-unstable 1/3] ...`."""

from __future__ import annotations

import pytest

from bot.mail.subject import parse_subject, says_fix_up, says_replacement, version_label


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "Re: [PATCH 1/3] mm, lru_gen: batch update counters on againg",
            dict(reply=True, patch=True, version=1, counter=1, total=3,
                 title="mm, lru_gen: batch update counters on againg"),
        ),
        (
            "[PATCH v4 0/9] per lruvec lru_lock for memcg",
            dict(reply=False, patch=True, version=4, counter=0, total=9,
                 title="per lruvec lru_lock for memcg"),
        ),
        ("[PATCHv3 2/5] mm: foo", dict(patch=True, version=3, counter=2, total=5)),
        ("[PATCH] vmscan: improve reclaim throuput to bail out patch take2",
         dict(patch=True, version=1, counter=1, total=1, counters_explicit=False)),
        ("[RFC PATCH v2 03/10] mm: bar", dict(rfc=True, patch=True, version=2, counter=3)),
        ("[PATCH RESEND v2] mm: baz", dict(resend=True, version=2, prefixes=())),
        ("[PATCH mm-unstable v2 1/2] mm: qux", dict(prefixes=("mm-unstable",), version=2)),
        ("[PATCH net-next,v2] net: x", dict(prefixes=("net-next",), version=2)),
        ("[PATCH [v2] 1/3] nested", dict(version=2, counter=1, total=3, title="nested")),
        # The version in a group of its own after the counter (seen on vger lists).
        ("[PATCH 1/3][V2] mm: late version",
         dict(version=2, version_explicit=True, counter=1, total=3, title="mm: late version",
              prefixes=())),
        ("[PATCH 00/16] mm: zero-padded cover", dict(version=1, counter=0, total=16)),
        # The version written as git's option (ext4's maintainer sends them so).
        ("[PATCH -v3] ext4: fix possible UAF", dict(version=3, version_explicit=True,
                                                  prefixes=(), title="ext4: fix possible UAF")),
        ("[PATCH -V2 1/2] e2fsck: x", dict(version=2, counter=1, total=2, prefixes=())),
        ("[PATCH -next] ext4: fix remount", dict(version=1, prefixes=("-next",))),
        ("[PATCH -vfs] odd tree", dict(version=1, prefixes=("-vfs",))),
        ("[PATCH -v99999] too far", dict(version=1, prefixes=("-v99999",))),  # kept as written
        # Point releases (Darrick Wong's respins): version 4, the tag kept for its label.
        ("[PATCH v4.1 9/9] xfs: respin", dict(version=4, version_explicit=True, counter=9,
                                              total=9, prefixes=("v4.1",), title="xfs: respin")),
        ("[PATCHSET v2.2 0/4] xfs_repair: x", dict(version=2, counter=0, prefixes=("v2.2",))),
        ("[PATCH -v3.1] ext4: x", dict(version=3, version_explicit=True, prefixes=("-v3.1",))),
        ("[PATCH 5.10.y] stable", dict(version=1, version_explicit=False, prefixes=("5.10.y",))),
        ("[PATCH v4.1234] too fine", dict(version=1, version_explicit=False)),
        ("[PATCH v\u0663.1] not ASCII", dict(version=1, version_explicit=False)),
        # A lettered variant is a point release too (Roberto Sassu's, linux-fscrypt; b4: 1).
        ("[RFC][PATCH v3a 06/11] fsverity: x", dict(version=3, version_explicit=True, counter=6,
                                                   total=11, prefixes=("v3a",), rfc=True)),
        ("[PATCH v4l] no variant", dict(version=1, version_explicit=False, prefixes=("v4l",))),
        # A tree's release is no version, nor does it displace the version before it.
        ("[PATCH v10 rebased on v6.4 00/25] DEPT", dict(version=10, counter=0, total=25,
                                                        prefixes=("rebased", "on", "v6.4"))),
        ("[PATCH for v5.9] ARM: dts: x", dict(version=1, version_explicit=False,
                                              prefixes=("for", "v5.9"))),
        # Mercurial's `hg email` counters, with its version flag.
        ("[PATCH 1 of 2] hg: first", dict(counter=1, total=2, counters_explicit=True,
                                          prefixes=(), title="hg: first")),
        ("[PATCH 0 of 12 V2] hg: intro", dict(counter=0, total=12, version=2, prefixes=())),
        ("[PATCH 2 OF 3] hg: upper case", dict(counter=2, total=3)),
        ("[PATCH one of us] not a counter", dict(counter=1, total=1, counters_explicit=False)),
        # The first group's counters stand; a later group's number something else (Lee Jones's
        # W=1 sets, linux-input: b4 reads this cover letter of 20 patches as a patch 1/2).
        ("[PATCH 00/20] [Set 1/2] Rid W=1 issues from Input",
         dict(counter=0, total=20, counters_explicit=True, prefixes=("Set", "1/2"),
              title="Rid W=1 issues from Input")),
        ("[PATCH v2 0/4] [Set 2/2] Rid W=1", dict(version=2, counter=0, total=4)),
        ("[PATCH v2][1/3] counters in a group of their own", dict(version=2, counter=1, total=3)),
        # ... and so does its version (linux-mips: tglx's v3 went out with v2's subjects too)
        ("[patch v3 10/36] [patch V2 10/38] x86/cpu/cacheinfo: Remove cpu_callout_mask",
         dict(version=3, counter=10, total=36, prefixes=("V2", "10/38"),
              title="x86/cpu/cacheinfo: Remove cpu_callout_mask")),
        ("[PATCH 1/3][V2] a version after the counters", dict(version=2, counter=1, total=3)),
        ("Aw: [PATCH] german reply", dict(reply=True, patch=True, title="german reply")),
        ("SV: [PATCH] swedish reply", dict(reply=True, patch=True)),
        ("Fwd: [PATCH] forwarded", dict(reply=True, patch=True)),
        ("Re: Re: [PATCH v2 1/2] twice", dict(reply=True, patch=True, version=2, counter=1)),
        # Other languages' clients: their words whatever follows, a full-width colon, repeated
        # (linux-pm, linux-usb, linux-scsi); Italian Outlook's one letter before a bracket.
        ('回复: FAILED: Patch "PM: x" failed to apply to 6.18-stable tree',
         dict(reply=True, patch=False, title='FAILED: Patch "PM: x" failed to apply to '
                                             '6.18-stable tree')),
        ("回复：[PATCH v4] USB: fix", dict(reply=True, patch=True, version=4, title="USB: fix")),
        ("答复: 答复: [PATCH v9] usb: x", dict(reply=True, patch=True, version=9, title="usb: x")),
        ("Re：[PATCH v2] hibernate: y", dict(reply=True, patch=True, version=2)),
        ("Antw: [PATCH v2] scsi: z", dict(reply=True, patch=True, version=2, title="scsi: z")),
        ("R: [PATCH v2 2/2] dt-bindings: opp", dict(reply=True, patch=True, counter=2, total=2)),
        # A count after the word (eM Client: a reply to Greg carrying the fix, linux-usb).
        ("Re[2]: [PATCH v2] fix: add XHCI_SPURIOUS_SUCCESS",
         dict(reply=True, patch=True, version=2, title="fix: add XHCI_SPURIOUS_SUCCESS")),
        ("Re^3: [PATCH] x", dict(reply=True, patch=True, title="x")),
        ("[EXTERNAL] 答复: [PATCH 1/2] q", dict(reply=True, patch=True, counter=1, prefixes=())),
        ("[f2fs-dev] 答复: [PATCH v3] f2fs: compress: x",
         dict(reply=True, patch=True, version=3, prefixes=(), title="f2fs: compress: x")),
        # ... but no ASCII two letters without a bracket: kernel subsystems look so.
        ("rv: add per-task monitor", dict(reply=False, title="rv: add per-task monitor")),
        ("[PATCH] pd: fix", dict(reply=False, patch=True, title="pd: fix")),
        # Another's tags before "Re:" (a gateway's, a topic): a reply, the tags dropped.
        ("[EXTERNAL] Re: [PATCH v2 1/3] foo",
         dict(reply=True, patch=True, version=2, counter=1, total=3, title="foo", prefixes=())),
        ("[-next conflict imminent] Re: [PATCH v2 0/7] mm, slub: x",
         dict(reply=True, patch=True, version=2, counter=0, total=7, title="mm, slub: x")),
        ("[syzbot ci] Re: mm: remove nth_page()",
         dict(reply=True, patch=False, title="mm: remove nth_page()")),
        # The header's name pasted into the subject (Gregory Price's dax/kmem cover, nvdimm).
        ("Subject: [PATCH 0/8] dax/kmem: add runtime hotplug state control",
         dict(reply=False, patch=True, counter=0, total=8,
              title="dax/kmem: add runtime hotplug state control")),
        ("Re: Subject: [PATCH 0/8] x", dict(reply=True, patch=True, counter=0, title="x")),
        ("Subject: a title", dict(reply=False, patch=False, title="Subject: a title")),
        # ... but a posting's own tags are a posting's (cgroups: an RFC series in reply).
        ("[RFC PATCH 0/3] Re: [PATCH v17 14/21] mm/compaction: x",
         dict(reply=False, patch=True, rfc=True, counter=0, total=3)),
        ("[GIT PULL] mm fixes for 6.7-rc7", dict(patch=False, prefixes=("GIT", "PULL"))),
        ("[RFC] mm: an idea", dict(rfc=True, patch=False, title="mm: an idea")),
        ("Re: plain discussion", dict(reply=True, patch=False, title="plain discussion")),
        ("no tags at all", dict(reply=False, patch=False, title="no tags at all")),
        ("", dict(reply=False, patch=False, title="")),
    ],
)
def test_subject_fields(raw: str, expected: dict[str, object]) -> None:
    subject = parse_subject(raw)
    for name, value in expected.items():
        assert getattr(subject, name) == value, (raw, name)


def test_whitespace_is_folded_and_raw_kept() -> None:
    subject = parse_subject("Re: [PATCH v2 1/3]   mm:\n\tfolded   subject ")
    assert subject.raw == "Re: [PATCH v2 1/3] mm: folded subject"
    assert subject.title == "mm: folded subject"


def test_explicit_flags_tell_written_from_defaulted() -> None:
    bare = parse_subject("[PATCH] x")
    assert (bare.version_explicit, bare.counters_explicit) == (False, False)
    full = parse_subject("[PATCH v1 1/1] x")
    assert (full.version_explicit, full.counters_explicit) == (True, True)


# Subjects on which our rules and b4's must agree (b4 keeps "Re: Re:" and "net-next,v2" whole,
# where we deliberately go further).
AGREED = [
    "[PATCH v3 mm-unstable 1/3] mm, lru_gen: batch",
    "Re: [PATCH 1/3] mm, lru_gen: batch update counters on againg",
    "[PATCHv2 0/4] mm: cover",
    "[RFC PATCH v2 03/10] mm: bar",
    "[PATCH RESEND] mm: baz",
    "[PATCH [v2] 1/3] nested",
    "Aw: [PATCH] german reply",
    "[GIT PULL] mm fixes",
    "plain subject",
]


@pytest.mark.parametrize("raw", AGREED)
def test_agrees_with_b4(raw: str) -> None:
    b4 = pytest.importorskip("b4")
    theirs = b4.LoreSubject(raw)
    ours = parse_subject(raw)
    assert (ours.reply, ours.patch, ours.rfc, ours.resend) == (
        theirs.reply, theirs.patch, theirs.rfc, theirs.resend,
    )
    assert (ours.version, ours.counter, ours.total) == (
        theirs.revision, theirs.counter, theirs.expected,
    )
    assert ours.title == theirs.subject
    assert list(ours.prefixes) == [
        p for p in theirs.get_extra_prefixes()
        if p.lower() not in ("patch", "rfc", "resend") and not p.lower().startswith("patch")
    ]


@pytest.mark.parametrize(
    ("raw", "label"),
    [("[PATCH v4.1 9/9] x", "v4.1"), ("[PATCH -v3.2] x", "v3.2"), ("[PATCH v4 1/2] x", "v4"),
     ("[PATCH] x", "v1"), ("[PATCH v\u0663.1] x", "v1"),
     ("[PATCH v12.10 mm-unstable] x", "v12.10"), ("[PATCH v4a 00/38] x", "v4a"),
     ("[PATCH v13B 00/18] x", "v13b"), ("[PATCH v5 for v5.9] x", "v5")],
)
def test_version_labels_say_what_the_author_wrote(raw: str, label: str) -> None:
    subject = parse_subject(raw)
    assert version_label(subject.version, subject.prefixes) == label


@pytest.mark.parametrize(("raw", "fix_up"), [
    ("[PATCH v6 10/13 -fix] powerpc/book3s64/vmemmap: Switch radix", True),
    ("[PATCH v6 10/13 -fix2] powerpc/book3s64/vmemmap: Switch radix", True),
    ("[PATCH v3 10/13 fix2] mm/khugepaged: collapse_pte_mapped_thp(): fix2", True),
    ("[PATCH gmem FIXUP] mm, compaction: make testing mapping_unmovable() safe", True),
    ("[PATCH v5 3/6 REPLACE] zswap: make shrinking memcg-aware", False),
    ("[PATCH 1/3 cgroup/for-5.2-fixes] cgroup: Call cgroup_release() earlier", False),
    ("[PATCH v2 2/5] mm: fix the fix", False),
])
def test_fix_up_tags_mark_a_patch_to_fold(raw: str, fix_up: bool) -> None:
    assert says_fix_up(parse_subject(raw).prefixes) is fix_up


@pytest.mark.parametrize(("raw", "replacement"), [
    ("[PATCH v2 07/23 replacement] mips: add pte_unmap() to balance pte_offset_map()", True),
    ("[PATCH v5 3/6 REPLACE] zswap: make shrinking memcg-aware", True),
    ("[PATCH v2 3/6 update] mm: pgtable: convert some architectures to use x", True),
    ("[PATCH 2/5 UPDATED] mm: x", True),
    ("[PATCH v2 07/23 fix] mips: update_mmu_cache() can replace __update_tlb(): fix", False),
    ("[PATCH v2 3/5] mm: replace the lru walk", False),
    ("[PATCH replace-lru 1/2] mm: x", False),
    ("[PATCH updates 1/2] mm: x", False),
])
def test_replacement_tags_mark_a_patch_that_takes_its_numbers_place(
    raw: str, replacement: bool
) -> None:
    assert says_replacement(parse_subject(raw).prefixes) is replacement
