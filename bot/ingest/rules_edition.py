"""Which edition of lorelab's rules for reading mail the stored rows were made with, and what to
tell a maintainer whose store is older than the running lorelab's rules.

A message's row holds what the parser read when the mail came (`bot.mail`), and series are
assembled from those rows (`bot.series`). An upgrade that reads or groups some mail otherwise
changes nothing already stored until `lorelab ingest reparse` reads it again: without being
told, a maintainer would keep the old series (a `[PATCH 4/3]` left as a series that never
completes, a partial reroll never tested) and never know why.

`RULES_EDITION` counts those changes. Bump it in the commit that changes what the parser or
series assembly makes of mail already stored (not for new kinds of mail only, nor for speed).
The store keeps one edition: the oldest any of its rows may have been made with. The first mail
stored into an empty store records this lorelab's, a completed reparse records it again, and
migration 0017 recorded 0 for mail stored before editions were counted.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from bot.db.models import RulesEdition

# 1: additions (`[PATCH 4/3]`) and partial rerolls (`[PATCH v5 2/8]` alone) join the postings
#    they extend (migration 0016, `bot.series.grouping`, `bot.series.rerolls`).
# 2: patches that forgot RESEND continue a RESEND posting, whose cover letter was lost
#    (`bot.series.grouping`, rule 1); `[PATCH -v3]` is version 3 (`bot.mail.subject`); a
#    partial reroll stands beside a whole vN posted later in another thread (`rerolls`).
# 3: a mail a relay sent in its author's name ("Name via kasan-dev", "Name via B4 Relay") is the
#    author's (`bot.mail.relayed`); mail that asks tools to ignore it or that a machine sent
#    (stable's notices, AUTOSEL, tip-bot2) is no patch posting (`bot.mail.automated`);
#    `[EXTERNAL] Re: [PATCH]` is a reply (`bot.mail.subject`).
# 4: a cover letter is told by its `0/N` counter without PATCH too (`[RFC 0/9]`, `[v4 00/11]`),
#    by a PATCHSET tag (`[PATCHSET v5 2/9]`, whose N/M counts patch sets: `bot.mail.classify`),
#    and by the numbered patches of its author that reply to it without any tag (`bdi cleanups
#    v3`: `bot.series.grouping`, rule 7), its version read at its end.
# 5: a cover letter without a title (`[PATCHv3 0/3]`) leaves the title to patch 1, and an empty
#    title links no versions into one series (`bot.series.grouping`, `membership`); a point
#    release (`[PATCH v4.1 9/9]`) is version 4, a posting of its own that rerolls v4
#    (`bot.mail.subject`, `grouping`, `rerolls`).
# 6: a numbered patch without a diff takes no place in its posting, and is the cover letter of
#    the patches of its posting that reply to it (`[NDCTL PATCH v7 4/4]` over 1/4..4/4:
#    `bot.series.grouping`, rule 8).
# 7: a cover letter without a posting tag takes its patches' point release with their version
#    (`... (v2.99)` over `[PATCHv2.99 01/11]`, linux-pm), and so becomes their cover letter
#    (`bot.series.grouping`, rule 7).
# 8: a cover letter sent beside its patches, all in reply to a review or to a message the
#    list never got, or under another Message-ID than the one its patches reply to, is their
#    cover letter (cgroups, memcg accounting v1..v3), and so is `[PATCH v2 0/1]` beside its
#    `1/1`, and a letter that numbers no patches (`[PATCH v2] title` over its diffstat,
#    `[PATCHSET v29.0 07/28]`) over its one single patch (`bot.series.grouping`, rules 3, 4).
# 9: a number sent twice in one posting as two different patches (`git send-email` on a folder
#    holding an earlier run's files) is the copy the cover letter's shortlog lists, not the
#    later one (`bot.series.grouping`, rule 9; linux-api, linux-arch); a cover letter that says
#    another version than the patches one `git send-email` run sent with it is theirs, at their
#    version (`[PATCH v2 00/16]` over `[PATCH v3 01/16]`..: rule 10); `[PATCH]`es without
#    numbers sent with a cover letter are its patches, numbered as its shortlog lists them
#    (rule 11).
# 10: the same patch sent twice by one `git send-email` run (its files named twice) is the
#    first copy, which the reviews answer, not the later one (`bot.series.grouping`, rule 9;
#    kasan-dev, linux-ext4, cgroups).
# 11: every patch of a posting sent again later in reply to its cover letter is a posting of
#    its own, not a correction of each (`bot.series.grouping`, rule 12; linux-block, kasan-dev);
#    a Message-ID that several mails carry, each the same part sent again (one number and size;
#    for a patch one diff), leaves its version complete, the first stored copy taken: a series
#    sent a second time under its Message-IDs is tested (`bot.series.shared_ids`; linux-block).
# 12: a cover letter sent again under an earlier posting's Message-ID (kept as a copy in a thread
#    of its own) is the cover letter of the patches sent with it in reply to that id, all of them
#    or the few a list got (`bot.series.grouping`, rule 13; `shared_ids.resent_covers`;
#    linux-block, linux-raid, linux-xfs).
# 13: a cover letter without patches of its own, sent in reply to a patch of a posting without
#    one (written later, or `git send-email` given the files out of order), is that posting's
#    (`bot.series.grouping`, rule 14; io-uring, linux-raid).
# 14: a patch without a cover letter sent again under its Message-ID (the same diff; a copy
#    kept in a thread of its own) is no second version: the first mail's posting has it
#    (`bot.series.shared_ids`; io-uring).
# 15: a cover letter sent again with the title (and version) the first lacked, in reply to it,
#    is its posting's in the first one's place (`bot.series.grouping`, rule 15; linux-xfs).
# 16: a letter that numbers no patches keeps its one `[PATCH]` when a later version's single
#    patch, or someone else's, replies to it too (`bot.series.grouping`, rule 4; linux-nfs).
# 17: a patch sent again changed, under its title and number, in reply to the patch it
#    replaces (`[PATCH v5 3/6 REPLACE]`, `[PATCH 01/21 - revised]`) corrects it; a `(fix)`
#    stays apart (`bot.series.grouping`, rules 1 and 9; linux-kselftest, linux-nfs).
# 18: a RESEND cover letter takes the patches sent with it that left RESEND off when they are
#    strays (rule 4; linux-btrfs); `[PATCH]`es numbered by a cover letter's shortlog take only
#    the numbers no patch was sent with (rule 11; virtualization).
# 19: a patch whose tags call it a fix-up (`[PATCH v6 10/13 -fix]`, `fix2`, `fixup`) continues
#    no posting, so never takes its patch's place (rules 1, 6 and 9; linuxppc-dev).
# 20: mm's fix-ups of a version's patches (`(fix)`, `(fix 2)`, `: fix`, a `-fix` tag, under a
#    patch's number and title) are the version's (`series_versions.fix_ups`), not an
#    incomplete version of their own (`bot.series.fix_ups`; cgroups, linuxppc-dev, linux-s390).
# 21: several series one run sent into one place, each numbered 1..N in full one after the
#    other (the kernel's and makedumpfile's under one cover letter), are a version each, not
#    later copies of one another's numbers (`bot.series.grouping`, rule 17; nvdimm, ltp).
# 22: a version sent a few patches at a time, each piece a partial reroll of other numbers, is
#    its last piece, which takes the rest from the pieces before it (`bot.series.rerolls`;
#    ltp, linux-arch, nvdimm, linux-bluetooth).
# 23: the one mail in a thread under a Message-ID whose other mails, in other threads, send
#    other parts (an id the sender's tool used again) is that thread's posting's, not
#    unresolved; a copy taken by a version gets the trailers of the replies naming the id it
#    was sent under (`bot.series.shared_ids`, `bot.series.trailers`; linux-usb). Which of such
#    mails a reply answers is chosen when the reply is stored (`bot.series.reused_ids`), so a
#    reparse does not move mail threaded before.
# 24: a later bracketed group's counters and version number something else: `[PATCH 00/20]
#    [Set 1/2]` is a cover letter of 20 patches, `[patch v3 10/36] [patch V2 10/38]` a patch of
#    v3 (`bot.mail.subject`; linux-input, linux-mips); a patch labelled as bytes
#    (a relay's `application/octet-stream; x-default=true` for a mail without Content-Type, a
#    `*.patch` file attached as `application/octet-stream`) is read (`bot.mail.mime`;
#    linux-security-module).
# 25: a display name with a role or company added ("Russell King - ARM Linux admin", "Name
#    (Oracle)") is the same person as the bare name (`bot.series.parts.same_author`; linux-i2c).
# 26: an In-Reply-To or Reference naming the sender's own address is no parent
#    (`bot.mail.parse`; platform-driver-x86). Threads are chosen when mail is stored: mail
#    stored before keeps its thread.
# 27: patches sent with a cover letter, each number once, some tagged as the letter and others
#    with revisions of their own (`[PATCH 08/22] [v2]`, `[RESEND^2]`, `[RESEND,v2,3/9]` under
#    `[v3,0/9]`), are its posting at its version (`bot.series.grouping`, rule 18; linux-kbuild,
#    linux-usb, linux-i2c, linux-clk, linux-gpio).
# 28: a patch whose tag is a point release of its cover letter's version (`[PATCHv2.5 01/15]`
#    under `[PATCHv2 00/15]`, one run) is read at the letter's release too (rule 18;
#    linux-remoteproc); different patches that all carry one number (`[PATCH 1/2] hsi: ...`,
#    `[PATCH 1/2] mailbox: ...`), sent by one run without a cover letter and no other number,
#    are a posting each (rule 19; linux-mmc, linux-tegra).
# 29: of mails carrying one patch's Message-ID, the one with the diff stands for it where the
#    others send that patch without one, its text lost on the way (`bot.series.shared_ids`;
#    linux-omap).
# 30: a mail a list sent wrapped in one of its own (Mailman's DMARC "wrap message",
#    `Content-Type: message/rfc822`) is read as the author's mail inside: its Message-ID,
#    threading, sender and text (`bot.mail.wrapped`; alsa-devel, 2023). A reparse reads the
#    text again but keeps the stored ids and threads: a new ingest mends the series.
# 31: a mail under a numbered patch's subject without "Re:" and without a diff, that replies
#    and quotes, with no Signed-off-by of its own, is a review (Outlook keeps the subject;
#    `bot.mail.classify`; openbmc, linux-usb, linux-bluetooth).
# 32: patches of a later run in reply to a posting's cover letter that carry titles it holds at
#    other numbers are a posting of their own, not corrections (rule 12; linux-pwm).
# 33: a patch whose parent is missing continues the cover letter its References name next,
#    sent within the hour before it (Outlook rewrote the ids of a `git send-email` run; rule 3;
#    linux-rockchip).
# 34: the first mail of a `git send-email` run whose Message-ID a server rewrote (Outlook, Amazon
#    SES, Tencent) is found again by the id the run's other mails name it by (`<T.PID-1-sender>`,
#    or a later mail's `-N-`): same sender, about that time, a cover letter or patch 1 of their
#    version and size; the two are one thread and one posting (`bot.series.rewritten_ids`, rule
#    3; linux-samsung-soc, linux-wireless, alsa-devel). A reparse regroups the threads that hold
#    both already; the threads stored apart stay apart until a new ingest.
# 35: a later run that sends again every number a posting holds, each patch in reply to the one
#    it replaces or to a review of it, is a posting of its own, not corrections (rule 12;
#    linux-usb, driverdev-devel).
# 36: patches of one run hanging from one missing message, or strays, that disagree on RESEND
#    and send each number once are one posting, as rule 1 lets siblings disagree (`[PATCH v5
#    1/6]` with `[RESEND PATCH v5 2/6]`..; alsa-devel).
# 37: patches of one author and key, other numbers, sent within minutes in reply to different
#    messages (reviews, missing ids) are one posting, with the cover letter of either (rule 4;
#    linux-iio, linux-samsung-soc).
# 38: the rewritten first mail of a run (34) may be a cover letter of any version where the
#    run's patches give none (`[PATCH v5 0/4]` over `[PATCH 1/4]`..; io-uring). As for 34, the
#    threads stored apart stay apart until a new ingest.
# 39: a patch sent again changed in reply to the patch of its number, under its title with a
#    remark after it (`... templates (repost)`), is a correction as under a tag (rule 9;
#    linux-fscrypt).
# 40: a lettered variant of a version (`[PATCH v3a 0/2]`) is that version's point release, not
#    v1; a tree's release in the tags (`[PATCH for v5.9]`, `[PATCH v10 rebased on v6.4]`) is
#    no version (`bot.mail.subject`; keyrings, linux-fscrypt, linux-parisc, linux-ide).
# 41: a patch sent in reply to the patch of its number that changes none of its files (`[SCST
#    PATCH 08/15]`, for another project) does not replace it (rule 9; target-devel).
# 42: a patch whose tags call it a replacement (`[PATCH v2 07/23 replacement]`, `update`)
#    replaces the patch of its number under any title, sent anywhere in the posting's thread
#    (rule 9; linux-ia64).
# 43: a numbered patch sent by `git send-email --in-reply-to=<review>` (its References the
#    review's id alone) is read as sent where the review's References lead: an addition or a
#    replacement of that posting (`bot.series.cover_shortlogs`; linux-arch).
# 44: the reply and forward words of other languages' mail clients (`回复:`, `答复：`,
#    `Antw:`, `R: [PATCH`), and `Re[2]:`, make a reply: Outlook's answer to a stable tree's
#    `FAILED:` notice, quoting the patch unquoted, was a posting (`bot.mail.subject`;
#    linux-pm, linux-usb, linux-f2fs-devel); and Greg's tree notices without
#    `X-Patchwork-Hint` (`FAILED: patch "..." failed to apply`, `patch "..." added to
#    usb-linus`), linux-next's notices (`linux-next: manual merge of the X tree with the Y
#    tree`) and KernelCI's bisection reports are no postings (`bot.mail.automated`;
#    linux-scsi, linux-usb, linux-pm, linux-arm-kernel, linux-wireless).
# 45: the header's name typed into a subject (`Subject: [PATCH 0/8] dax/kmem: ...`) is no part
#    of it: that cover letter was `other`, titled with its tags (`bot.mail.subject`; nvdimm).
# 46: a posting threaded under another of its author is a new version of it only when of a
#    higher version, or of the same one sent again (RESEND) or by a later run: a `[PATCH]` sent
#    with `[PATCH v2 0/7]` in reply to it, or a run's second unrelated `[PATCH]`, is a series
#    of its own (`bot.series.membership`; nvdimm).
# 47: a posting whose patches all say one size and whose cover letter another is of its
#    patches' size, with a note (`[PATCH v6 0/8]` over `1/6`..`6/6`: `bot.series.grouping`,
#    rule 20; linux-block, nvdimm).
# 48: Andrew Morton's -mm notices (`+ x.patch added to mm-unstable branch`, `[merged
#    mm-stable] x.patch removed from -mm tree`), the patch below, are no postings
#    (`bot.mail.automated`; nvdimm).
RULES_EDITION = 48

_table = RulesEdition.__table__
_FIRST = sa.insert(_table).from_select(
    ["id", "edition"],
    sa.select(sa.literal(1), sa.literal(RULES_EDITION)).where(~sa.exists(sa.select(_table.c.id))),
)


def record_first_mail(conn: Connection) -> None:
    """Record this lorelab's edition if the store has none: its first mail is being stored."""
    conn.execute(_FIRST)


def record_reread(conn: Connection) -> None:
    """Record this lorelab's edition: every stored message has just been read again."""
    conn.execute(sa.delete(_table))
    conn.execute(sa.insert(_table).values(id=1, edition=RULES_EDITION))


def stored_edition(engine: Engine) -> int | None:
    """The edition the oldest stored rows were made with; None while nothing is stored."""
    with engine.connect() as conn:
        return conn.execute(sa.select(_table.c.edition)).scalar()


def reparse_advice(stored: int | None) -> str | None:
    """What to do when stored mail was read by an older edition than this lorelab's, else None.
    `stored` is the store's edition (`stored_edition`)."""
    if stored is None or stored >= RULES_EDITION:
        return None
    return (f"stored mail was read by an older lorelab (rules edition {stored}; this one's is "
            f"{RULES_EDITION}): the series stored before stay as it assembled them until "
            "`lorelab ingest reparse` reads the mail again")
