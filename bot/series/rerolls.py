"""Partial rerolls: a version that sends again only the patches that changed, each in reply to
the patch it replaces (`[PATCH v4 2/8]` alone, in reply to v3's 2/8), and means the version
before it for the rest. nvdimm and mm maintainers send them; b4 reads them so
(`LoreMailbox.partial_reroll`), and b4 is what makes the mbox a run applies (`bot.series.mbox`).

So lorelab reads them by b4's rule, for what it says it tested to be what b4 applies: a version
v > 1 that lacks some of its numbers, each of whose patches replies, directly or up a chain of
replies, to a message of the same number and size, takes the numbers it lacks from version
v - 1 of its thread, when that thread holds no other posting of version v (b4 reads two
postings of one version in a thread as one; io_uring's and ext4's authors often send a `[PATCH
v2 1/3]` in reply, then the whole v2 days later in a thread of its own: both are postings of
v2); failing a v - 1 in its thread, from version v - 1 of its series, when the series holds
no other posting of version v (a reroll sent in a thread of its own). The base is the newest
such posting, itself perhaps a reroll; a reroll retitled by its first patch may be filed as a
series of its own, and its thread still finds its base. Beyond b4, a point release (`[PATCH
v4.1 9/9]` in reply to v4's 9/9, Darrick Wong's respin of one patch) rerolls the release before
it, v4 (or an earlier point of v4), by the same rule. A version sent a few patches at a time,
each piece in reply to (a review of) the patches it replaces and no number sent twice (LTP's
`[PATCH v2 1/2]` and `v2 2/2`, each answering its review; Linus Torvalds's `[PATCH 4/7 v2]`
and `6/7 v2`), is read as b4 reads it, one revision (pieces sent within minutes of each other
are one posting already: `grouping`, rule 4): each piece takes the rest
from the one before it, the first from v - 1, and the last piece is the version; the earlier
ones stand for their numbers, incomplete (`bot.series.views.continued_pieces` names the piece
after each). The link is stored (`SeriesVersion.reroll_of_id`); the version counts as complete
when the two hold every number, and `SeriesVersion.applied_patches` lists what a test applies.

`choose_bases` decides on plain values; `link_rerolls` reads them for the threads assembly just
stored and writes what changed, in the batch's transaction.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa

from bot.db.models import Message, Patch, SeriesVersion
from bot.db.value_lists import in_param
from bot.mail.subject import point_of
from bot.series.shared_ids import unresolved
from bot.series.undated import UNDATED_FIRST

_MAX_CHAIN = 50  # replies walked up from a patch: a reference loop must not hang assembly


@dataclass
class VersionFacts:
    """What the rule reads of one stored version."""

    id: int
    series_id: int
    thread_id: int | None
    version: int
    expected: int
    date: dt.datetime | None
    unresolved: bool  # a Message-ID shared by other mails, unresolved: as good as missing
    point: int = 0  # the point release: 1 for `v4.1`
    indexes: set[int] = field(default_factory=set)  # its own patches' numbers
    replies: list[bool] = field(default_factory=list)  # each own patch: answers its number

    @property
    def whole(self) -> bool:
        return self.indexes >= set(range(1, self.expected + 1))

    @property
    def rerolls(self) -> bool:
        """Whether it may be a partial reroll: some numbers missing, and each patch it has
        answers a message of its number."""
        return not self.whole and bool(self.replies) and all(self.replies)

    @property
    def release(self) -> tuple[int, int]:
        return (self.version, self.point)

    def follows(self, base: VersionFacts) -> bool:
        """Whether `base` is of the release just before this one's: for `v4.2`, an earlier
        point of v4 (`v4.1`, `v4`); else any of version v - 1."""
        if self.point:
            return base.version == self.version and base.point < self.point
        return base.version == self.version - 1


def answers_its_number(
    parent: str | None, counter: int, total: int,
    messages: Mapping[str, tuple[str | None, int, int]],
) -> bool:  # fmt: skip
    """Whether a patch `counter`/`total` sent in reply to `parent` re-sends a patch of its number:
    the parent, or a message up its chain of replies, is numbered the same (`messages`: msgid ->
    In-Reply-To, counter, total)."""
    for _ in range(_MAX_CHAIN):
        if parent is None or parent not in messages:
            return False
        up, parent_counter, parent_total = messages[parent]
        if (parent_counter, parent_total) == (counter, total):
            return True
        parent = up
    return False


def choose_bases(versions: Iterable[VersionFacts]) -> dict[int, tuple[int | None, bool]]:
    """For each version: (the version it rerolls or None, complete)."""
    ordered = sorted(versions, key=lambda v: (v.release, v.date or UNDATED_FIRST, v.id))
    place = {v.id: i for i, v in enumerate(ordered)}
    out: dict[int, tuple[int | None, bool]] = {}
    covered: dict[int, set[int]] = {}  # the numbers a test of each version applies
    for v in ordered:
        base, continued = None, False
        if v.release > (1, 0) and v.rerolls:
            kin = [b for b in ordered if b.id != v.id and _related(b, v)]
            # b4 looks in the thread: a version v - 1 there is the base, and a whole vN posted
            # later in a thread of its own does not count. Else the series' v - 1, when the
            # series has no other vN. A point release (`[PATCH v4.1 9/9]`, which b4 reads as
            # no version) rerolls the release before it, v4 itself: lorelab's reading.
            here = [b for b in kin if v.thread_id is not None and b.thread_id == v.thread_id]
            pool = here if any(v.follows(b) for b in here) else kin
            earlier = [b for b in pool if v.follows(b)]
            # Another posting of its own version (mm's `[PATCH v8 3/6] ... (fix)` beside v8, a
            # `v5 update 29/32`): b4 reads the two as one revision, and this one as no reroll.
            # Unless every one is a reroll of other numbers: the version sent a patch at a
            # time, each in reply to (a review of) the one it replaces, which b4 reads as one
            # revision too. Each takes the rest from the one before; the last one is the
            # version, and the ones before it, incomplete, stand for its earlier numbers.
            same = [b for b in pool if b.release == v.release]
            if earlier and (not same or _pieces([v, *same])):
                before = [b for b in same if place[b.id] < place[v.id]]
                base = before[-1] if before else earlier[-1]
                continued = len(before) < len(same)
        covered[v.id] = v.indexes | (covered[base.id] if base else set())
        complete = (not v.unresolved and not continued
                    and covered[v.id] >= set(range(1, v.expected + 1)))
        out[v.id] = (base.id if base else None, complete)
    return out


def _pieces(versions: list[VersionFacts]) -> bool:
    """Whether these postings of one release are one version sent a few patches at a time:
    each a reroll, no number sent twice."""
    numbers = [i for v in versions for i in v.indexes]
    return all(v.rerolls for v in versions) and len(numbers) == len(set(numbers))


# A reroll is a version past v1, or a point release of v1 (`v1.1`), incomplete until linked:
# incomplete v1s come back too, and their prefixes tell which are point releases.
_LATER_VERSIONS_OF_THREADS = sa.select(
    SeriesVersion.series_id, SeriesVersion.version, SeriesVersion.prefixes,
    SeriesVersion.reroll_of_id,
).where(
    in_param(SeriesVersion.thread_id, "threads"),
    sa.or_(SeriesVersion.version > 1, ~SeriesVersion.complete,
           SeriesVersion.reroll_of_id.is_not(None)),
)
_FACTS = (
    SeriesVersion.id, SeriesVersion.series_id, SeriesVersion.thread_id, SeriesVersion.version,
    SeriesVersion.expected, SeriesVersion.date, SeriesVersion.notes, SeriesVersion.complete,
    SeriesVersion.reroll_of_id, SeriesVersion.prefixes,
)  # fmt: skip
def _related(a: VersionFacts, b: VersionFacts) -> bool:
    """Versions of one series, or of one thread (where b4 looks)."""
    return a.series_id == b.series_id or (a.thread_id is not None and a.thread_id == b.thread_id)


_VERSIONS_OF_SERIES = sa.select(*_FACTS).where(in_param(SeriesVersion.series_id, "series"))
_VERSIONS_OF_THREADS = sa.select(*_FACTS).where(in_param(SeriesVersion.thread_id, "threads"))
_OWN_PATCHES = (
    sa.select(Patch.series_version_id, Patch.index, Message.in_reply_to, Message.counter,
              Message.total)
    .join(Message, Message.id == Patch.message_id)
    .where(in_param(Patch.series_version_id, "versions"))
)  # fmt: skip
_THREAD_MESSAGES = sa.select(
    Message.msgid, Message.in_reply_to, Message.counter, Message.total
).where(in_param(Message.thread_id, "threads"))
_LINK = (
    sa.update(SeriesVersion)
    .where(SeriesVersion.id == sa.bindparam("version_id"))
    .values(reroll_of_id=sa.bindparam("base_id"), complete=sa.bindparam("is_complete"))
)


def link_rerolls(conn: sa.Connection, thread_ids: Iterable[int]) -> None:
    """Link the partial rerolls among the versions of these threads' series, and store which of
    them are complete with what they take. One query for threads that hold no version past v1
    nor point release of v1, which is most; the messages of a thread are read only for its
    incomplete later versions."""
    threads = list(set(thread_ids))
    found = conn.execute(_LATER_VERSIONS_OF_THREADS, {"threads": threads})
    series_ids = {r.series_id for r in found if r.version > 1 or r.reroll_of_id is not None
                  or point_of(r.version, r.prefixes or ())}
    if not series_ids:
        return
    # and the versions sharing a thread with one of them: a version of these threads in none
    # of theirs is related to no reroll (most, when the threads are a backfill's batch)
    of_series = conn.execute(_VERSIONS_OF_SERIES, {"series": list(series_ids)}).all()
    near = list({r.thread_id for r in of_series}.intersection(threads))
    rows = list({r.id: r for r in [
        *of_series, *conn.execute(_VERSIONS_OF_THREADS, {"threads": near}),
    ]}.values())  # fmt: skip
    facts = {r.id: VersionFacts(r.id, r.series_id, r.thread_id, r.version, r.expected, r.date,
                                unresolved(r.notes or ()), point_of(r.version, r.prefixes or ()))
             for r in rows}  # fmt: skip
    own = conn.execute(_OWN_PATCHES, {"versions": list(facts)}).all()
    for patch in own:
        facts[patch.series_version_id].indexes.add(patch.index)
    asked = {r.id: r.thread_id for r in rows
             if facts[r.id].release > (1, 0) and r.thread_id is not None and not facts[r.id].whole}
    if asked:
        messages = {m.msgid: (m.in_reply_to, m.counter, m.total) for m in
                    conn.execute(_THREAD_MESSAGES, {"threads": list(set(asked.values()))})}
        for patch in own:
            if patch.series_version_id in asked:
                facts[patch.series_version_id].replies.append(answers_its_number(
                    patch.in_reply_to, patch.counter, patch.total, messages))
    stored = {r.id: (r.reroll_of_id, r.complete) for r in rows}
    # Only rerolls, and versions that were: assembly decides every other version's completeness.
    changes = [{"version_id": vid, "base_id": base, "is_complete": complete}
               for vid, (base, complete) in choose_bases(facts.values()).items()
               if (base is not None or stored[vid][0] is not None)
               and stored[vid] != (base, complete)]  # fmt: skip
    if changes:
        conn.execute(_LINK, changes)
