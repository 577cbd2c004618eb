"""Which messages of a thread form which posting (one version of a series): a pure function.

Real lists thread series in every way: replies to a cover letter (shallow), chains of replies
(deep), no threading at all, a v2 threaded under v1, patches that arrive before their cover
letter, `git send-email` run on a folder that still holds an older revision's files. The rules:

1. A patch *continues* the message it replies to when that is its posting's cover letter or a
   sibling patch: same author (address, or display name when the author wrote from another
   address), and the same size (`N` in `i/N`) and version. A cover letter also takes patches
   that forgot `-v` (the cover's version is then the posting's) or RESEND (`[PATCH RESEND
   0/3]` with `[PATCH 1/3]`...), but never patches of a higher version, nor RESEND patches
   when it has no RESEND: a new version, or the series sent again, threaded under the old
   cover letter is new. Siblings need not agree on RESEND (an author left it off one patch),
   but a RESEND patch in reply to a sibling of a higher number without it starts anew.
2. A chain of such messages is a posting, named (its *anchor*) by the message at its top.
3. A chain whose top patch replies to a message that has not arrived yet, or to one that is
   no part of a posting (a review), hangs from it, and is named by it: the cover letter
   arriving later finds its patches, whatever the order. Postings of another version or size
   hanging from the same message are named by their first patch, and so is each further single
   patch (`[PATCH]`): two patches sent in reply to one missing message are two postings, not
   one patch sent twice. Unless their cover letter is in the thread, as rule 4 finds it: sent
   beside them, in reply to the same review (`git format-patch --no-thread --in-reply-to`, or
   a mail client sending each file), or under a Message-ID other than the one they reply to.
   Or unless the nearest message their References name that is here is their cover letter,
   sent within the hour before: Outlook's servers give each mail sent through them a
   Message-ID of their own, so Jonas Karlman's `[PATCH 02/15]`..`04/15`, sent by one `git
   send-email` run after `01/15`, replied to the id that run gave `01/15`, which no archive
   holds, and named the cover letter in References (linux-rockchip: a whole version read as
   five incomplete postings). Or unless the message they reply to is the first of their run
   under the id `git send-email` gave it, which a server rewrote (`rewritten_ids`: their
   sender's cover letter or patch 1 of their version and size, before them, dated about the
   time the id gives, the nearest to them; `ThreadIndex` put it in their thread): Chris Morgan's
   rk817 codec `[PATCH v4 2/3]` and `3/3` replied to the id of `1/3`, Jonathan Bakker's
   patches to the id of their cover letter (alsa-devel, linux-samsung-soc).
4. Numbered patches that continue nothing in the thread (*strays*: sent in reply to another
   version's cover letter or patch, or to a review) are one posting per author, version, size
   and RESEND flag, with the cover letter of that key that shares their parent or has no
   patches of its own; a RESEND cover letter also takes the strays of its key that left RESEND
   off, sent with it (linux-btrfs: `[RESEND PATCH v2 0/2]` and `[PATCH v2 1/2]`.., all in
   reply to the stale v1 letter the same run sent first). Strays, or patches hanging from one
   message (rule 3), of one run that disagree on RESEND are one posting, as siblings may (AMD's
   `[PATCH v5 1/6]` with `[RESEND PATCH v5 2/6]`.., alsa-devel). Patches of one author and
   key, other numbers, sent within minutes in reply to different messages (each to the review
   of its last version, Rishi Gupta's veml6030 v3 on linux-iio) are one posting too, with the
   cover letter of either (`_join_sittings`). A stray without a counter
   (`[PATCH]`) is a posting of its own: a fix-up sent in reply to a numbered series is not
   its patch 1. It takes only such a cover letter (`[PATCH v2 0/1]`), or the letter it replies
   to when that numbers no patches (a diffstat sent as `[PATCH v2] title`, a `[PATCHSET
   7/28]` of sub-series) and it is its one `[PATCH]` that could be its patch (its author's, of
   its version: a `[PATCH v2]` sent later in reply to v1's letter is not v1's).
5. Numbered parts sent with no threading headers at all (`git format-patch` without `--thread`;
   `ThreadIndex` puts them in one thread) are split into postings by `unthreaded`: the cover
   letter of the same author, prefix and hour takes them, and names the posting.
6. Patches numbered beyond the size of the posting they are sent into, in reply to one of its
   parts or to a review of it, by its author and of its version, extend it (`[PATCH 4/3]`, or
   `[PATCH v5 4/4]` after `v5 0/3`): additions, which apply on top (`_join_additions`). A
   patch of the posting's own numbers sent later stays a posting of its own: mm's
   `[PATCH v5 3/6] ... (fix)` is a fix-up to fold into 3/6, not its replacement, and a later
   version (`[PATCH v2 4/4]` in reply to v1's 4/4) is not v1. Unless it is sent under the
   patch's own title in reply to it (rule 9), and its tags do not call it a fix-up: Aneesh
   Kumar's `[PATCH v6 10/13 -fix]` under 10/13's title (linuxppc-dev), `fix2`, `fixup`
   continue no part not tagged so, in reply to the patch or to the cover letter (a series of
   `[PATCH fix i/N]` continues its own parts, and a cover letter of their key takes them).

7. A message with no posting tag that is no reply (`other`), to which numbered patches of its
   author reply, is their cover letter: Christoph Hellwig's are written so (`bdi cleanups v3`,
   over `[PATCH 01/14]`...), as are some `[RFC]`s. The version is its subject's, else a `vN`
   ending it (`... v3 (resend)` is a RESEND; the title goes without it), else its patches'
   (their point release too: `... (v2.99)` over `[PATCHv2.99 01/11]`).
   b4 reads no cover letter there.
8. A numbered patch without a diff takes no place in its posting: b4 leaves its number missing,
   and `git am` stops at it as at a patch that does not apply. When numbered patches of its
   author and size reply to it, one at or below its own number, it is their cover letter
   numbered as a patch (`[NDCTL PATCH v7 4/4]` over 1/4..4/4, `[PATCH 1/8 v2]` over
   1/8..8/8), read as `0/N`: a patch's own replies number above it.

9. A number sent twice in one posting is the later copy (a correction), unless the two are
   different patches and the cover letter's shortlog lists one of them at that number (or,
   when several authors wrote the series, lists one and not the other): `git send-email` run
   on a folder that still holds an earlier run's files of the same size sends both, and the
   cover letter is the run's own (`bot.series.cover_shortlogs` reads it). The same patch
   (title and diff) sent twice by one `git send-email` run (its files named twice) is the
   first copy: nothing was corrected, and the reviews answer the copy that came first.
   A patch sent again changed, under its title and number, in reply to the patch it replaces
   is in its posting so, a correction (`[PATCH v5 3/6 REPLACE]`, Nhat Pham's zswap series;
   `[PATCH 01/21 - revised]`, Neil Brown's swap.h), where `... (fix)` and `-fix` are not
   (rule 6), nor the same diff sent again (`[PATCH RESEND 2/3]`), nor a patch that changes
   none of its files: Tony Battersby sent `[SCST PATCH 08/15]`, the same change for the
   out-of-tree SCST project, in reply to the kernel's `[PATCH 08/15]` (target-devel). A
   remark after the title is as a tag (Mimi Zohar's `[PATCH v9 4/7] ... templates (repost)`,
   then `(repost with fix)`, linux-fscrypt), and the shortlog names a patch so titled at its
   number. A patch whose tags call it the replacement of its number replaces it under any
   title, sent anywhere in the posting's thread, whatever the shortlog lists: Hugh Dickins'
   `[PATCH v2 07/23 replacement] mips: add pte_unmap() ...`, a new patch for 07/23, in reply
   to his answer to a review of it (linux-ia64).
10. A cover letter that says another version than the patches sent with it is theirs, read
   at their version: all of its patches (replies of its author and size) say one higher
   version, and came within minutes of it, from one `git send-email` run (`[PATCH v2 00/16]`
   over `[PATCH v3 01/16]`.., `[PATCH 0/2]` over `[PATCH v2 1/2]`.., `[PATCH v13b 00/18]`
   over `[PATCH v13 01/18]`..).
   A later version sent days after in reply to an old cover letter stays a posting of its
   own (rule 1).
11. `[PATCH]`es without a number, two or more, sent with a cover letter (replies of its
   author, within minutes of it) whose shortlog lists them are its patches, numbered at their
   places there (several authors' blocks go by name: then by the order they were sent in,
   when that keeps each block's order): the author lost the numbers (`[PATCH v3] mm/memfd:
   ...` over six `[PATCH v3]`es of two authors, or `[PATCH 0/3]` over `1/3` and two
   `[PATCH]`es), at the numbers no patch was sent with: a stale `[PATCH v2 1/1]` file
   under 5/5's title, sent by the run of `[PATCH v2 0/5]`, does not take 5/5's place
   (virtualization, "virtio: drop sizing vqs during init"). A `[PATCH]` it does not list (a
   patch to xfstests or the man pages sent beside the series) stays a posting of its own
   (rule 4).
12. Every patch of a posting sent again by a later `git send-email` run, in reply to its cover
   letter (days or months later: the author kept the cover letter's Message-ID, sent them
   with `--in-reply-to` to it, or turned an RFC into a `[PATCH]`), is a posting of its own,
   named by its first patch, not a correction of each patch, which would make a version tested
   before hold patches it was not tested with. Fewer patches sent later stay corrections
   (rule 9: `[PATCH v5 3/6 REPLACE]`), unless one carries the title of a patch the posting
   holds at another number: renumbered, a list's share of a later version (Nikita Shubin's
   ep93xx conversion on linux-pwm: June's `[PATCH v1 15/43]`, `16/43` and `37/43`, in reply
   to April's `[PATCH 00/43]`, are April's 14/43, 15/43 and 36/43 moved on by one, and took
   their places as corrections). So is a later run that sends again every number a posting
   holds, each patch in reply to the one it replaces or to a review of it, with or without a
   cover letter (the ax88179_178a fixes on linux-usb, four months on; Xin Ji's anx7625 v11
   share of driverdev-devel, two months on).
13. A cover letter sent again under the Message-ID of an earlier posting's (Jan Kara keeps his
   cover letters' ids from one version to the next: `[PATCH v4 0/29]` under v3's id) is kept as
   a copy in a thread of its own (`bot.ingest.copies`), while the patches sent with it reply to
   that id, into the earlier posting's thread. Those patches, a later run within minutes after
   the copy, of its author and size, are the copy's posting, at its version and title: all of
   them (rule 12 would name them by their first patch), or the few a list was sent (Cc'd on
   `11/29` only), which would otherwise replace the earlier posting's as corrections.
14. A cover letter without patches of its own, sent in reply to a patch of a posting that has
   none, of its author, version, size and RESEND flag, is that posting's: written after the
   patches and sent in reply to the first (io-uring, "optimise sqe-to-req flags", 19 minutes
   later), or `git send-email` given the files in another order, the cover letter among them
   and every mail in reply to the first file (linux-raid, mdadm "Write Zeroes option" v5).
15. A cover letter without patches of its own, sent in reply to a posting's cover letter that
   has no title (a subject left empty), by its author, of its size (and of its version, where
   the first said one), within two days, is that posting's cover letter in the first one's
   place: sent again to give the title and version (linux-xfs, Dave Chinner's `[PATCH 00/17
   V3] XFS: LARP state machine and recovery rework`, 13 hours after a letter with no subject
   over unversioned patches). A later version's letter whose patches went elsewhere stays
   apart when the first said its version.

16. Patches that are fix-ups of a posting's patches (`bot.series.fix_ups`: under a patch's
   number and title with `(fix)`, `(fix 2)` or `: fix` after it, or a fix-up tag, by its
   author) are that posting's fix-ups, not a posting: mm's fix-ups of v8's 3/6 and 6/6 made an
   incomplete "v8" of their own before rules edition 20.
17. Several series sent by one `git send-email` run into one posting's place, one after the
   other, each numbered 1..N in full (`[RFC PATCH v3 1/3]`..`3/3` for the kernel, then
   `[RFC PATCH makedumpfile v3 1/3]`..`3/3`, under one cover letter; LTP's `[PATCH 1/2]`,
   `2/2` of two sets after a `1/3`..`3/3`), are a posting each: the later set is no correction
   of the first (rule 9), which lost a whole series. The cover letter goes with the set
   whose tags are its own (the kernel's, not makedumpfile's), else the first; the others are
   named by their first patch. Stale files of an earlier run go by number (`1/2`, `1/2`,
   `2/2`, `2/2`), one set sent twice is the same patches, and two `1/1`s are as often a stale
   file and its new version (linux-bluetooth): all stay rule 9's.

18. Patches sent with a cover letter (one run, its author and size), each number once, some
   tagged as the letter and others with revisions of their own, are its posting, read at its
   version: Arnd Bergmann's `[PATCH 00/22]` over `[PATCH 01/22] [RESEND^2] ida: ...`,
   `[PATCH 08/22] [v2] arch: ...` and `[PATCH 10/22] microblaze: ...`; Sam Shih's `[v3,0/9]`
   over `[v3,1/9]`, `[RESEND,v2,3/9]`, `[v4,6/9]`; a point release too, Tero Kristo's
   `[PATCHv2 00/15]` over `[PATCHv2.5 01/15]`. Each tag is that patch's history within
   the series; the tags split the version into incomplete postings, none tested. Patches
   that all say one higher version are rule 10's; a later version's patches sent beside the
   letter's own, or patches of two versions and none of the letter's, stay postings of their
   own.
19. Different patches (titles and diffs) that all carry one number of a series (`i/N`, N > 1),
   sent by one run without a cover letter, and no other number with them, are a posting each:
   Allen Pais's tasklet conversions (linux-mmc), some forty patches of one run, each in reply
   to the first, among them `[PATCH 1/2] hsi: ...`, `[PATCH 1/2] mailbox: ...` and
   `[PATCH 1/2] memstick: ...`, are patches 1/2 of as many series, whose 2/2s went elsewhere;
   rule 9 kept the last and lost the others. A stale file beside its new version under one
   title, or beside other numbers, stays rule 9's.
20. A posting whose patches all say one size (`N` in `i/N`) and whose cover letter says another
   is of its patches' size, with a note: `git format-patch` wrote theirs, the author typed the
   letter's. Luis Chamberlain's `[PATCH v6 0/8]` over `1/6`..`6/6` (its shortlog lists six:
   two had gone into another series), Coly Li's `[PATCH v2 0/7]` over `1/6`..`6/6` and a
   `[PATCH]` test program (linux-block, nvdimm) were versions waiting forever for 7 and 8.

A version is read with its point release (`bot.mail.subject`): `[PATCH v4.1 9/9]`, a respin
of v4's patch 9, is version 4 but not v4's part; where these rules compare versions, v4.1 comes
after v4 and before v5, and where they key postings by version, v4.1 is a key of its own.

`series_title` names a series by its newest cover letter, not by a cover-less version's patch.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.mail.shortlog import same_title
from bot.mail.subject import point_of, says_fix_up, says_replacement, version_label
from bot.series import rewritten_ids, unthreaded
from bot.series.fix_ups import fix_ups, fixed_title
from bot.series.parts import ThreadMessage, same_author
from bot.series.undated import UNDATED_FIRST


@dataclass
class Posting:
    """One version of a series as found in a thread."""

    anchor: str
    author: str
    version: int
    expected: int
    cover: str | None = None
    patches: dict[int, str] = field(default_factory=dict)  # counter -> msgid
    resend: bool = False
    title: str = ""
    date: dt.datetime | None = None
    notes: list[str] = field(default_factory=list)
    without_diff: list[str] = field(default_factory=list)  # patches that take no number (rule 8)
    # the subject's other tags, as the cover letter (else patch 1) was read: a point release's
    # `v2.99` there even when only the patches wrote it (rule 7)
    prefixes: tuple[str, ...] = ()
    # its cover letter's shortlog, which would tell which of two patches sent under one number
    # is meant (rule 9) or number patches sent without (rule 11), was not read:
    # `bot.series.cover_shortlogs` reads it
    needs_shortlog: bool = False
    fix_ups: dict[str, int] = field(default_factory=dict)  # msgid -> the number it fixes

    @property
    def complete(self) -> bool:
        return all(i in self.patches for i in range(1, self.expected + 1))

    @property
    def members(self) -> list[str]:
        return ([self.cover] if self.cover else []) + [
            self.patches[i] for i in sorted(self.patches)
        ]


def _continues(patch: ThreadMessage, parent: ThreadMessage) -> bool:
    """Whether `patch` belongs to the posting of `parent`, the message it replies to (rule 1)."""
    if not parent.is_posting_part or not same_author(patch, parent):
        return False
    if says_fix_up(patch.prefixes) and not says_fix_up(parent.prefixes):
        return False  # rule 6: a fix-up to fold into its patch, which a test applies on top
    if parent.kind == "cover":
        # A patch that forgot RESEND continues a RESEND cover letter (many put it there only);
        # RESEND patches in reply to a cover letter without it are the series sent again.
        if patch.resend and not parent.resend:
            return False
        if patch.version_explicit and patch.release > parent.release:
            return False
        if parent.counter == 0:  # [PATCH 0/N]
            return patch.total == parent.total
        return patch.total > 1  # a cover letter known by its diffstat takes numbered patches
    # RESEND left off one sibling does not part the posting: the later patches of a deep
    # chain reply to that one. A RESEND patch numbered before the one it replies to starts
    # the series again.
    if patch.resend and not parent.resend and patch.counter < parent.counter:
        return False
    if patch.counter == parent.counter:
        # rule 9: sent again changed, under its title, in reply to the patch it replaces (the
        # same diff sent again, a RESEND of one patch, changes nothing a test applies)
        return (parent.total == patch.total > 1 and parent.release == patch.release
                and _titled(patch, parent.title)
                and patch.fingerprint is not None and parent.fingerprint is not None
                and patch.fingerprint != parent.fingerprint
                # a patch for another project sent beside it (`[SCST PATCH 08/15]`) changes
                # none of its files
                and (patch.paths is None or parent.paths is None
                     or not patch.paths.isdisjoint(parent.paths)))
    return (
        parent.total == patch.total > 1
        and parent.counter != patch.counter
        # a patch that forgot `-v` continues its sibling, as it does a cover letter
        and (parent.release == patch.release or not patch.version_explicit)
    )


def sent_again_in_reply(messages: Iterable[ThreadMessage]) -> set[str]:
    """The msgids of the patches sent in reply to a patch of their own number and size, and
    of the patches they reply to: whether one replaces the other (rule 9) depends on the files
    both change (`ThreadMessage.paths`), which only these need."""
    by_id = {m.msgid: m for m in messages if m.kind == "patch"}
    found: set[str] = set()
    for msg in by_id.values():
        parent = by_id.get(msg.hook) if msg.hook else None
        if parent is not None and (parent.counter, parent.total) == (msg.counter, msg.total):
            found.update((msg.msgid, parent.msgid))
    return found


# A remark after a patch's title, as its tags would carry it: `... templates (repost)`.
_TITLE_REMARK = re.compile(r"\s*(?:\([^()]*\)|\[[^\[\]]*\])\s*$")


def _titled(patch: ThreadMessage, title: str) -> bool:
    """Whether `patch` is sent under `title` (rule 9): the same, or with a remark after it
    that a tag would carry (Mimi Zohar's `[PATCH v9 4/7] ... templates (repost)`, linux-fscrypt),
    unless the remark calls it a fix-up (`(fix)`, rule 6)."""
    if same_title(title, patch.title):
        return True
    bare = _TITLE_REMARK.sub("", patch.title)
    return bare != patch.title and fixed_title(patch) is None and same_title(title, bare)


def _by_date(msg: ThreadMessage) -> tuple[dt.datetime, int, str]:
    return (msg.date or UNDATED_FIRST, msg.counter, msg.msgid)


def group_postings(
    messages: Iterable[ThreadMessage],
    resent_covers: Mapping[str, Sequence[ThreadMessage]] | None = None,
) -> list[Posting]:
    """Postings found among `messages` (usually one thread), in order of their dates.
    `resent_covers`: copies of the thread's cover letters, sent under their Message-IDs and
    kept elsewhere (in threads of their own), by the id they claim (rule 13)."""
    messages = list(messages)
    if len(messages) == 1 and messages[0].kind == "patch" and not resent_covers:
        # A thread's one part, a patch (most threads of a list of one-patch series): the
        # posting the rules below would find, named as rule 3 or rule 2 names it, without
        # their passes (`test_a_lone_patch_is_grouped_as_in_a_thread_of_more`).
        lone = messages[0]
        return [_posting(lone.hook or lone.msgid, [lone], {lone.msgid: lone})]
    copies = [c for found in (resent_covers or {}).values() for c in found]
    by_id = _with_covers({m.msgid: m for m in [*messages, *copies]})
    misnumbered, own_revisions = _misnumbered(by_id)  # rules 10 and 18
    said = {msgid: by_id[msgid] for msgid in misnumbered}
    told = {msgid: by_id[msgid] for msgid in own_revisions}
    by_id.update(misnumbered)
    by_id.update(own_revisions)
    unnumbered, unread = _unnumbered(by_id)  # rule 11
    by_id.update(unnumbered)
    parts = sorted((m for m in by_id.values() if m.is_posting_part), key=_by_date)
    chains = _chains(parts, by_id)
    # Each chain: cover letters and root patches name their own posting (rule 2).
    groups: dict[str, list[ThreadMessage]] = {}
    hanging: dict[str, list[list[ThreadMessage]]] = {}
    strays: list[list[ThreadMessage]] = []
    unthreaded_chains: list[list[ThreadMessage]] = []
    for top, chain in chains.items():
        head = by_id[top]
        hook = head.hook
        if unthreaded.is_unthreaded_part(head):
            # headed by the part (an undated reply sorts before it)
            unthreaded_chains.append([head, *(m for m in chain if m is not head)])
        elif head.kind == "cover" or hook is None:
            groups[top] = chain
        elif hook not in by_id:
            kin_groups = hanging.setdefault(hook, [])
            if head.total > 1:
                _add_to_kin(kin_groups, chain)
            else:
                kin_groups.append(chain)
        elif head.total > 1:
            _add_to_kin(strays, chain)
        else:
            strays.append(chain)
    for group in unthreaded.split_postings(unthreaded_chains):  # rule 5
        cover = _cover_of(group)
        groups[(cover or _first_patch(group)).msgid] = sorted(group, key=_by_date)
    orphans = {a for a, g in groups.items() if len(g) == 1 and g[0].kind == "cover"}

    def joined_cover(group: list[ThreadMessage]) -> bool:
        cover = _cover_for(group, [by_id[a] for a in sorted(orphans)], parts)
        if cover is None or cover.msgid not in groups:
            return False
        orphans.discard(cover.msgid)
        groups[cover.msgid] = groups[cover.msgid] + group
        return True

    for hook, kin_groups in hanging.items():
        # Rule 3; other kinds of postings hanging from the same message are named by their first
        # patch, so that a v1 and a v2 sent in reply to one missing cover letter stay apart.
        kin_groups.sort(key=lambda g: _by_date(g[0]))
        named = hook
        for group in kin_groups:
            if not joined_cover(group):
                groups[named or _first_patch(group).msgid] = group
                named = None
    for group in strays:  # rule 4
        if not joined_cover(group):
            groups[_first_patch(group).msgid] = group
    _join_sittings(groups)  # rule 4, across parents
    bundled = _bundled(groups)  # rule 17
    bundled.update(_one_number_sent(groups))  # rule 19
    _join_additions(groups, by_id)
    late = _late_covers(groups, by_id)  # rule 14
    retitled = _retitled_covers(groups, by_id)  # rule 15
    again = _sent_again(groups, resent_covers or {})  # rules 12 and 13
    again.update(_resent_runs(groups))  # rule 12, patch by patch
    fixes = fix_ups(groups)  # rule 16
    fixing = {msgid for found in fixes.values() for msgid in found}
    groups = {a: g for a, g in groups.items() if g[0].msgid not in fixing}
    postings = [_posting(anchor, group, by_id) for anchor, group in groups.items()]
    for posting in postings:
        posting.fix_ups = fixes.get(posting.anchor, {})
        if (note := again.get(posting.anchor) or bundled.get(posting.anchor)) is not None:
            posting.notes.append(note)
        if posting.cover in late:
            posting.notes.append(f"its cover letter was sent in reply to its patch "
                                 f"{late[posting.cover]}, not the patches in reply to it")
        if posting.cover in retitled:
            posting.notes.append(f"its cover letter was sent again with a title, in reply to "
                                 f"the first, which had none: {retitled[posting.cover]}")
        if (letter := said.get(posting.cover or "")) is not None:
            says = f"says v{letter.version}" if letter.version_explicit else "gives no version"
            posting.notes.append(f"the cover letter {says}, the patches sent with it "
                                 f"v{posting.version}: read as v{posting.version}")
        if tagged := [f"{i}/{posting.expected} ({_revision_tags(told[m])})"
                      for i, m in sorted(posting.patches.items()) if m in told]:
            posting.notes.append("patches sent with the cover letter tag their own revisions: "
                                 f"{', '.join(tagged)}; read as v{posting.version}")
        posting.needs_shortlog |= posting.cover in unread
        posting.notes += [f"patch {i}/{posting.expected} was sent without a number; numbered as "
                          f"the cover letter lists it: {msgid}"
                          for i, msgid in sorted(posting.patches.items()) if msgid in unnumbered]
    return sorted(postings, key=lambda p: (p.date is None, p.date, p.anchor))


_ENDING_VERSION = re.compile(r"\s+v(\d{1,4})(\s*\(resend\))?$", re.I)  # "... v3 (resend)"


def _with_covers(by_id: dict[str, ThreadMessage]) -> dict[str, ThreadMessage]:
    """The cover letters and patches of `by_id`, with the cover letters that were not sent as
    such read as what they are: each `other` message that numbered patches of its author reply
    to (rule 7), each patch without a diff over patches of its posting (rule 8). Other messages
    are left out: what replies to one (a fix to a bug report) hangs from it as from a message not
    in the thread (rule 3), named by it."""
    first_patch: dict[str, ThreadMessage] = {}  # of each untagged cover letter, the earliest
    covers: dict[str, ThreadMessage] = {}
    for msg in by_id.values():
        parent = by_id.get(msg.hook) if msg.hook else None
        if msg.kind != "patch" or msg.total < 2 or parent is None or not same_author(parent, msg):
            continue
        if parent.kind == "other" and parent.hook is None:
            known = first_patch.get(parent.msgid)
            if known is None or _by_date(msg) < _by_date(known):
                first_patch[parent.msgid] = msg
        elif parent.kind == "patch" and not parent.has_diff and msg.counter <= parent.counter:
            as_cover = dataclasses.replace(parent, kind="cover", counter=0)
            if _continues(msg, as_cover):
                covers[parent.msgid] = as_cover
    covers.update((msgid, _as_cover(by_id[msgid], patch)) for msgid, patch in first_patch.items())
    return {m.msgid: covers.get(m.msgid, m) for m in by_id.values()
            if m.is_posting_part or m.msgid in covers}


def _as_cover(msg: ThreadMessage, patch: ThreadMessage) -> ThreadMessage:
    """`msg` read as the cover letter of `patch`'s posting: its version the one its subject
    gives, or a `vN` ending it, else the patch's (`fixed commit message` over `[PATCH v4 1/2]`)."""
    if msg.version_explicit:
        return dataclasses.replace(msg, kind="cover")
    ending = _ENDING_VERSION.search(msg.title)
    if ending is None:  # the patch's release, point and all: `(v2.99)` over `[PATCHv2.99 1/11]`
        return _at_release(msg, patch)
    return dataclasses.replace(msg, kind="cover", version=int(ending[1]), version_explicit=True,
                               title=msg.title[: ending.start()],
                               resend=msg.resend or bool(ending[2]))


def _at_release(msg: ThreadMessage, patch: ThreadMessage) -> ThreadMessage:
    """`msg` as a cover letter of `patch`'s release, point and all."""
    return dataclasses.replace(_read_at(msg, patch), kind="cover")


def _read_at(msg: ThreadMessage, other: ThreadMessage) -> ThreadMessage:
    """`msg` read at `other`'s release, point and all: its own point tag (`v2.5`) goes."""
    own = tuple(tag for tag in msg.prefixes if not point_of(msg.version, (tag,)))
    point = tuple(tag for tag in other.prefixes if point_of(other.version, (tag,)))
    return dataclasses.replace(msg, version=other.version,
                               version_explicit=other.version_explicit, prefixes=(*own, *point))


def _revision_tags(patch: ThreadMessage) -> str:
    """What a patch's subject says of its revision: "v2.5", "RESEND v3", "no version"."""
    said = [version_label(patch.version, patch.prefixes)] if patch.version_explicit else []
    return " ".join(["RESEND", *said] if patch.resend else said) or "no version"


_ONE_SEND = dt.timedelta(minutes=10)  # git send-email sends a part a second, from one Date


def sent_together(first: dt.datetime | None, second: dt.datetime | None) -> bool:
    """Whether mails of these dates may be of one `git send-email` run: within minutes."""
    return first is not None and second is not None and abs(second - first) <= _ONE_SEND


def _misnumbered(by_id: dict[str, ThreadMessage]
                 ) -> tuple[dict[str, ThreadMessage], dict[str, ThreadMessage]]:
    """The cover letters that say another version than the patches sent with them (rule 10),
    each read at its patches' release: msgid -> the letter as read; and the patches that tag
    their own revisions under a cover letter (rule 18), each read at the letter's release and
    RESEND flag: msgid -> the patch as read."""
    replies: dict[str, list[ThreadMessage]] = {}
    for msg in by_id.values():
        cover = by_id.get(msg.hook) if msg.hook else None
        if (msg.kind == "patch" and cover is not None and cover.kind == "cover"
                and cover.counter == 0 and same_author(msg, cover)
                and msg.total == cover.total):
            replies.setdefault(cover.msgid, []).append(msg)
    covers: dict[str, ThreadMessage] = {}
    patches_read: dict[str, ThreadMessage] = {}
    for msgid, patches in replies.items():
        cover = by_id[msgid]
        sent = [p for p in patches if _one_send(cover, p)]  # the others came later
        releases = {p.release for p in patches}
        if (len(releases) == 1 and all(p.version_explicit for p in patches)
                and patches[0].release > cover.release and len(sent) == len(patches)):
            covers[msgid] = _at_release(cover, patches[0])
        elif (sorted(p.counter for p in sent) == list(range(1, cover.total + 1))
              and (cover.release, cover.resend) in (tags := {(p.release, p.resend) for p in sent})
              and len(tags) > 1):
            patches_read.update(
                (p.msgid, dataclasses.replace(_read_at(p, cover), resend=cover.resend))
                for p in sent if (p.release, p.resend) != (cover.release, cover.resend))
    return covers, patches_read


def _unnumbered(by_id: dict[str, ThreadMessage]) -> tuple[dict[str, ThreadMessage], set[str]]:
    """The `[PATCH]`es without a number that a cover letter's shortlog lists (rule 11), each
    numbered at its place there: msgid -> the patch as read; and the letters over two or more
    such patches whose shortlogs were not read (`bot.series.cover_shortlogs` reads them)."""
    sent_with: dict[str, list[ThreadMessage]] = {}
    for msg in by_id.values():
        cover = by_id.get(msg.hook) if msg.hook else None
        if (msg.kind == "patch" and msg.total == 1 and cover is not None
                and cover.kind == "cover" and (cover.counter != 0 or cover.total > 1)
                and same_author(msg, cover) and _one_send(cover, msg)
                and (msg.release == cover.release or not msg.version_explicit)):
            sent_with.setdefault(cover.msgid, []).append(msg)
    numbered: dict[str, ThreadMessage] = {}
    unread: set[str] = set()
    for msgid, patches in sent_with.items():
        cover = by_id[msgid]
        if len(patches) < 2:
            continue  # one: a fix-up, or the diffstat letter's one patch (rule 4)
        if not cover.shortlog:
            unread.add(msgid)
            continue
        size = sum(len(block) for block in cover.shortlog)
        if cover.counter == 0 and cover.total != size:
            continue
        # A number a patch was sent with is its own: a stale `[PATCH v2 1/1]` file sent with
        # `0/5` under 5/5's title does not take 5/5's place.
        held = {m.counter for m in by_id.values()
                if m.kind == "patch" and m.hook == msgid and m.total == size > 1
                and same_author(m, cover)}
        for patch, place in _places(patches, cover.shortlog):
            if place not in held:
                numbered[patch.msgid] = dataclasses.replace(patch, counter=place, total=size)
    return numbered, unread


def _places(patches: list[ThreadMessage], shortlog: tuple[tuple[str, ...], ...]
            ) -> list[tuple[ThreadMessage, int]]:
    """The numbers a shortlog gives unnumbered patches: their places, when one author wrote
    them all; else, the blocks going by author name, their order of sending, when they are all
    the patches it lists, sent in the order each author's block gives."""
    if len(shortlog) == 1:
        places = ((p, _place(p, shortlog[0])) for p in patches)
        return [(p, i + 1) for p, i in places if i >= 0]
    sent = sorted(patches, key=_by_date)
    listed = [t for block in shortlog for t in block]
    found = [_place(p, listed) for p in sent]
    if len(sent) != len(listed) or sorted(found) != list(range(len(listed))):
        return []
    starts = [sum(len(b) for b in shortlog[:k]) for k in range(len(shortlog))]
    for start, block in zip(starts, shortlog, strict=True):
        order = [found.index(i) for i in range(start, start + len(block))]
        if order != sorted(order):
            return []
    return [(p, i) for i, p in enumerate(sent, 1)]


def _place(patch: ThreadMessage, titles: Sequence[str]) -> int:
    """Where `titles` lists the patch's title (0-based), or -1."""
    return next((i for i, t in enumerate(titles) if same_title(patch.title, t)), -1)


def _one_send(cover: ThreadMessage, patch: ThreadMessage) -> bool:
    return sent_together(cover.date, patch.date)


def _chains(parts: list[ThreadMessage], by_id: dict[str, ThreadMessage]) -> dict[str, list]:
    """The messages of each chain of rule 1, by the msgid at its top, in order of date."""
    up: dict[str, str] = {}
    for msg in parts:
        hook = msg.hook
        parent = by_id.get(hook) if hook else None
        if parent is None and hook is not None and msg.kind == "patch":  # rule 3
            parent = _cover_above(msg, by_id) or rewritten_ids.first_mail(
                hook, msg, by_id.values())
        if msg.kind != "patch" or parent is None or not _continues(msg, parent):
            continue
        # A reference loop (malformed mail) would make a chain without a top: refuse the link.
        step: str | None = parent.msgid
        while step is not None and step != msg.msgid:
            step = up.get(step)
        if step is None:
            up[msg.msgid] = parent.msgid
    chains: dict[str, list[ThreadMessage]] = {}
    for msg in parts:
        top = msg.msgid
        while top in up:
            top = up[top]
        chains.setdefault(top, []).append(msg)
    return chains


def _cover_above(msg: ThreadMessage, by_id: dict[str, ThreadMessage]) -> ThreadMessage | None:
    """The cover letter a patch names further up its References when the mail it replies to
    is missing and the nearest one it names that is here is that letter, sent within the hour
    before it (rule 3)."""
    for ref in msg.parents()[1:]:
        found = by_id.get(ref)
        if found is None:
            continue
        if (found.kind == "cover" and found.counter == 0 and found.date is not None
                and msg.date is not None
                and found.date <= msg.date <= found.date + unthreaded.WINDOW):
            return found
        return None
    return None


def _add_to_kin(kin_groups: list[list[ThreadMessage]], chain: list[ThreadMessage]) -> None:
    """Put `chain` with the group of the same author and key, or start a group. RESEND left off
    some patches of one run does not part them (rule 1): other numbers, sent within minutes."""
    head = chain[0]
    for group in kin_groups:
        if not same_author(group[0], head):
            continue
        if group[0].key == head.key or (
            group[0].key[:-1] == head.key[:-1] and any(_one_send(m, head) for m in group)
            and not {m.counter for m in group} & {m.counter for m in chain}
        ):
            group.extend(chain)
            group.sort(key=_by_date)
            return
    kin_groups.append(list(chain))


def _join_sittings(groups: dict[str, list[ThreadMessage]]) -> None:
    """Rule 4 across parents: patches of one author and key sent within minutes of each other,
    each number once, in reply to different reviews or missing messages, are one posting
    (Rishi Gupta's veml6030 v3, linux-iio: each patch by a run of its own in reply to the
    review of its v2; Jonathan Bakker's 3/7..7/7 in reply to the id of 2/7's run, which Outlook
    rewrote, a second after 2/7 in reply to 1/7). A group with a cover letter takes such a
    group without one; two with cover letters stay apart."""
    by_key: dict[tuple[int, int, int, bool], list[str]] = defaultdict(list)
    for anchor, group in groups.items():
        keys = {m.key for m in group if m.kind == "patch"}
        if len(keys) == 1:
            by_key[keys.pop()].append(anchor)
    for anchors in by_key.values():
        anchors.sort(key=lambda a: (_cover_of(groups[a]) is None, _by_date(groups[a][0])))
        while len(anchors) > 1:
            pair = next(((a, b) for i, a in enumerate(anchors) for b in anchors[i + 1:]
                         if _one_sitting(groups[a], groups[b])), None)
            if pair is None:
                break
            keep, gone = pair  # the one with a cover letter, else the earlier
            groups[keep] = sorted([*groups[keep], *groups.pop(gone)], key=_by_date)
            anchors.remove(gone)


def _cover_of(group: list[ThreadMessage]) -> ThreadMessage | None:
    """The group's cover letter `[PATCH 0/N]`, if it has one."""
    return next((m for m in group if m.kind == "cover" and m.counter == 0), None)


def _one_sitting(first: list[ThreadMessage], second: list[ThreadMessage]) -> bool:
    """Whether two groups of one key (`_join_sittings`) are one author's patches of other
    numbers, some sent within minutes of the other's, not both with a cover letter."""
    if _cover_of(first) is not None and _cover_of(second) is not None:
        return False
    ones = [m for m in first if m.kind == "patch"]
    twos = [m for m in second if m.kind == "patch"]
    if not same_author(ones[0], twos[0]) or {m.counter for m in ones} & {m.counter for m in twos}:
        return False
    return any(_one_send(x, y) for x in ones for y in twos)


def _first_patch(group: list[ThreadMessage]) -> ThreadMessage:
    return min(group, key=lambda m: (m.counter, *_by_date(m)))


def _cover_for(
    group: list[ThreadMessage], orphans: list[ThreadMessage], parts: list[ThreadMessage]
) -> ThreadMessage | None:
    """The cover letter of stray patches (rule 4): of their key, a sibling or one without
    patches; failing that, an orphan they reply to whose count was wrong. A single patch takes
    that orphan only when it numbers no patches (`[PATCH v2]` over its diffstat, or a
    `[PATCHSET 7/28]` of sub-series) and no other single patch replies to it: of the `[PATCH]`es
    replying to a `0/9`, or to one diffstat, none is its patch 1."""
    head = group[0]
    hooks = {m.hook for m in group}
    kin = [
        c
        for c in parts
        if c.kind == "cover" and c.counter == 0 and same_author(c, head)
        and (c.key == head.key or _forgot_resend(group, c))
    ]
    for cover in kin:
        if cover.hook in hooks or cover in orphans:
            return cover
    for cover in orphans:
        if (
            cover.msgid in hooks
            and same_author(cover, head)
            and cover.resend == head.resend
            and (not head.version_explicit or head.release == cover.release)
            and (head.total > 1 or _only_single_patch(head, cover, parts))
        ):
            return cover
    return None


def _forgot_resend(group: list[ThreadMessage], cover: ThreadMessage) -> bool:
    """Whether `group` is a RESEND cover letter's patches that left RESEND off, sent with it
    by one `git send-email` run (rule 4, as rule 1 reads a RESEND cover letter's replies)."""
    head = group[0]
    return (cover.resend and not head.resend and cover.key[:3] == head.key[:3]
            and all(_one_send(cover, m) for m in group))


def _only_single_patch(
    patch: ThreadMessage, cover: ThreadMessage, parts: list[ThreadMessage]
) -> bool:
    """Whether `patch` is the one single patch replying to `cover`, which numbers none, of
    those that could be (its author's, of its version or none given: a `[PATCH v2]` sent in
    reply to v1's letter, or a reviewer's fix-up, is not v1's patch)."""
    return cover.counter != 0 and not any(
        m.hook == cover.msgid and m.total == 1 and m.kind == "patch" and m is not patch
        and same_author(m, cover) and m.resend == cover.resend
        and (not m.version_explicit or m.release == cover.release)
        for m in parts)


def _join_additions(
    groups: dict[str, list[ThreadMessage]], by_id: dict[str, ThreadMessage]
) -> None:
    """Rule 6: a group of patches only, each an addition to the posting its first patch was
    sent into (the nearest ancestor that is a part of another group, through reviews by
    References): same author, RESEND flag and version (or none given), numbered beyond the
    posting's size; or each the replacement its tags say it is of the posting's patch of its
    number (rule 9). The group joins that posting."""
    member_of = {m.msgid: anchor for anchor, group in groups.items() for m in group}
    firsts = {anchor: min(group, key=_by_date) for anchor, group in groups.items()}
    for anchor in sorted(firsts, key=lambda a: _by_date(firsts[a])):
        group = groups[anchor]
        into = next((p for p in firsts[anchor].parents() if member_of.get(p, anchor) != anchor),
                    None)  # fmt: skip
        if into is None or not all(_adds_to(m, by_id[into]) or _replaces(m, by_id[into])
                                   for m in group):
            continue
        target = member_of[into]
        groups[target] = sorted(groups[target] + group, key=_by_date)
        del groups[anchor]
        member_of.update((m.msgid, target) for m in group)


def _sent_again(groups: dict[str, list[ThreadMessage]],
                resent: Mapping[str, Sequence[ThreadMessage]]) -> dict[str, str]:
    """Rules 12 and 13: each later `git send-email` run of patches in reply to a posting's
    cover letter is a posting of its own when it sends every number (named by its first
    patch), or when a copy of the cover letter, sent under its Message-ID (`resent`, by the id
    they claim), came with it (named by that copy, its cover letter). The note for each new
    group, by its name."""
    notes: dict[str, str] = {}
    for anchor, group in list(groups.items()):
        cover = _cover_of(group)
        if cover is None:
            continue
        letters = sorted((c for c in resent.get(cover.msgid, ()) if c.kind == "cover"
                          and c.counter == 0 and c.total == cover.total and c.date is not None
                          and same_author(c, cover)), key=_by_date)
        numbers = set(range(1, cover.total + 1))
        runs = _runs(group)
        whole = [run for run in runs if numbers <= {m.counter for m in run}]
        for run in runs:
            if _one_send(cover, run[0]):  # its own run, or the same run again (rule 9)
                continue
            letter = next((c for c in reversed(letters) if _one_send(c, run[0])
                           and c.date <= run[0].date), None)  # type: ignore[operator]
            if letter is not None:  # rule 13
                groups[anchor] = [m for m in groups[anchor] if m not in run]
                groups[letter.msgid] = [*groups.get(letter.msgid, [letter]), *run]
                notes[letter.msgid] = (
                    f"its cover letter was sent again under the Message-ID of an earlier "
                    f"posting's, {cover.msgid}, in a thread of its own; the patches sent with "
                    "it, in reply to that id, are its own")
            elif whole and run in whole[1:]:  # rule 12
                groups[anchor] = [m for m in groups[anchor] if m not in run]
                groups[run[0].msgid] = run
                notes[run[0].msgid] = (
                    f"all its patches were sent again, in reply to the cover letter "
                    f"{cover.msgid} of an earlier posting: a posting of its own")
            elif moved := _renumbered(run, group):  # rule 12, a list's share of the run
                groups[anchor] = [m for m in groups[anchor] if m not in run]
                groups[run[0].msgid] = run
                notes[run[0].msgid] = (
                    f"sent later in reply to the cover letter {cover.msgid} of an earlier "
                    f"posting, renumbered ({moved}): a posting of its own")
    return notes


def _runs(group: list[ThreadMessage]) -> list[list[ThreadMessage]]:
    """The group's patches by run, in order of date: each sent within minutes of the last."""
    runs: list[list[ThreadMessage]] = []
    for msg in sorted((m for m in group if m.kind == "patch"), key=_by_date):
        if runs and _one_send(runs[-1][-1], msg):
            runs[-1].append(msg)
        else:
            runs.append([msg])
    return runs


def _resent_runs(groups: dict[str, list[ThreadMessage]]) -> dict[str, str]:
    """Rule 12, patch by patch: a later run that sends again every number a group holds, its
    patches in reply to those they replace or to reviews of them (there they are groups of
    their own, sent within minutes of the rest), is a group of its own, not corrections. The
    note for each new group, by its name."""
    notes: dict[str, str] = {}
    for anchor in list(groups):
        group = groups.get(anchor)
        if group is None:  # taken into a run already
            continue
        start = min(group, key=_by_date)
        for run in _runs(group)[1:]:
            if _one_send(start, run[0]):
                continue
            others = [a for a, g in groups.items() if a != anchor and _of_run(g, run)]
            sent = [*run, *(m for a in others for m in groups[a])]
            held = {m.counter for m in groups[anchor] if m.kind == "patch" and m not in run}
            if len(held) < 2 or not held <= {m.counter for m in sent}:
                continue
            groups[anchor] = [m for m in groups[anchor] if m not in run]
            for other in others:
                del groups[other]
            named = _first_patch(sent).msgid
            groups[named] = sorted(sent, key=_by_date)
            notes[named] = (f"every patch of the posting {anchor} was sent again by a later "
                            "run: a posting of its own")
    return notes


def _of_run(group: list[ThreadMessage], run: list[ThreadMessage]) -> bool:
    """Whether a group is patches of `run`'s author and key, sent within minutes of it."""
    return bool(group) and all(
        m.kind == "patch" and m.key == run[0].key and same_author(m, run[0])
        and any(_one_send(m, r) for r in run) for m in group
    )


def _renumbered(run: list[ThreadMessage], group: list[ThreadMessage]) -> str:
    """How a later run's patches carry titles that other patches of the group carry at other
    numbers ("16/43 is 15/43"), or "" when none does: a correction keeps its number."""
    numbers = {tuple(m.title.split()): m.counter for m in group
               if m.kind == "patch" and m not in run}
    return ", ".join(f"{m.counter}/{m.total} is {numbers[key]}/{m.total}" for m in run
                     if numbers.get(key := tuple(m.title.split()), m.counter) != m.counter)


def _bundled(groups: dict[str, list[ThreadMessage]]) -> dict[str, str]:
    """Rule 17: the series one run sent into a group, one after the other, each a group of its
    own; the cover letter stays with the set of its tags. The note for each new group, by its
    name."""
    notes: dict[str, str] = {}
    for anchor, group in list(groups.items()):
        patches = [m for m in group if m.kind == "patch"]
        if len({m.counter for m in patches}) == len(patches):
            continue  # no number sent twice: most groups, not sorted again
        sets = _one_run_sets(sorted(patches, key=_by_date))
        if sets is None:
            continue
        letters = [m for m in group if m.kind != "patch"]
        home = next((s for s in sets for c in letters if s[0].prefixes == c.prefixes), sets[0])
        groups[anchor] = sorted([*letters, *home], key=_by_date)
        for other in sets:
            if other is not home:
                groups[other[0].msgid] = other
                notes[other[0].msgid] = (
                    f"sent by one run with {len(sets) - 1} other series numbered "
                    f"1/{other[0].total}..{other[0].total}/{other[0].total} in the same "
                    f"place ({anchor}): a posting of its own")
    return notes


def _one_number_sent(groups: dict[str, list[ThreadMessage]]) -> dict[str, str]:
    """Rule 19: the patches of a group without a cover letter that all carry one number of a
    series, sent by one run as different patches, each a group of its own. The note for each
    new group, by its name."""
    notes: dict[str, str] = {}
    for anchor, group in list(groups.items()):
        if (len(group) < 2 or group[0].total < 2
                or any(m.kind != "patch" or m.counter != group[0].counter for m in group)):
            continue  # most groups: not sorted again on every batch
        group = sorted(group, key=_by_date)
        first = group[0]
        if not all(_one_send(first, m) for m in group):
            continue
        titles = {tuple(m.title.split()) for m in group}
        diffs = {m.fingerprint for m in group}
        if len(titles) < len(group) or None in diffs or len(diffs) < len(group):
            continue  # the same patch sent again, or a stale file under its title: rule 9's
        kept = next((m for m in group if m.msgid == anchor), first)  # the group's name stays
        groups[anchor] = [kept]
        for other in group:
            if other is not kept:
                groups[other.msgid] = [other]
                notes[other.msgid] = (
                    f"one of {len(group)} different patches numbered "
                    f"{first.counter}/{first.total} that one run sent without a cover letter "
                    f"(beside {kept.msgid}): a posting of its own")
    return notes


def _one_run_sets(patches: list[ThreadMessage]) -> list[list[ThreadMessage]] | None:
    """`patches` (in date order) as the different series one run sent one after the other,
    each numbered 1..N in full; None unless there are several."""
    sets: list[list[ThreadMessage]] = []
    for msg in patches:
        if not sets or not _one_send(sets[-1][-1], msg):
            if sets:
                return None  # another run: rule 12's
            sets.append([msg])
        elif msg.counter > sets[-1][-1].counter:
            sets[-1].append(msg)
        else:
            sets.append([msg])
    # single patches are left to rule 9: `[PATCH 1/1]` and `[PATCH v2 1/1]` are a stale file
    # and its new version as often as two sets
    whole = all(s[0].total > 1 and [m.counter for m in s] == list(range(1, s[0].total + 1))
                for s in sets)
    if len(sets) < 2 or not whole:
        return None
    sent = {tuple((m.title, m.fingerprint) for m in s) for s in sets}
    return sets if len(sent) == len(sets) else None


def _lone_letters(groups: dict[str, list[ThreadMessage]]
                  ) -> list[tuple[str, ThreadMessage, str]]:
    """Each cover letter that is a group of its own (no patches) sent in reply to a part of
    another group: (its group's anchor, the letter, the anchor of the group it replies into)."""
    lone = [(anchor, group[0]) for anchor, group in groups.items()
            if len(group) == 1 and group[0].kind == "cover" and group[0].counter == 0]
    if not lone:  # most threads: no index of members to build
        return []
    member_of = {m.msgid: anchor for anchor, group in groups.items() for m in group}
    return [(anchor, letter, target) for anchor, letter in lone
            if (target := member_of.get(letter.hook or "")) not in (None, anchor)]


def _late_covers(groups: dict[str, list[ThreadMessage]],
                 by_id: dict[str, ThreadMessage]) -> dict[str, int]:
    """Rule 14: a cover letter without patches of its own, sent in reply to a patch of a
    posting without one, of its author and key, is that posting's. The number of the patch
    each such letter replies to, by the letter's Message-ID."""
    late: dict[str, int] = {}
    for anchor, letter, target in _lone_letters(groups):
        patch = by_id.get(letter.hook or "")
        posting = groups.get(target)
        if patch is None or patch.kind != "patch" or posting is None:
            continue
        if any(m.kind == "cover" for m in posting) or not all(
                m.key == letter.key and same_author(m, letter) for m in posting):
            continue
        groups[target] = sorted([letter, *posting], key=_by_date)
        del groups[anchor]
        late[letter.msgid] = patch.counter
    return late


_RETITLED_WITHIN = dt.timedelta(days=2)


def _retitled_covers(groups: dict[str, list[ThreadMessage]],
                     by_id: dict[str, ThreadMessage]) -> dict[str, str]:
    """Rule 15: a cover letter without patches of its own, sent in reply to the cover letter of
    a posting that has no title, by its author, of its size, and of its version where that
    said one, within two days, is that posting's in its place. The first letter's Message-ID,
    by the new letter's."""
    retitled: dict[str, str] = {}
    for anchor, letter, target in _lone_letters(groups):
        first = by_id.get(letter.hook or "")
        posting = groups.get(target)
        if (first is None or posting is None or first.kind != "cover"
                or first.title.strip() or not same_author(first, letter)
                or any(m.total != letter.total for m in posting if m.kind == "patch")
                or (first.version_explicit and letter.release != first.release)
                or letter.date is None or first.date is None
                or letter.date - first.date > _RETITLED_WITHIN):
            continue
        groups[target] = sorted(
            [letter, *(m for m in posting if m.msgid != first.msgid)], key=_by_date)
        del groups[anchor]
        retitled[letter.msgid] = first.msgid
    return retitled


def _adds_to(msg: ThreadMessage, part: ThreadMessage) -> bool:
    """Whether `msg`, sent into the posting that holds `part`, is an addition to it."""
    return (
        msg.kind == "patch"
        and same_author(msg, part)
        and msg.resend == part.resend
        and (msg.release == part.release or not msg.version_explicit)
        and msg.counter > part.total
        # numbered beyond a single patch's posting only as such: `[PATCH 2/1]`, not `3/4`
        and (part.total > 1 or msg.total == part.total)
    )


def _replaces(msg: ThreadMessage, part: ThreadMessage) -> bool:
    """Whether `msg`, sent into the posting that holds `part`, says it replaces the posting's
    patch of its number (rule 9), whatever its title."""
    return (
        msg.kind == "patch"
        and says_replacement(msg.prefixes)
        and same_author(msg, part)
        and msg.total == part.total > 1
        and (msg.release == part.release or not msg.version_explicit)
    )


def _posting(anchor: str, group: list[ThreadMessage], by_id: dict[str, ThreadMessage]) -> Posting:
    first = group[0]
    posting = Posting(
        anchor=anchor,
        author=by_id.get(anchor, first).author,
        version=first.version,
        expected=first.total,
        resend=first.resend,
    )
    sent: dict[int, list[ThreadMessage]] = {}
    for msg in sorted(group, key=_by_date):
        if msg.kind == "cover":
            posting.cover = msg.msgid
            continue
        if not msg.has_diff:  # rule 8
            posting.without_diff.append(msg.msgid)
            posting.notes.append(f"patch {msg.counter}/{msg.total} carries no diff that git "
                                 f"can apply, so its number stays missing: {msg.msgid}")
            continue
        sent.setdefault(msg.counter, []).append(msg)
    cover = by_id.get(posting.cover) if posting.cover else None
    for counter, copies in sent.items():
        posting.patches[counter] = _meant(copies, cover, posting).msgid
    _settle(posting, by_id)
    patch_1 = posting.patches[min(posting.patches)] if posting.patches else anchor
    posting.prefixes = by_id.get(posting.cover or patch_1, first).prefixes
    return posting


def _meant(copies: list[ThreadMessage], cover: ThreadMessage | None,
           posting: Posting) -> ThreadMessage:
    """Of the patches sent under one number (in date order), the one the author meant (rule
    9): the later one when its tags call it the replacement, else the one the cover letter's
    shortlog lists there, else the later one (a correction); the first of copies of one patch
    sent by one run."""
    chosen = copies[-1]
    if len(copies) == 1:
        return chosen
    first = copies[0]
    if first.fingerprint is not None and all(
            m.fingerprint == first.fingerprint and m.title == first.title
            and _one_send(first, m) for m in copies):
        posting.notes.append(f"patch {first.counter}/{first.total} was sent twice, the same "
                             f"patch; using {first.msgid}, the first copy")
        return first
    if says_replacement(chosen.prefixes):  # over the patch the cover letter lists
        posting.notes.append(f"patch {chosen.counter}/{chosen.total} was replaced; using "
                             f"{chosen.msgid}, sent as its replacement")
        return chosen
    listed = _listed_at(cover.shortlog, chosen) if cover is not None else ()
    named = [m for m in copies if any(_titled(m, t) for t in listed)]
    if named and len(named) < len(copies):
        chosen = named[-1]
        posting.notes.append(f"patch {chosen.counter}/{chosen.total} was sent twice, as "
                             f"different patches; using {chosen.msgid}, the one the cover "
                             "letter lists")
        return chosen
    different = len({tuple(m.title.split()) for m in copies}) > 1
    if cover is not None and not cover.shortlog and different:
        posting.needs_shortlog = True
    posting.notes.append(f"patch {chosen.counter}/{chosen.total} was sent twice; using "
                         f"{chosen.msgid}")
    return chosen


def _listed_at(shortlog: tuple[tuple[str, ...], ...], patch: ThreadMessage) -> tuple[str, ...]:
    """The titles a shortlog may give patch `counter/total`: the one at its place when one
    author wrote them all, else any it lists (the blocks go by author name, not by number)."""
    if len(shortlog) == 1 and len(shortlog[0]) == patch.total and patch.counter <= patch.total:
        return (shortlog[0][patch.counter - 1],)
    return tuple(t for block in shortlog for t in block)


def _settle(posting: Posting, by_id: dict[str, ThreadMessage]) -> None:
    """Version, size and title of a posting from its cover letter and patches."""
    cover = by_id.get(posting.cover) if posting.cover else None
    patches = [by_id[m] for m in posting.patches.values()]
    explicit = {p.version for p in patches if p.version_explicit}
    if cover is not None and cover.version_explicit:
        posting.version = cover.version
        if explicit - {cover.version}:
            posting.notes.append(
                f"the cover letter says v{cover.version} but patches say "
                + ", ".join(f"v{v}" for v in sorted(explicit))
            )
    elif explicit:
        posting.version = max(explicit)
    else:
        posting.version = cover.version if cover else 1
    # a cover letter's N/M counts patches only as 0/M: `[PATCHSET 2/9]` is sub-series 2 of 9
    totals = [m.total for m in ([cover] if cover and cover.counter == 0 else []) + patches]
    sizes = {m.total for m in patches}
    if cover is not None and cover.counter == 0 and len(sizes) == 1 and cover.total not in sizes:
        # Rule 20: the count `git format-patch` wrote on every patch, not the one typed in the
        # letter: an earlier version's (`[PATCH v6 0/8]` over `1/6`..`6/6`), or one counting a
        # patch sent unnumbered beside them (a test program, rule 4).
        (size,) = sizes
        posting.notes.append(f"the cover letter counts {cover.total} patches, the patches {size}")
        totals = [size]
    posting.expected = max(totals + [max(posting.patches, default=1)])
    # a cover letter's title, unless it has none (`[PATCHv3 0/3]`, a subject left empty):
    # then patch 1's, as for a posting without one
    if cover is not None and cover.title.strip():
        posting.title = cover.title
    elif patches:
        first = by_id[posting.patches[min(posting.patches)]]
        posting.title = first.title
    dates = [m.date for m in ([cover] if cover else []) + patches if m.date]
    posting.date = min(dates) if dates else None
    if cover is not None and cover.resend:
        posting.resend = True


def series_title(versions: Iterable[tuple[int, bool, dt.datetime | None, str]]) -> str:
    """The title a series goes by, from its versions as (version, has a cover letter, date,
    title): the newest cover letter's, else the newest version's. A cover-less version (a
    single `[PATCH v2]` in reply to v1, a fix-up) is titled by its patch, not the series."""
    titled = [v for v in versions if v[3]]
    if not titled:
        return ""
    # Two versions alike but for the title (v1 and its resend, one date): the title decides.
    newest = max(titled, key=lambda v: (v[1], v[0], v[2] or UNDATED_FIRST, v[3]))
    return newest[3]
