"""Fix-ups sent for a posting's patches: which messages they are, and which patch each fixes.

mm's way with a small correction to one patch of a series under review is a fix-up, sent in the
series' thread under that patch's number and title, which Andrew Morton folds into the patch in
his tree: `[PATCH v8 3/6] zswap: make shrinking memcg-aware (fix)` and `(fix 2)` (Nhat Pham),
`[PATCH v3 10/13 fix] ...: fix` (Hugh Dickins), `[PATCH v6 10/13 -fix]` under 10/13's own
title (Aneesh Kumar). A fix-up is a diff on top of its patch, neither a replacement of it
(`bot.series.grouping`, rules 6 and 9) nor a version of the series: grouped as a posting, the
fix-ups of a version made an incomplete version of their own, a second "v8" that was never
complete and never tested. They are the version's, kept by number (`Posting.fix_ups`,
`series_versions.fix_ups`) and shown with it; lorelab's runs apply the version's patches as
sent, without them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping

from bot.mail.shortlog import same_title
from bot.mail.subject import says_fix_up
from bot.series.parts import ThreadMessage, same_author
from bot.series.undated import UNDATED_FIRST

# How a fix-up's title ends where its tags do not say so: `title (fix)`, `(fix 2)`, `: fix2`.
_FIX_UP_ENDING = re.compile(r"\s*(?:\(\s*fix(?:up)?(?:\s*\d+)?\s*\)|:\s*fix(?:up)?\s*\d*)\s*$",
                            re.I | re.A)


def fixed_title(msg: ThreadMessage) -> str | None:
    """The title of the patch `msg` says it fixes, or None when it is no fix-up: its title
    without a fix-up ending, or its title as it is under a fix-up tag."""
    stripped = _FIX_UP_ENDING.sub("", msg.title)
    if stripped != msg.title and stripped:
        return stripped
    return msg.title if says_fix_up(msg.prefixes) else None


def fix_ups(groups: Mapping[str, list[ThreadMessage]]) -> dict[str, dict[str, int]]:
    """Of a thread's groups (anchor -> parts, as `bot.series.grouping` leaves them), the ones
    made of fix-ups only, each of a patch of a group that is not: anchor of the group fixed ->
    the fix-ups' msgids -> the number each fixes. The groups whose parts are named here are no
    postings."""
    # Only groups whose every part reads as a fix-up are looked into: most threads have none,
    # and grouping runs for every thread a batch touches.
    titled = {anchor: titles for anchor, group in groups.items()
              if all(titles := [fixed_title(m) if m.kind == "patch" else None for m in group])}
    if not titled:
        return {}
    member_of = {m.msgid: anchor for anchor, group in groups.items() for m in group}
    targets = {anchor: [_target(m, title, groups, member_of, anchor)
                        for m, title in zip(groups[anchor], titles, strict=True)]
               for anchor, titles in titled.items()}
    only_fix_ups = {a for a, found in targets.items() if all(t is not None for t in found)}
    found: dict[str, list[tuple[int, dt.datetime, str]]] = {}
    for anchor in only_fix_ups:
        fixed = [t for t in targets[anchor] if t is not None]
        if any(target in only_fix_ups for target, _ in fixed):
            continue  # fix-ups of fix-ups: as they were
        for msg, (target, number) in zip(groups[anchor], fixed, strict=True):
            found.setdefault(target, []).append((number, msg.date or UNDATED_FIRST, msg.msgid))
    # by the number fixed, then as sent: the order they would be folded in
    return {target: {msgid: number for number, _, msgid in sorted(fixes)}
            for target, fixes in found.items()}


def _target(msg: ThreadMessage, title: str, groups: Mapping[str, list[ThreadMessage]],
            member_of: Mapping[str, str], own: str) -> tuple[str, int] | None:
    """The group and number of the patch `msg` is a fix-up of (`title`, its `fixed_title`):
    the one it replies to (up its References) else the latest sent before it, of its author,
    number, size and release."""
    candidates = [
        (anchor, p) for anchor, group in groups.items() if anchor != own for p in group
        if p.kind == "patch" and same_author(p, msg) and same_title(p.title, title)
        and (p.fingerprint is None or p.fingerprint != msg.fingerprint) and _numbered_as(msg, p)
        and (p.date is None or msg.date is None or p.date <= msg.date)
    ]
    if not candidates:
        return None
    for parent in msg.parents():
        for anchor, patch in candidates:
            if patch.msgid == parent or member_of.get(parent) == anchor:
                return anchor, patch.counter
    anchor, patch = max(candidates, key=lambda c: (c[1].date is not None, c[1].date))
    return anchor, patch.counter


def _numbered_as(msg: ThreadMessage, patch: ThreadMessage) -> bool:
    """Whether `msg` says `patch`'s number: the same counter, size and release, or no number
    at all when sent in reply to it (`[PATCH] title (fix)`)."""
    if msg.total == 1 and patch.total > 1:
        return msg.hook == patch.msgid
    return (msg.counter, msg.total) == (patch.counter, patch.total) and (
        msg.release == patch.release or not msg.version_explicit)
