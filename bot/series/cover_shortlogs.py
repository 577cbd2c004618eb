"""A thread's postings grouped with what its rows alone do not say read where grouping needs it:
the ancestors of patches sent in reply to a review, the files of patches sent again in reply to
the patch of their number, and cover letters' shortlogs.

Grouping finds the posting a patch is sent into up its References (rules 6 and 9 of
`bot.series.grouping`: `[PATCH 4/3]` or `[PATCH v6 2/4 update]` in reply to a review), and reads
the thread's posting parts only, not its reviews. `git send-email --in-reply-to=<review>` writes
the review's id alone there (Tianyu Lan's `[Update RFC PATCH V6 2/4]`, linux-arch): such a
patch's References are completed from the review's, as a mail client that quotes the whole
chain writes them.

Whether a patch sent in reply to the patch of its number, under its title, replaces it (rule 9
of `bot.series.grouping`) depends on the files both change: Tony Battersby's `[SCST PATCH
08/15]` (target-devel), the same change for the out-of-tree SCST project, replaced the
kernel's 08/15 before, and a test would have applied it to a kernel. The files of those few
patches are read with the thread's rows, before grouping.

A cover letter is its `git send-email` run's own, and its shortlog (`bot.mail.shortlog`) names
the patches that run sent. Grouping asks for it in two cases:

- rule 9, a number sent twice as two different patches: `git send-email dir/*.patch` on a
  folder that still holds an earlier run's files sends both. Mike Rapoport's "secretmem:
  optimize page_is_secretmem()" v2 (linux-api, linux-arch) came as 1/2 and 2/2 of the new
  order and of an old one; Krzysztof Kozlowski's "iomap: Constify ioreadX()" as 02 alpha, 02
  sh, 03 alpha, 03 sh. Taking the later copy of each number mixed the two runs (sh twice and
  alpha never), and a test of that would report a series that does not apply;
- rule 11, `[PATCH]`es without numbers sent with a cover letter: the ones it lists are its
  patches, at the places it gives them.

Grouping reads rows, not bodies: only a thread where one of these happens is grouped a
second time, with its cover letters' bodies read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from bot.db.models import Message
from bot.db.value_lists import in_param
from bot.mail.parse import parse_message
from bot.mail.shortlog import read_shortlog
from bot.series.grouping import Posting, group_postings, sent_again_in_reply
from bot.series.parts import ThreadMessage, thread_message

_RAW = sa.select(Message.msgid, Message.raw).where(in_param(Message.id, "ids"))
_FILES = sa.select(Message.msgid, Message.files).where(in_param(Message.id, "ids"))
# References hold the parent too (`bot.mail.parse` adds it, as b4 does)
_ANCESTORS = sa.select(Message.msgid, Message.references).where(in_param(Message.msgid, "msgids"))
_ANCESTRY_DEPTH = 8  # replies to replies read up, each with its References cut


def group_thread(conn: sa.Connection, parts: list[Any],
                 resent_covers: Sequence[Any] = ()) -> list[Posting]:
    """The postings of one thread's rows `parts` (`bot.series.grouping`), the cover letters'
    shortlogs read where grouping asks for them. `resent_covers`: rows of copies of its cover
    letters kept in other threads (`bot.series.shared_ids.resent_covers`)."""
    messages = _with_ancestry(conn, [thread_message(r._mapping) for r in parts])
    messages = _with_paths(conn, parts, messages)
    copies = [(r.claimed_msgid, thread_message(r._mapping)) for r in resent_covers]
    postings = group_postings(messages, _by_claim(copies))
    letters = {p.cover for p in postings if p.needs_shortlog}
    if not letters:
        return postings
    shortlogs = {}
    ids = [r.id for r in [*parts, *resent_covers] if r.msgid in letters]
    for msgid, raw in conn.execute(_RAW, {"ids": ids}):
        shortlogs[msgid] = read_shortlog(parse_message(raw, recipients=False).body)

    def read(m: ThreadMessage) -> ThreadMessage:
        return dataclasses.replace(m, shortlog=shortlogs[m.msgid]) if shortlogs.get(m.msgid) else m

    return group_postings([read(m) for m in messages],
                          _by_claim([(claimed, read(m)) for claimed, m in copies]))


def _with_ancestry(conn: sa.Connection, messages: list[ThreadMessage]) -> list[ThreadMessage]:
    """`messages` with the References of each numbered patch sent in reply to a message not
    among them (a review), that name none of the thread's posting parts, completed from the
    stored messages above it, where those lead to a part."""
    rows = {m.msgid for m in messages}
    parts = {m.msgid for m in messages if m.is_posting_part}
    chains = {m.msgid: m.parents()[::-1] for m in messages  # oldest first
              if m.kind == "patch" and m.total > 1 and m.in_reply_to is not None
              and m.in_reply_to not in rows and parts.isdisjoint(m.parents())}
    read: set[str] = set()
    for _ in range(_ANCESTRY_DEPTH):
        wanted = {chain[0] for chain in chains.values()} - parts - read
        if not wanted:
            break
        read |= wanted
        above = {msgid: references or [] for msgid, references
                 in conn.execute(_ANCESTORS, {"msgids": sorted(wanted)})}
        for msgid, chain in chains.items():
            if chain[0] in above:
                held = set(chain)  # a hostile References may name thousands
                chains[msgid] = [a for a in above[chain[0]] if a not in held] + chain
    completed = {msgid: tuple(chain) for msgid, chain in chains.items()
                 if not parts.isdisjoint(chain)}
    return [dataclasses.replace(m, references=completed[m.msgid]) if m.msgid in completed
            else m for m in messages]


def _with_paths(conn: sa.Connection, parts: list[Any],
                messages: list[ThreadMessage]) -> list[ThreadMessage]:
    """`messages` with the files read of those grouping compares by them."""
    wanted = sent_again_in_reply(messages)
    if not wanted:
        return messages
    ids = [r.id for r in parts if r.msgid in wanted]
    paths = {msgid: frozenset(f["path"] for f in files or ())
             for msgid, files in conn.execute(_FILES, {"ids": ids})}
    return [dataclasses.replace(m, paths=paths[m.msgid]) if m.msgid in paths else m
            for m in messages]


def _by_claim(copies: list[tuple[str, ThreadMessage]]) -> dict[str, list[ThreadMessage]]:
    out: dict[str, list[ThreadMessage]] = {}
    for claimed, message in copies:
        out.setdefault(claimed, []).append(message)
    return out
