"""Raw mail to a ParsedMessage: the seeds, real `git format-patch` output, and broken mail.

Every broken message here is one the bot meets on real lists; each must come out as a record
(with a note in `problems`) and never as a crash. Only input that is not mail is refused.
"""

from __future__ import annotations

import base64
import datetime as dt
import os
import tracemalloc
from pathlib import Path

import pytest

from bot.demo import SEED_DIR as SEEDS
from bot.mail import MessageKind, ParsedMessage, UnparseableMessage, parse_message
from bot.mail.record import Address, Trailer
from bot.mail.trailers import find_trailers
from tests.support.gitrepo import git, needs_git


def mail(*headers: str, body: str | bytes = "Hello.\n", eol: bytes = b"\n") -> bytes:
    """A message from header lines and a body."""
    head = eol.join(h.encode() for h in headers)
    data = body.encode() if isinstance(body, str) else body
    return head + eol + eol + data


BASIC = (
    "From: Yu Zhao <yuzhao@google.com>",
    "To: Kairui Song <kasong@tencent.com>",
    "Date: Mon, 25 Dec 2023 00:28:14 -0700",
    "Message-ID: <reply-1@mail.gmail.com>",
    "Subject: Re: [PATCH 1/3] mm, lru_gen: batch update counters on againg",
    "In-Reply-To: <patch-1@gmail.com>",
)


# --- the seeds -----------------------------------------------------------------------------


def test_seed_reply_with_a_suggested_diff() -> None:
    parsed = parse_message((SEEDS / "lru_gen-batch-counters-reply.eml").read_bytes())
    assert parsed.kind is MessageKind.INLINE_DIFF
    assert parsed.msgid == "CAOUHufYtSQnrVBC6OEXpT=LJW=L4J1Uw1yXpPrzaUhPWauo_3A@mail.gmail.com"
    assert parsed.in_reply_to == "20231222102255.56993-2-ryncsn@gmail.com"
    assert parsed.references == [
        "20231222102255.56993-1-ryncsn@gmail.com",
        "20231222102255.56993-2-ryncsn@gmail.com",
    ]
    assert parsed.sender == Address("Yu Zhao", "yuzhao@google.com")
    assert parsed.to == [Address("Kairui Song", "kasong@tencent.com")]
    assert [a.email for a in parsed.cc] == [
        "linux-mm@kvack.org", "akpm@linux-foundation.org", "linux-kernel@vger.kernel.org",
    ]
    assert parsed.date == dt.datetime(2023, 12, 25, 7, 28, 14, tzinfo=dt.UTC)
    assert parsed.subject.reply and parsed.subject.counter == 1 and parsed.subject.total == 3
    # quoted-printable decoded: soft line breaks joined, =3D and UTF-8 sequences decoded
    assert "3:24\u202fAM Kairui Song <ryncsn@gmail.com> wrote:" in parsed.body
    assert "--key-minimum=1 --key-maximum=16000000" in parsed.body
    assert "=3D" not in parsed.body
    # the reviewer's diff, not the quoted patch, is this message's diff
    assert [(f.path, f.change) for f in parsed.files] == [("mm/vmscan.c", "modify")]
    assert (parsed.insertions, parsed.deletions) == (11, 1)
    assert parsed.diff is not None and parsed.diff.startswith("diff --git a/mm/vmscan.c")
    assert parsed.patch_fingerprint is not None
    # "> Signed-off-by: Kairui Song" is quoted: not a trailer of this message
    assert parsed.trailers == []
    assert parsed.problems == []


@pytest.mark.parametrize(
    ("seed", "subject", "sender"),
    [
        ("per-lruvec-lru_lock-cover-reply.txt", "Re: [PATCH v4 0/9] per lruvec lru_lock for memcg",
         "Konstantin Khlebnikov <khlebnikov@yandex-team.ru>"),
        ("vmscan-bailout-hackbench-reply.txt",
         "Re: [PATCH] vmscan: improve reclaim throuput to bail out patch take2", "MinChan Kim"),
    ],
)
def test_seed_bodies_with_reduced_headers_are_refused_with_a_clear_reason(
    seed: str, subject: str, sender: str
) -> None:
    with pytest.raises(UnparseableMessage) as refused:
        parse_message((SEEDS / seed).read_bytes())
    reason = str(refused.value)
    assert reason.startswith("not an RFC 822 message")
    assert "reduced headers" in reason
    assert repr(subject) in reason and repr(sender) in reason


def test_seed_body_given_real_headers_is_a_review_without_a_diff() -> None:
    body = (SEEDS / "vmscan-bailout-hackbench-reply.txt").read_bytes().split(b"\n\n", 2)[2]
    parsed = parse_message(
        mail(
            "From: MinChan Kim <minchan.kim@gmail.com>",
            "Subject: Re: [PATCH] vmscan: improve reclaim throuput to bail out patch take2",
            "Message-ID: <28c262360812040523g@mail.gmail.com>",
            "Date: Thu, 4 Dec 2008 22:23:00 +0900",
            body=body,
        )
    )
    # the patch is quoted (">"), so this reply carries no diff of its own
    assert parsed.kind is MessageKind.REVIEW
    assert parsed.files == [] and parsed.diff is None
    assert parsed.trailers == []  # the quoted Signed-off-by/Acked-by are not this message's


# --- real git format-patch output ----------------------------------------------------------




def source(lines: int, tag: str) -> str:
    return "".join(f"\tline {i} of {tag}\n" for i in range(lines))


@pytest.fixture
def series(tmp_path: Path) -> dict[str, ParsedMessage]:
    """A v2 3-patch series with a cover letter and base-commit, from a real repository."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "mm").mkdir()
    (repo / "mm" / "vmscan.c").write_text(source(60, "vmscan"))
    (repo / "mm" / "lru.c").write_text(source(30, "lru"))
    (repo / "mm" / "obsolete.c").write_text(source(5, "obsolete"))
    (repo / "tools").mkdir()
    (repo / "tools" / "bench.sh").write_text("#!/bin/sh\nexit 0\n")
    (repo / "tools" / "blob.bin").write_bytes(bytes(range(200)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()

    (repo / "mm" / "vmscan.c").write_text(source(60, "vmscan").replace("line 7 ", "line seven "))
    git(repo, "commit", "-qam", "mm/vmscan: rename a line\n\nBecause.\n\n"
        "Fixes: 1234567890ab (\"mm: an old\n  commit\")\n"
        "Reported-by: kernel test robot <lkp@intel.com>\n"
        "Closes: https://lore.kernel.org/oe-lkp/202312221234.abcd@intel.com\n"
        "Reviewed-By: Yu Zhao <yuzhao@google.com>\n"
        "Signed-off-by: Kairui Song <kasong@tencent.com>")
    git(repo, "mv", "mm/lru.c", "mm/lru_gen.c")
    git(repo, "rm", "-q", "mm/obsolete.c")
    (repo / "tools" / "bench.sh").chmod(0o755)
    git(repo, "commit", "-qam", "mm: move lru.c\n\nSigned-off-by: Kairui Song <kasong@tencent.com>")
    (repo / "mm" / "workingset.c").write_text(source(8, "workingset"))
    (repo / "tools" / "blob.bin").write_bytes(bytes(reversed(range(200))))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "mm: add workingset.c\n\nSigned-off-by: K S <kasong@tencent.com>")

    out = tmp_path / "out"
    git(repo, "format-patch", "-q", "--cover-letter", "-v2", "--thread", "--binary",
        f"--base={base}", "-o", str(out), f"{base}..HEAD")
    parsed = {}
    for path in sorted(out.iterdir()):
        parsed[path.name[:8]] = parse_message(path.read_bytes())  # "v2-0000-", ...
    return parsed


@needs_git
def test_format_patch_cover_letter(series: dict[str, ParsedMessage]) -> None:
    cover = series["v2-0000-"]
    assert cover.kind is MessageKind.COVER
    assert (cover.subject.version, cover.subject.counter, cover.subject.total) == (2, 0, 3)
    assert cover.files == [] and cover.diff is None
    assert cover.base_commit is not None and len(cover.base_commit) == 40
    assert cover.sender == Address("Kairui Song", "kasong@tencent.com")
    assert cover.date == dt.datetime(2023, 12, 22, 2, 22, 55, tzinfo=dt.UTC)


@needs_git
def test_format_patch_patches_are_threaded_under_the_cover(
    series: dict[str, ParsedMessage],
) -> None:
    cover = series["v2-0000-"]
    for name in ("v2-0001-", "v2-0002-", "v2-0003-"):
        patch = series[name]
        assert patch.kind is MessageKind.PATCH
        assert patch.in_reply_to == cover.msgid
        assert patch.references == [cover.msgid]
        assert patch.subject.version == 2 and patch.subject.total == 3
        assert patch.patch_fingerprint is not None
        assert patch.base_commit is None  # with a cover letter, git writes it there only


@needs_git
def test_format_patch_trailers(series: dict[str, ParsedMessage]) -> None:
    first = series["v2-0001-"]
    assert first.trailers == [
        Trailer("Fixes", '1234567890ab ("mm: an old commit")'),
        Trailer("Reported-by", "kernel test robot <lkp@intel.com>"),
        Trailer("Closes", "https://lore.kernel.org/oe-lkp/202312221234.abcd@intel.com"),
        Trailer("Reviewed-by", "Yu Zhao <yuzhao@google.com>"),
        Trailer("Signed-off-by", "Kairui Song <kasong@tencent.com>"),
    ]
    assert [(f.path, f.added, f.removed) for f in first.files] == [("mm/vmscan.c", 1, 1)]


@needs_git
def test_format_patch_rename_delete_mode_add_binary(series: dict[str, ParsedMessage]) -> None:
    moved = {f.path: f for f in series["v2-0002-"].files}
    assert moved["mm/lru_gen.c"].change == "rename"
    assert moved["mm/lru_gen.c"].old_path == "mm/lru.c"
    assert (moved["mm/lru_gen.c"].added, moved["mm/lru_gen.c"].removed) == (0, 0)
    assert moved["mm/obsolete.c"].change == "delete" and moved["mm/obsolete.c"].removed == 5
    assert moved["tools/bench.sh"].change == "mode"
    added = {f.path: f for f in series["v2-0003-"].files}
    assert added["mm/workingset.c"].change == "add" and added["mm/workingset.c"].added == 8
    assert added["tools/blob.bin"].binary


@needs_git
def test_an_interdiff_in_a_cover_letter_is_not_the_series_diff(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "swap.c").write_text(source(10, "swap"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "swap.c").write_text(source(10, "swap").replace("line 5 ", "line five "))
    git(repo, "commit", "-qam", "mm: v1\n\nSigned-off-by: K S <kasong@tencent.com>")
    git(repo, "branch", "v1")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    (repo / "swap.c").write_text(source(10, "swap").replace("line 5 ", "line 5ive "))
    git(repo, "commit", "-qam", "mm: v2\n\nSigned-off-by: K S <kasong@tencent.com>")
    out = tmp_path / "out"
    git(repo, "format-patch", "-q", "--cover-letter", "--interdiff=v1", "-v2", "-o", str(out),
        "HEAD~1")
    cover_raw, patch_raw = (p.read_bytes() for p in sorted(out.iterdir()))
    assert b"\nInterdiff against v1:\ndiff --git a/swap.c" in cover_raw
    cover, patch = parse_message(cover_raw), parse_message(patch_raw)
    assert cover.kind is MessageKind.COVER
    assert cover.files == [] and cover.diff is None and cover.patch_fingerprint is None
    assert [(f.path, f.added, f.removed) for f in patch.files] == [("swap.c", 1, 1)]


# --- classification -------------------------------------------------------------------------

DIFF = (
    "diff --git a/mm/vmscan.c b/mm/vmscan.c\n--- a/mm/vmscan.c\n+++ b/mm/vmscan.c\n"
    "@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"
)


def message(subject: str, body: str, *extra: str) -> ParsedMessage:
    return parse_message(
        mail(
            "From: A U Thor <author@example.org>",
            "Date: Mon, 25 Dec 2023 00:28:14 +0000",
            f"Message-ID: <{abs(hash((subject, body, extra)))}@example.org>",
            f"Subject: {subject}",
            *extra,
            body=body,
        )
    )


@pytest.mark.parametrize(
    ("subject", "body", "extra", "kind"),
    [
        ("[PATCH 0/2] mm: cover", "Two patches.\n", (), MessageKind.COVER),
        # the counter makes a cover letter without PATCH, as b4 reads it (linux-block)
        ("[RFC 0/9] block: persistent ids in log messages", "An idea.\n", (),
         MessageKind.COVER),
        ("[v4 00/11] block: persistent ids in log messages", "Changes.\n", (),
         MessageKind.COVER),
        ("[resend v1 0/5] block: resize notification", "Again.\n", (), MessageKind.COVER),
        # one sub-series of a patch bomb (linux-ext4), and a patch set without counters
        ("[PATCHSET RFC v5 2/9] fuse4fs: fork a low level fuse server", "Hi all,\n",
         ("In-Reply-To: <bomb@x>",), MessageKind.COVER),
        ("[PATCHSET v2] io_uring: support fileset add/remove/modify", "Two patches.\n", (),
         MessageKind.COVER),
        ("[PATCH] mm: a cover without counters",
         "Intro\n\nA (1):\n  mm: x\n\n mm/vmscan.c | 2 +-\n 1 file changed, 1 insertion(+), "
         "1 deletion(-)\n", (), MessageKind.COVER),
        ("[PATCH 1/2] mm: patch", "Why.\n\nSigned-off-by: A <a@b.org>\n---\n" + DIFF, (),
         MessageKind.PATCH),
        ("[RFC] mm: an idea with code", "Idea.\n\n" + DIFF, (), MessageKind.PATCH),
        ("Re: [PATCH 1/2] mm: patch", "Looks good.\n\nReviewed-by: B <b@c.org>\n",
         ("In-Reply-To: <p@x>",), MessageKind.REVIEW),
        ("Re: [PATCH 1/2] mm: patch", "> " + DIFF.replace("\n", "\n> ") + "\nNo.\n",
         ("In-Reply-To: <p@x>",), MessageKind.REVIEW),
        ("Re: [PATCH 1/2] mm: patch", "Try this:\n\n" + DIFF, ("In-Reply-To: <p@x>",),
         MessageKind.INLINE_DIFF),
        # kasan-dev: a topic tag before "Re:"; the diff is a suggestion, not a v1 of one patch
        ("[-next conflict imminent] Re: [PATCH v2 0/7] mm, slub: x", "Fixed up:\n\n" + DIFF,
         ("In-Reply-To: <c@x>",), MessageKind.INLINE_DIFF),
        ("[GIT PULL] mm-hotfixes-stable for 6.7-rc7", "Linus, please pull.\n", (),
         MessageKind.PULL_REQUEST),
        ("mm fixes for 6.7",
         "The following changes since commit 1234567890abcdef:\n\n  Linux 6.7-rc6\n\n"
         "are available in the Git repository at:\n\n  git://git.kernel.org/x.git tags/y\n", (),
         MessageKind.PULL_REQUEST),
        ("a question about kswapd", "Why does it?\n", ("In-Reply-To: <q@x>",),
         MessageKind.REVIEW),
        ("LSF/MM/BPF topic: reclaim", "Let us talk.\n", (), MessageKind.OTHER),
        # a client that dropped "Re:" under the patch's and the cover letter's own subjects
        ("[PATCH 2/5] mm: x", "Looks good.\n\nReviewed-by: B <b@c.org>\n",
         ("In-Reply-To: <p@x>",), MessageKind.REVIEW),
        ("[PATCH v2 0/5] mm: x", "For the series:\nAcked-by: B <b@c.org>\n",
         ("In-Reply-To: <c@x>", "References: <c@x>"), MessageKind.REVIEW),
        # an author's own Signed-off-by: a hand-written v2 cover letter in reply to v1
        ("[PATCH v2 0/5] mm: x", "Changes since v1.\n\nSigned-off-by: A <a@b.org>\n",
         ("In-Reply-To: <c@x>",), MessageKind.COVER),
        # a fix's v2 cover letter in reply to v1, giving its Reported-by and Closes:
        ("[PATCH v2 0/2] mm: fix x", "Reported-by: C <c@d.org>\nCloses: https://e.org/1\n\n"
         "A (2):\n  mm: x\n\n mm/vmscan.c | 2 +-\n 1 file changed, 1 insertion(+), "
         "1 deletion(-)\n", ("In-Reply-To: <c@x>",), MessageKind.COVER),
        # a patch whose diff was lost, threaded under its cover letter
        ("[PATCH 2/5] mm: x", "The diff was eaten by a mail client.\n",
         ("In-Reply-To: <c@x>",), MessageKind.PATCH),
        # a client that keeps the subject as it was (Outlook): a reply quoting the review
        # (openbmc, Jacky Chou's `[PATCH 2/7] dt-bindings: pci: ...`), not a patch
        ("[PATCH 2/7] mm: x", "> Make your subject match style of:\n>\n> s/Add/x/\n\nAgreed.\n",
         ("In-Reply-To: <r@x>",), MessageKind.REVIEW),
        # a commit message that quotes, signed off, and a quote sent as no reply
        ("[PATCH 2/5] mm: x", "As the report says:\n> oops\n\nSigned-off-by: A <a@b.org>\n",
         ("In-Reply-To: <c@x>",), MessageKind.PATCH),
        ("[PATCH 2/5] mm: x", "> oops\n", (), MessageKind.PATCH),
    ],
)
def test_classification(subject: str, body: str, extra: tuple[str, ...], kind: MessageKind) -> None:
    assert message(subject, body, *extra).kind is kind


@needs_git
def test_single_patch_carries_its_base_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "vmscan.c").write_text(source(10, "vmscan"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "vmscan.c").write_text(source(11, "vmscan"))
    git(repo, "commit", "-qam", "mm: one more line\n\nSigned-off-by: K S <kasong@tencent.com>")
    out = tmp_path / "out"
    git(repo, "format-patch", "-q", f"--base={base}", "-o", str(out), "HEAD~1")
    parsed = parse_message(next(out.iterdir()).read_bytes())
    assert parsed.kind is MessageKind.PATCH and parsed.base_commit == base
    assert parsed.trailers == [Trailer("Signed-off-by", "K S <kasong@tencent.com>")]
    assert [(f.path, f.added) for f in parsed.files] == [("vmscan.c", 1)]


def test_a_numbered_patch_whose_diff_was_lost_keeps_its_slot() -> None:
    parsed = message("[PATCH 2/5] mm: x", "The diff was eaten by a mail client.\n")
    assert parsed.kind is MessageKind.PATCH and parsed.files == []
    assert "a patch posting without a diff" in parsed.problems


def test_patch_trailers_come_from_the_commit_message_only() -> None:
    body = (
        "Why.\n\nSigned-off-by: A U Thor <author@example.org>\n---\n"
        "v2: Reviewed-by: someone <someone@example.org> asked for this\n\n" + DIFF
    )
    parsed = message("[PATCH v2] mm: x", body)
    assert parsed.trailers == [Trailer("Signed-off-by", "A U Thor <author@example.org>")]


def test_reply_trailers_follow_b4_rules() -> None:
    body = (
        "On Mon, A wrote:\n> Signed-off-by: A U Thor <author@example.org>\n"
        "> Reviewed-by: Quoted Person <quoted@example.org>\n\n"
        "Looks right to me.\n\n"
        "reviewed-BY: Yu Zhao <yuzhao@google.com>\n"
        "Tested-by: Kairui Song\n"  # no address: not a trailer
        "Acked-by: Johannes Weiner\n <hannes@cmpxchg.org>\n"
        "Fixes: not-a-commit-hash\n"
        "Link: https://lore.kernel.org/r/20231222102255.56993-1-ryncsn@gmail.com\n"
        "Cc: stable@vger.kernel.org\n"
        "\n-- \nSignature-by: not@a.trailer.org\n"
    )
    parsed = message("Re: [PATCH] mm: x", body, "In-Reply-To: <p@x>")
    assert parsed.trailers == [
        Trailer("Reviewed-by", "Yu Zhao <yuzhao@google.com>"),
        Trailer("Link", "https://lore.kernel.org/r/20231222102255.56993-1-ryncsn@gmail.com"),
    ]
    # a patch keeps Cc: and joins a name and address wrapped over two lines
    assert find_trailers(
        "Acked-by: Johannes Weiner\n<hannes@cmpxchg.org>\nCc: stable@vger.kernel.org\n",
        reply=False,
    ) == [
        Trailer("Acked-by", "Johannes Weiner <hannes@cmpxchg.org>"),
        Trailer("Cc", "stable@vger.kernel.org"),
    ]


def test_b4_metadata_lines() -> None:
    body = (
        "Cover.\n\n---\nA (1):\n  mm: x\n\n mm/vmscan.c | 2 +-\n"
        " 1 file changed, 1 insertion(+), 1 deletion(-)\n---\n"
        "base-commit: 0dd3ee31125508cd67f7e7172247f05b7fd1753a\n"
        "change-id: 20231222-lru_gen-batch-9c2b1f1d4e5a\n\nBest regards,\n"
    )
    parsed = message("[PATCH 0/1] mm: x", body)
    assert parsed.base_commit == "0dd3ee31125508cd67f7e7172247f05b7fd1753a"
    assert parsed.change_id == "20231222-lru_gen-batch-9c2b1f1d4e5a"
    quoted = message("Re: [PATCH 0/1] mm: x", "> base-commit: " + "a" * 40 + "\nok\n")
    assert quoted.base_commit is None


# --- broken mail: always a record ------------------------------------------------------------


def test_missing_message_id_is_synthesized_deterministically() -> None:
    raw = mail("From: a@example.org", "Subject: no id", "Date: Mon, 25 Dec 2023 00:28:14 +0000")
    first, again = parse_message(raw), parse_message(raw)
    assert first.msgid == again.msgid
    assert first.msgid.endswith("@lorelab.invalid") and len(first.msgid.split("@")[0]) == 32
    assert parse_message(raw + b"x").msgid != first.msgid
    assert any("Message-ID" in p for p in first.problems)


def test_broken_date_is_none_with_a_note() -> None:
    parsed = parse_message(mail(*BASIC[:2], "Date: the day after tomorrow", *BASIC[3:]))
    assert parsed.date is None
    assert any("Date" in p and "the day after tomorrow" in p for p in parsed.problems)
    impossible = parse_message(
        mail(*BASIC[:2], "Date: Mon, 35 Dec 2023 00:28:14 +0000", *BASIC[3:])
    )
    assert impossible.date is None and impossible.problems


def test_dates_are_utc_aware() -> None:
    for value, expected in [
        ("Thu, 4 Dec 2008 10:28:03 +0900", dt.datetime(2008, 12, 4, 1, 28, 3, tzinfo=dt.UTC)),
        ("4 Dec 2008 10:28:03 GMT", dt.datetime(2008, 12, 4, 10, 28, 3, tzinfo=dt.UTC)),
        ("Thu, 04 Dec 08 10:28 -0500 (EST)", dt.datetime(2008, 12, 4, 15, 28, tzinfo=dt.UTC)),
    ]:
        parsed = parse_message(mail(*BASIC[:2], f"Date: {value}", *BASIC[3:]))
        assert parsed.date == expected, value


def test_header_garbage_is_skipped_and_the_rest_kept() -> None:
    raw = mail(
        "From: Yu Zhao <yuzhao@google.com>",
        "this line is not a header",
        "Subject: Re: [PATCH] still read",
        "Message-ID: <garbage@x>",
        ": no name",
        " \t",
        body="Body.\n",
    )
    parsed = parse_message(raw)
    assert parsed.subject.title == "still read" and parsed.msgid == "garbage@x"
    assert parsed.body == "Body.\n"
    assert any("non-header line" in p for p in parsed.problems)


def test_missing_blank_line_after_headers() -> None:
    raw = b"From: a@example.org\nSubject: tight\nMessage-ID: <tight@x>\nThe body starts here.\n"
    parsed = parse_message(raw)
    assert parsed.subject.title == "tight"
    assert parsed.body == "The body starts here.\n"
    assert any("no blank line" in p for p in parsed.problems)


def test_rfc2047_words_good_bad_and_unknown_charset() -> None:
    parsed = parse_message(
        mail(
            "From: =?UTF-8?q?Micha=C5=82_Miros=C5=82aw?= <Mirq@Rere.qmqm.PL>",
            "Cc: =?iso-8859-1?q?J=F6rg?= <joerg@example.org>, =?x-klingon?q?Qapla?= <k@x.org>",
            "Subject: =?utf-8?b?UmU6IFtQQVRDSF0gbW06IGNhZsOp?=\n =?utf-8?q?_and_more?=",
            "Message-ID: <words@x>",
        )
    )
    assert parsed.sender == Address("Michał Mirosław", "mirq@rere.qmqm.pl")
    assert [a.name for a in parsed.cc] == ["Jörg", "Qapla"]
    assert parsed.subject.raw == "Re: [PATCH] mm: café and more"
    assert parsed.subject.reply and parsed.subject.patch
    assert any("x-klingon" in p for p in parsed.problems)
    broken = parse_message(mail("Subject: =?utf-8?b?#$%^?= x", "Message-ID: <b@x>"))
    assert "x" in broken.subject.raw  # kept as written, never a crash


def test_unknown_body_charset_and_invalid_bytes_are_replaced() -> None:
    parsed = parse_message(
        mail(
            *BASIC,
            'Content-Type: text/plain; charset="x-made-up"',
            body=b"caf\xc3\xa9 and a stray \xff byte\n",
        )
    )
    assert parsed.body.startswith("café and a stray \ufffd byte")
    assert any("x-made-up" in p for p in parsed.problems)
    assert any("replaced" in p for p in parsed.problems)


def test_latin1_body_and_raw_8bit_headers() -> None:
    raw = (
        b"From: J\xf6rg <joerg@example.org>\nSubject: caf\xe9\nMessage-ID: <l1@x>\n"
        b"Content-Type: text/plain; charset=iso-8859-1\n\nGr\xfc\xdfe\n"
    )
    parsed = parse_message(raw)
    assert parsed.body == "Grüße\n"
    assert parsed.sender.name == "Jörg" and parsed.subject.raw == "café"


def test_base64_body_is_decoded_and_broken_base64_salvaged() -> None:
    text = "Reviewed-by: Yu Zhao <yuzhao@google.com>\n"
    encoded = base64.encodebytes(text.encode()).decode()
    parsed = parse_message(
        mail(*BASIC, "Content-Transfer-Encoding: base64", body=encoded)
    )
    assert parsed.body == text
    assert parsed.trailers == [Trailer("Reviewed-by", "Yu Zhao <yuzhao@google.com>")]
    broken = parse_message(
        mail(*BASIC, "Content-Transfer-Encoding: base64", body=encoded[:-3] + "!!\n")
    )
    assert broken.body.startswith("Reviewed-by: Yu Zhao")
    assert any("base64" in p for p in broken.problems)


def test_crlf_message_with_a_patch() -> None:
    raw = mail(
        "From: A <a@example.org>",
        "Subject: [PATCH] mm: crlf",
        "Message-ID: <crlf@x>",
        "Date: Mon, 25 Dec 2023 00:28:14 +0000",
        body=("Why.\n\nSigned-off-by: A <a@example.org>\n---\n" + DIFF).replace("\n", "\r\n"),
        eol=b"\r\n",
    )
    parsed = parse_message(raw)
    assert parsed.kind is MessageKind.PATCH
    assert "\r" not in parsed.body
    assert [(f.path, f.added, f.removed) for f in parsed.files] == [("mm/vmscan.c", 1, 1)]
    assert parsed.trailers == [Trailer("Signed-off-by", "A <a@example.org>")]


def multipart(boundary: str, *parts: bytes, close: bool = True) -> bytes:
    out = b"".join(b"--" + boundary.encode() + b"\n" + part + b"\n" for part in parts)
    return out + (b"--" + boundary.encode() + b"--\n" if close else b"")


def test_multipart_text_and_attached_patch() -> None:
    body = multipart(
        "XyZ",
        b"Content-Type: text/plain; charset=utf-8\n\nPlease see the attached fix.\n"
        b"Reviewed-by: Yu Zhao <yuzhao@google.com>\n",
        b"Content-Type: text/html\n\n<p>Please see the attached fix.</p>\n",
        b"Content-Type: text/x-patch; name=fix.patch\nContent-Disposition: attachment\n"
        b"Content-Transfer-Encoding: base64\n\n" + base64.encodebytes(DIFF.encode()),
    )
    parsed = parse_message(
        mail(*BASIC, 'Content-Type: multipart/mixed; boundary="XyZ"', body=body)
    )
    assert parsed.body.startswith("Please see the attached fix.")
    assert "<p>" not in parsed.body
    assert parsed.kind is MessageKind.INLINE_DIFF
    assert [f.path for f in parsed.files] == ["mm/vmscan.c"]
    assert parsed.trailers == [Trailer("Reviewed-by", "Yu Zhao <yuzhao@google.com>")]


def test_the_senders_own_address_as_the_parent_is_no_parent() -> None:
    parsed = parse_message(mail(
        "From: Mark Pearson <mpearson-lenovo@squebb.ca>", "Subject: [PATCH 1/2] think-lmi: x",
        "Message-ID: <20230312024635.518769-1-mpearson-lenovo@squebb.ca>",
        "In-Reply-To: <mpearson-lenovo@squebb.ca>", "References: <mpearson-lenovo@squebb.ca>",
        "Date: Sun, 12 Mar 2023 02:46:34 +0000",
        body="Why.\n\nSigned-off-by: Mark Pearson <mpearson-lenovo@squebb.ca>\n---\n" + DIFF))
    assert (parsed.in_reply_to, parsed.references) == (None, [])
    assert parsed.kind is MessageKind.PATCH
    assert parsed.problems == [
        "In-Reply-To/References: the sender's own address, not a message; ignored"]
    # a message of another's address is a parent as any
    other = parse_message(mail(*BASIC, body="Fine."))
    assert other.in_reply_to == "patch-1@gmail.com"


def test_a_patch_a_relay_labelled_as_bytes_is_read() -> None:
    """`git send-email` writes no Content-Type on a patch in ASCII (RFC 2045: text/plain);
    Mimecast put `application/octet-stream; x-default=true` in its place on Coiby Xu's kexec
    `[PATCH v6 4/4]` (linux-security-module), which was read as a patch without a diff and
    left v6 incomplete."""
    parsed = parse_message(mail(
        "From: Coiby Xu <coxu@redhat.com>", "Subject: [PATCH v6 4/4] kexec, KEYS, s390: x",
        "Message-ID: <relabelled@redhat.com>", "Date: Thu, 14 Apr 2022 09:43:44 +0800",
        "MIME-Version: 1.0", "Content-Transfer-Encoding: 8bit",
        "Content-Type: application/octet-stream; x-default=true",
        body="Why.\n\nSigned-off-by: Coiby Xu <coxu@redhat.com>\n---\n" + DIFF))
    assert parsed.kind is MessageKind.PATCH
    assert [(f.path, f.added, f.removed) for f in parsed.files] == [("mm/vmscan.c", 1, 1)]
    assert parsed.trailers == [Trailer("Signed-off-by", "Coiby Xu <coxu@redhat.com>")]
    assert parsed.problems == ["application/octet-stream part read as text: a relay's "
                               "placeholder for a missing Content-Type (x-default=true)"]


def test_a_patch_file_attached_as_bytes_is_read_and_other_bytes_are_not() -> None:
    def posted(name: str) -> ParsedMessage:
        body = multipart(
            "XyZ",
            b"Content-Type: text/plain; charset=utf-8\n\nThe fix is attached.\n",
            b"Content-Type: application/octet-stream; name=" + name.encode() + b"\n"
            b"Content-Disposition: attachment; filename=" + name.encode() + b"\n"
            b"Content-Transfer-Encoding: base64\n\n" + base64.encodebytes(DIFF.encode()),
        )
        return parse_message(mail(*BASIC, 'Content-Type: multipart/mixed; boundary="XyZ"',
                                  body=body))

    attached = posted("0001-mm-vmscan-fix.patch")
    assert attached.body.startswith("The fix is attached.")
    assert [f.path for f in attached.files] == ["mm/vmscan.c"]
    assert attached.problems == ["application/octet-stream part read as text: a patch file "
                                 "(0001-mm-vmscan-fix.patch)"]
    other = posted("vmcore.bin")
    assert other.files == [] and "@@" not in other.body


def test_truncated_multipart_keeps_what_arrived() -> None:
    body = multipart(
        "cut",
        b"Content-Type: text/plain\n\nThe text part arrived whole.\n",
        b"Content-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\nAAAA",
        close=False,
    )
    parsed = parse_message(mail(*BASIC, "Content-Type: multipart/mixed; boundary=cut", body=body))
    assert parsed.body.startswith("The text part arrived whole.")
    assert any("truncated" in p for p in parsed.problems)


def test_html_only_mail_is_a_record_with_an_empty_body() -> None:
    parsed = parse_message(
        mail(*BASIC, "Content-Type: multipart/alternative; boundary=b",
             body=multipart("b", b"Content-Type: text/html\n\n<b>hi</b>\n"))
    )
    assert parsed.body == "" and parsed.kind is MessageKind.REVIEW
    assert any("text/html" in p for p in parsed.problems)


def test_a_50_mb_attachment_is_skipped_fast() -> None:
    blob = base64.encodebytes(os.urandom(3 * 2**20)) * 13  # about 55 MB of base64
    assert len(blob) > 50 * 10**6
    body = multipart(
        "big",
        b"Content-Type: text/plain\n\nA crash dump is attached.\n",
        b"Content-Type: application/octet-stream; name=vmcore\n"
        b"Content-Transfer-Encoding: base64\n\n" + blob,
    )
    raw = mail(*BASIC, "Content-Type: multipart/mixed; boundary=big", body=body)
    tracemalloc.start()
    try:
        parsed = parse_message(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Skipped, not decoded, split or copied: the 55 MB part costs no memory (work done).
    assert peak < 2**20
    assert parsed.body == "A crash dump is attached.\n"


def test_a_huge_text_body_is_capped_with_a_note() -> None:
    line = "x" * 99 + "\n"
    parsed = parse_message(mail(*BASIC, body=line * 30_000))  # 3 MB of text
    assert len(parsed.body) <= 2**20
    assert parsed.body.endswith("\n")
    assert any("truncated" in p for p in parsed.problems)


def test_mbox_from_line_and_leading_blank_lines() -> None:
    raw = b"\nFrom mboxrd@z Thu Jan  1 00:00:00 1970\n" + mail(*BASIC)
    parsed = parse_message(raw)
    assert parsed.msgid == "reply-1@mail.gmail.com"
    assert parsed.sender.email == "yuzhao@google.com"


def test_references_keep_order_and_get_the_parent_appended() -> None:
    parsed = parse_message(
        mail(
            "From: a@example.org",
            "Message-ID: <c@x>",
            "References: <a@x>\n <b@x> <a@x>",
            "In-Reply-To: <p@x> (A's message of Mon)",
        )
    )
    assert parsed.references == ["a@x", "b@x", "p@x"]
    assert parsed.in_reply_to == "p@x"


def test_list_id_and_odd_addresses() -> None:
    parsed = parse_message(
        mail(
            "From: Foo Bar",
            'To: "Song, Kairui" <Kasong@Tencent.com>, undisclosed-recipients:;',
            "Message-ID: <odd@x>",
            "List-Id: Linux MM <linux-mm.kvack.org>",
        )
    )
    assert parsed.list_id == "linux-mm.kvack.org"
    assert parsed.sender == Address("Foo Bar", "")
    assert Address("Song, Kairui", "kasong@tencent.com") in parsed.to


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"", "empty"),
        (b"\n\n\n", "empty"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03binary", "binary data"),
        (b"Just some text that someone saved.\nSecond line.\n", "no header fields"),
    ],
)
def test_input_that_is_not_mail_is_refused(raw: bytes, says: str) -> None:
    with pytest.raises(UnparseableMessage, match=says):
        parse_message(raw)


def test_garbage_never_crashes() -> None:
    # a deterministic battery of mutilations of a real message: each is a record or a refusal
    seed = (SEEDS / "lru_gen-batch-counters-reply.eml").read_bytes()
    samples = [
        seed[:cut] for cut in range(0, len(seed), 97)
    ] + [
        seed.replace(b"\n", b"\r"),
        seed.replace(b": ", b":"),
        seed.replace(b"=", b"=\xff"),
        seed.replace(b"Content-Type: text/plain", b"Content-Type: multipart/mixed"),
        seed.replace(b"quoted-printable", b"base64"),
        seed.replace(b"quoted-printable", b"x-uuencode"),
        bytes(range(256)) * 4,
    ]
    for raw in samples:
        try:
            parsed = parse_message(raw)
        except UnparseableMessage:
            continue
        assert isinstance(parsed.msgid, str) and parsed.msgid


def wrapped_by_list(inner: bytes, encoding: str = "8bit") -> bytes:
    """`inner` as Mailman's DMARC mitigation sends it on (alsa-devel, 2023)."""
    return mail(
        "From: A U Thor via Alsa-devel <alsa-devel@alsa-project.org>",
        "Reply-To: A U Thor <author@example.org>",
        "Subject: [PATCH 2/7] mm: vmscan: one change",
        "Date: Wed, 15 Mar 2023 14:42:26 +0100",
        "Message-ID: <167888778959.26.1275@mailman-core.alsa-project.org>",
        "In-Reply-To: <cover.1@example.org>",
        'List-Id: "Alsa-devel mailing list" <alsa-devel.alsa-project.org>',
        "MIME-Version: 1.0",
        "Content-Type: message/rfc822",
        f"Content-Transfer-Encoding: {encoding}",
        "Content-Disposition: inline",
        body=inner,
    )


def test_a_mail_the_list_wrapped_in_its_own_is_the_authors_mail() -> None:
    """Mailman's DMARC "wrap message": the list's own From, Message-ID and a message/rfc822 body
    holding the author's mail. Read as it came, every patch alsa-devel sent so in 2023 was
    "without a diff" under the list server's Message-ID, and no series of those months was in
    a version."""
    inner = mail(
        "From: A U Thor <author@example.org>",
        "Subject: [PATCH 2/7] mm: vmscan: one change",
        "Date: Wed, 15 Mar 2023 14:42:26 +0100",
        "Message-Id: <patch.2@example.org>",
        "In-Reply-To: <cover.1@example.org>",
        "References: <cover.1@example.org>",
        body=f"The change.\n\nSigned-off-by: A U Thor <author@example.org>\n---\n{DIFF}",
    )
    parsed = parse_message(wrapped_by_list(inner))
    assert (parsed.msgid, parsed.in_reply_to, parsed.sender, parsed.kind) == (
        "patch.2@example.org", "cover.1@example.org",
        Address("A U Thor", "author@example.org"), MessageKind.PATCH)
    assert [f.path for f in parsed.files] == ["mm/vmscan.c"]
    assert parsed.list_id == "alsa-devel.alsa-project.org"  # the wrapper's, the mail has none
    assert parsed.problems == ["sent by the list wrapped in a mail of its own (message/rfc822, "
                               "<167888778959.26.1275@mailman-core.alsa-project.org>)"]
    # a wrapper whose body is not a mail, or sent in an encoding message/rfc822 may not have,
    # is read as it came
    for odd in (wrapped_by_list(b"\x00\x01 not a mail\n"),
                wrapped_by_list(base64.b64encode(inner), "base64")):
        read = parse_message(odd)
        assert read.msgid == "167888778959.26.1275@mailman-core.alsa-project.org"
        assert read.kind is MessageKind.PATCH and not read.files
    # a wrapper in the wrapped mail is not opened: nesting is unbounded, the sender's to choose
    nested = inner
    for _ in range(1000):  # beyond the interpreter's recursion limit
        nested = wrapped_by_list(nested)
    read = parse_message(nested)
    assert read.msgid == "167888778959.26.1275@mailman-core.alsa-project.org" and not read.files
