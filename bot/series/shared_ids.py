"""Which of several mails sharing a Message-ID a series takes (issue 16, item 8).

Ingest keeps every different mail that carries an id (`bot.ingest.copies`). Before postings are
grouped, each id of a thread's cover letters and patches that more than one mail claims is
settled here: the copy whose headers match the rest of its posting (the other parts of the same
version and size, whose ids nobody shares) is taken when exactly one fits best: same sender as
they, replying to the same parent, dated nearest to them. A patch that one mail sends with its
diff and the others without (its text lost on the way) is the one with the diff. When nothing
tells the copies apart (or there is no rest of the posting to compare with) but they are one
part sent again (patches with one diff fingerprint, or cover letters of one size, under one
number: a series sent a second time with the same Message-IDs, to more people or a day later),
which copy stands for the id changes no code a test applies: the first stored is taken, and a
copy in a thread the first is not in (a patch without a cover letter sent again starts one) is
dropped there, not made a second posting of the same patch. When the thread holds one mail
under the id and the others, in other threads, send other parts (another kind, number, size or
title: an id the sender's tool used again, `bot.series.reused_ids`), the thread's own is taken.
Otherwise the id stays *unresolved*: the version is flagged ambiguous and counted incomplete,
so the planner, `lorelab apply|build|review` and `#lorelab test` all refuse it until a new
posting replaces it. Either way the version's notes say which id is shared and what was done.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from bot.db.models import Message
from bot.db.value_lists import in_param
from bot.series.grouping import Posting
from bot.series.parts import POSTING_COLUMNS
from bot.series.reused_ids import Part, claiming_sqlite, part_of

NOTE = "ambiguous Message-ID"  # how the notes this module writes begin
UNRESOLVED = "unresolved"


def ambiguous(notes: Iterable[str]) -> bool:
    return any(n.startswith(NOTE) for n in notes)


def unresolved(notes: Iterable[str]) -> bool:
    return any(n.startswith(f"{NOTE}, {UNRESOLVED}:") for n in notes)


_CLAIMED = sa.select(Message.claimed_msgid).where(in_param(Message.claimed_msgid, "ids"))

_CLAIMED_SQLITE = claiming_sqlite("claimed_msgid")


def shared_ids(conn: sa.Connection, by_thread: Mapping[int, list[Any]]) -> set[str]:
    """Which ids of the threads' cover letters and patches more than one stored mail carries."""
    rows = [r for parts in by_thread.values() for r in parts]
    ids = {r.claimed_msgid for r in rows if r.claimed_msgid}
    plain = [r.msgid for r in rows if not r.claimed_msgid]
    if plain:
        query = _CLAIMED_SQLITE if conn.dialect.name == "sqlite" else _CLAIMED
        ids.update(conn.execute(query, {"ids": plain}).scalars())
    return ids


class _Claimed:
    """A copy's row read under the Message-ID it claims (what grouping and threading know)."""

    def __init__(self, row: Any, msgid: str) -> None:
        self._row = row
        self.msgid = msgid
        self._mapping = {**row._mapping, "msgid": msgid}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._row, name)


@dataclass(frozen=True)
class Alike:
    """The mails carrying a shared id send one part again (`carried`)."""

    mails: int
    one_posting: bool  # all of one version and RFC or not: the posting sent again, not a reroll


@dataclass(frozen=True)
class Carried:
    """What the mails carrying each shared id (in any thread) send (`carried`)."""

    alike: dict[str, Alike]  # the ids whose mails send one part again
    sends: dict[str, Counter[Part]]  # how many of an id's mails send each part


def settle(parts: list[Any], shared: set[str], copies: Carried
           ) -> tuple[list[Any], dict[str, str], list[int]]:
    """One row per Message-ID of a thread's parts; a note for each shared id (by the id the
    posting will know the part by); the message ids of the copies not taken, which must not
    stay a patch of any version."""
    alike = copies.alike
    by_id: dict[str, list[Any]] = defaultdict(list)
    for row in parts:
        by_id[row.claimed_msgid or row.msgid].append(row)
    peers = [group[0] for msgid, group in by_id.items() if msgid not in shared]
    out: list[Any] = []
    notes: dict[str, str] = {}
    dropped: list[int] = []
    for msgid, group in by_id.items():
        if msgid not in shared:
            out.extend(group)
            continue
        group.sort(key=lambda r: (r.claimed_msgid is not None, r.id))  # the first stored first
        if (msgid in alike and alike[msgid].one_posting and group[0].claimed_msgid
                and group[0].kind == "patch"):
            # a patch sent again under its id, the first mail in another thread (a patch
            # without a cover letter starts one): that thread's posting has it. (`[PATCH V2]`
            # over the same diff under v1's id, a new commit message, is v2: kept.)
            dropped += [r.id for r in group]
            continue
        whole = _the_whole_copy(group)
        best = whole or _best(group, [p for p in peers if (p.version, p.total) == (
            group[0].version, group[0].total)])
        chosen = best if best is not None else group[0]
        reused = (best is None and len(group) == 1 and msgid not in alike
                  and copies.sends[msgid][part_of(chosen)] == 1)
        if chosen.msgid != msgid and group[0].msgid == msgid:
            # read under the id it claims where it stands in for the mail stored under that
            # id; elsewhere (another thread) it keeps its stand-in, so no id is in two postings
            chosen = _Claimed(chosen, msgid)
        out.append(chosen)
        dropped += [r.id for r in group if r.id != chosen.id]
        if whole is not None:
            notes[chosen.msgid] = (
                f"{NOTE}, settled: <{msgid}> is carried by {len(group)} mails that send patch "
                f"{whole.counter}/{whole.total}, all but one without its diff (its text lost "
                f"on the way); took the one with the diff, dated {whole.date}")
        elif best is not None:
            notes[chosen.msgid] = (
                f"{NOTE}, settled: <{msgid}> is carried by different mails; took the one from "
                f"{best.from_email} dated {best.date}, whose sender, parent and date match the "
                "rest of the series")
        elif msgid in alike:
            # cover letters alike in size only: a series sent again, or a later version's
            # letter kept under the id (`grouping` rule 13)
            what = ("the same patch (one diff)" if chosen.kind == "patch"
                    else f"a cover letter of {chosen.total} "
                    + ("patch" if chosen.total == 1 else "patches"))
            notes[chosen.msgid] = (
                f"{NOTE}, settled: <{msgid}> is carried by {alike[msgid].mails} mails that send "
                f"{what}; took the first stored, dated {chosen.date}")
        elif reused:
            # the thread's one mail under an id that mails of other threads carry as other
            # parts: an id the sender's tool used again (`bot.series.reused_ids`)
            others = sum(copies.sends[msgid].values()) - 1
            notes[chosen.msgid] = (
                f"{NOTE}, settled: <{msgid}> is carried by {others} other "
                + ("mail" if others == 1 else "mails")
                + " of other threads, which send other parts (an id the sender used again); "
                f"took the one in this thread, dated {chosen.date}")
        else:
            notes[chosen.msgid] = (
                f"{NOTE}, {UNRESOLVED}: <{msgid}> is carried by different mails and nothing "
                "tells which belongs to the series; not tested until a new posting replaces it")
    return out, notes, dropped


def note_postings(postings: Iterable[Posting], notes: dict[str, str]) -> None:
    """Add each shared id's note to the posting it is part of."""
    if notes:
        for posting in postings:
            posting.notes += [notes[m] for m in posting.members if m in notes]


# The mails carrying shared ids, each through its index: the first stored, under the id, and the
# copies claiming it (on SQLite told to take the index: `claiming_sqlite`).
_COPY_COLUMNS = (sa.func.coalesce(Message.claimed_msgid, Message.msgid).label("msgid"),
                 Message.id, Message.thread_id, Message.kind, Message.counter, Message.total,
                 Message.patch_fingerprint, Message.version, Message.rfc, Message.title)
_FIRST_COPIES = sa.select(*_COPY_COLUMNS).where(in_param(Message.msgid, "ids"))
_CLAIMING = sa.select(*_COPY_COLUMNS).where(in_param(Message.claimed_msgid, "ids"))
_CLAIMING_SQLITE = claiming_sqlite(
    "claimed_msgid AS msgid, id, thread_id, kind, counter, total, patch_fingerprint, version, rfc,"
    " title")


def _claiming(conn: sa.Connection, ids: Iterable[str]) -> list[Any]:
    """The copies claiming these ids (`_COPY_COLUMNS`, `msgid` the id claimed)."""
    query = _CLAIMING_SQLITE if conn.dialect.name == "sqlite" else _CLAIMING
    return list(conn.execute(query, {"ids": sorted(ids)}))


def carried(conn: sa.Connection, shared: set[str]) -> Carried:
    """What the mails carrying the shared ids send; `alike`: the ids whose mails (in any
    thread) are one part sent again: the same number of the same size, and for a patch the
    same diff (a cover letter's text changes no code a test applies)."""
    if not shared:
        return Carried({}, {})
    found: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    postings: dict[str, set[tuple[int, bool]]] = defaultdict(set)
    sends: dict[str, Counter[Part]] = defaultdict(Counter)
    for row in [*conn.execute(_FIRST_COPIES, {"ids": sorted(shared)}), *_claiming(conn, shared)]:
        found[row.msgid].add((row.kind, row.counter, row.total, row.patch_fingerprint))
        postings[row.msgid].add((row.version, bool(row.rfc)))
        sends[row.msgid][part_of(row)] += 1
    alike = {msgid: Alike(sum(sends[msgid].values()), len(postings[msgid]) == 1)
             for msgid, kinds in found.items()
             if len(kinds) == 1 and sum(sends[msgid].values()) > 1
             and _one_part(next(iter(kinds)))}
    return Carried(alike, sends)


_ROWS = sa.select(*POSTING_COLUMNS).where(in_param(Message.id, "ids"))


def resent_covers(conn: sa.Connection, by_thread: Mapping[int, list[Any]], shared: set[str]
                  ) -> dict[int, list[Any]]:
    """For each thread, the copies kept in other threads of its cover letters (a cover letter
    sent again under the id of an earlier one: `grouping` rule 13), as rows of its parts."""
    covers = {r.msgid: thread for thread, parts in by_thread.items() for r in parts
              if r.kind == "cover" and not r.claimed_msgid and r.msgid in shared}
    if not covers:
        return {}
    ids = [row.id for row in _claiming(conn, covers)
           if row.kind == "cover" and row.thread_id != covers[row.msgid]]
    out: dict[int, list[Any]] = defaultdict(list)
    for row in conn.execute(_ROWS, {"ids": ids}) if ids else ():
        out[covers[row.claimed_msgid]].append(row)
    return out


def _one_part(kind: tuple[Any, ...]) -> bool:
    """Whether copies alike in (kind, counter, total, fingerprint) send one part: a cover
    letter, or a patch whose diff lorelab read."""
    return kind[0] == "cover" or (kind[0] == "patch" and kind[3] is not None)


def _the_whole_copy(group: list[Any]) -> Any | None:
    """The one mail of `group` (carrying one id) that sends its patch with a diff, where the
    others send the same patch (number, size, title) without one: copies whose text a mail
    gateway dropped (TI's, 2023: an empty `[PATCH 2/2]` stored before the whole one)."""
    first = group[0]
    with_diff = [r for r in group if r.has_diff]
    if len(group) < 2 or len(with_diff) != 1 or any(
            (r.kind, r.counter, r.total, r.title.split())
            != ("patch", first.counter, first.total, first.title.split()) for r in group):
        return None
    return with_diff[0]


def _best(candidates: list[Any], peers: list[Any]) -> Any | None:
    """The one candidate that matches the peers best, or None when none stands out."""
    if not peers:
        return None
    author = Counter(p.from_email for p in peers).most_common(1)[0][0]
    parents = Counter(p.in_reply_to for p in peers if p.kind == "patch")
    parent = parents.most_common(1)[0][0] if parents else None
    dates = sorted(p.date for p in peers if p.date is not None)
    middle = dates[len(dates) // 2] if dates else None

    def score(row: Any) -> tuple[bool, bool, float]:
        far = (abs((row.date - middle) / dt.timedelta(seconds=1))
               if row.date is not None and middle is not None else float("inf"))
        return row.from_email == author, parent is not None and row.in_reply_to == parent, -far

    ranked = sorted(candidates, key=score, reverse=True)
    top = score(ranked[0])
    if not top[0] or (len(ranked) > 1 and score(ranked[1]) == top):
        return None
    return ranked[0]
