"""Keep series, series versions and patches in step with the stored messages.

Called by ingest, inside the batch's transaction, with the threads whose postings may have
changed (a cover letter or patch arrived, or threads were merged) and the threads that got review
trailers. Messages and the series built from them are committed together; re-running changes
nothing. What is stored does not depend on how the mail was cut into batches nor on the order it
arrived in: a version is what its thread's postings say (`grouping`), its series what the
versions linked to it say (`membership`), and nothing keeps a value only because it came first.
Ingest speed depends on this module: it reads what it needs in a fixed number of queries per
batch, works on plain records (`bot.series.records`) and writes them back once, and it leaves a
posting alone when nothing about it changed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Message, Patch, Series, SeriesVersion, utcnow
from bot.db.value_lists import in_param
from bot.series import membership, records
from bot.series.cover_shortlogs import group_thread
from bot.series.grouping import Posting
from bot.series.parts import ASSEMBLED_KINDS, POSTING_COLUMNS
from bot.series.records import SeriesRecord, VersionRecord, title_key
from bot.series.rerolls import link_rerolls
from bot.series.shared_ids import (
    ambiguous,
    carried,
    note_postings,
    resent_covers,
    settle,
    shared_ids,
    unresolved,
)
from bot.series.trailers import attribute_trailers
from bot.series.undated import UNDATED_LAST

# The statements a batch sends, built once: the lists they look up are their parameters.
_POSTING_PARTS = sa.select(*POSTING_COLUMNS).where(
    in_param(Message.thread_id, "threads"), Message.kind.in_(ASSEMBLED_KINDS)
)
_PATCH_PLACES = sa.select(Patch.message_id, Patch.series_version_id).where(
    in_param(Patch.message_id, "messages")
)
_COVER_PLACES = sa.select(SeriesVersion.cover_message_id, SeriesVersion.id).where(
    in_param(SeriesVersion.cover_message_id, "messages")
)
_VERSIONS_BY_ANCHOR = sa.select(*records.VERSION_COLUMNS).where(
    in_param(SeriesVersion.anchor_msgid, "anchors")
)
_VERSIONS_BY_ID = sa.select(*records.VERSION_COLUMNS).where(in_param(SeriesVersion.id, "ids"))
_VERSIONS_OF_SERIES = sa.select(*records.VERSION_COLUMNS).where(
    in_param(SeriesVersion.series_id, "series")
)
_PATCHES_OF_VERSIONS = sa.select(Patch.series_version_id, Patch.index, Patch.message_id).where(
    in_param(Patch.series_version_id, "versions")
)
# What links a version to versions of other threads (`membership`): one author's versions of
# one title (the pairs are checked here; the index finds the authors' versions of those titles,
# not all they ever sent), and the versions of a change-id, whoever sent them.
_VERSIONS_BY_TITLE = sa.select(
    SeriesVersion.series_id, SeriesVersion.author_email, SeriesVersion.title_key
).where(
    in_param(SeriesVersion.author_email, "authors"), in_param(SeriesVersion.title_key, "titles")
)  # fmt: skip
_VERSIONS_BY_CHANGE = sa.select(SeriesVersion.series_id).where(
    in_param(SeriesVersion.change_id, "changes")
)
_SERIES_BY_ID = sa.select(*records.SERIES_COLUMNS).where(in_param(Series.id, "ids"))
_MSGID = sa.select(Message.msgid).where(Message.id == sa.bindparam("id"))
_VERSIONS_OF_THREADS = sa.select(SeriesVersion.id).where(
    in_param(SeriesVersion.thread_id, "threads")
)


@dataclass
class AssemblyResult:
    series_created: int = 0  # series versions made
    series_updated: int = 0
    versions_removed: int = 0  # stored versions left with no patch


def _posting_parts(conn: sa.Connection, thread_ids: Iterable[int]) -> dict[int, list[Any]]:
    """The messages of the threads that series are assembled from (`ASSEMBLED_KINDS`), as rows,
    by thread."""
    out: dict[int, list[Any]] = defaultdict(list)
    for row in conn.execute(_POSTING_PARTS, {"threads": list(set(thread_ids))}):
        out[row.thread_id].append(row)
    return out


class _Known:
    """The stored series and versions a batch's postings may continue or take patches from,
    read in a few queries up front, and what this run has added. Per-posting queries made
    ingest ten times slower than parsing."""

    def __init__(
        self, conn: sa.Connection, postings: list[Posting], rows: dict[str, Any],
        not_taken: list[int],
    ) -> None:  # fmt: skip
        self.created: list[SeriesRecord] = []  # the new series
        self.new_versions: list[VersionRecord] = []
        self.claimed: set[VersionRecord] = set()  # versions a posting of this run continues
        member_ids = [rows[m].id for p in postings for m in p.members]
        # Where the postings' messages are now: patches (and copies no posting takes) and covers.
        self.version_of_message: dict[int, int] = dict(
            conn.execute(_PATCH_PLACES, {"messages": member_ids + not_taken}).all()
        )
        self.version_of_message.update(
            conn.execute(_COVER_PLACES, {"messages": member_ids}).all()
        )
        version_rows = list(
            conn.execute(_VERSIONS_BY_ANCHOR, {"anchors": list({p.anchor for p in postings})})
        )
        more = set(self.version_of_message.values()) - {r.id for r in version_rows}
        if more:
            version_rows += conn.execute(_VERSIONS_BY_ID, {"ids": list(more)}).all()
        self.series: dict[int, SeriesRecord] = {}
        self.versions: dict[int, VersionRecord] = {}
        self._add(conn, version_rows)
        self.by_anchor = {v.anchor_msgid: v for v in self.versions.values()}
        # Which version holds each message as a patch, as this run places them.
        self.holder = {m: v for v in self.versions.values() for m in v.patches.values()}

    def _add(self, conn: sa.Connection, version_rows: list[Any]) -> None:
        """Records of stored versions (their series and patches read here) not read yet."""
        version_rows = [r for r in version_rows if r.id not in self.versions]
        if not version_rows:
            return
        series_ids = list({r.series_id for r in version_rows} - self.series.keys())
        for row in conn.execute(_SERIES_BY_ID, {"ids": series_ids}):
            self.series[row.id] = records.series_record(row._mapping, versions=0)
        patches: dict[int, dict[int, int]] = defaultdict(dict)
        for version_id, index, message_id in conn.execute(
            _PATCHES_OF_VERSIONS, {"versions": [r.id for r in version_rows]}
        ):
            patches[version_id][index] = message_id
        for r in version_rows:
            self.versions[r.id] = records.version_record(
                r._mapping, self.series[r.series_id], patches[r.id]
            )

    def regroup(
        self, conn: sa.Connection, rows: dict[str, Any], threads: set[int]
    ) -> set[VersionRecord]:
        """Recompute the series around the versions this run changed (`membership`).

        Read: the versions linked to them by title or change-id, every version of each series
        any loaded version is in, and the cover letters and patches of those versions' threads
        beyond `threads` (whose parts are `rows`), where their series may come apart. A series
        none of whose versions changed or is in `threads` is whole as stored, its mail as its
        row says: not read. Returns the versions whose carried trailers may change: those that
        changed series, and those of the series that lost one."""
        changed = [v for v in self.all_versions() if v.changed]
        if not changed:
            return set()
        keys = {(v.author_email, key) for v in changed
                if not v.removed and (key := title_key(v.title))}  # as membership links them
        changes = list({v.change_id for v in changed if v.change_id and not v.removed})
        wanted = {v.series.id for v in self.all_versions() if v.series is not None}
        for series_id, author, key in conn.execute(_VERSIONS_BY_TITLE, {
            "authors": list({a for a, _ in keys}), "titles": list({t for _, t in keys}),
        }):  # fmt: skip
            if (author, key) in keys:
                wanted.add(series_id)
        if changes:
            wanted.update(conn.scalars(_VERSIONS_BY_CHANGE, {"changes": changes}))
        wanted.discard(None)  # a new version's
        if wanted:
            self._add(conn, conn.execute(_VERSIONS_OF_SERIES, {"series": list(wanted)}).all())
        by_series: dict[SeriesRecord, list[VersionRecord]] = defaultdict(list)
        for v in self.versions.values():
            if v.series is not None:
                by_series[v.series].append(v)
        unsettled = {s for s, vs in by_series.items()
                     if any(v.changed or v.thread_id in threads for v in vs)}  # fmt: skip
        versions = [v for v in self.all_versions() if not v.removed]
        parts = {r.id: r for r in rows.values()}
        more = {v.thread_id for v in versions if v.series in unsettled} - threads - {None}
        if more:
            for thread_parts in _posting_parts(conn, more).values():
                parts.update((r.id, r) for r in thread_parts)
        whole = [[v for v in vs if not v.removed] for s, vs in by_series.items()
                 if s not in unsettled]  # fmt: skip
        before = {v: v.series for v in self.all_versions()}
        groups = membership.components(versions, whole, parts)
        created, moved = membership.settle_series(groups, self.series.values(), parts, utcnow())
        self.created += created
        left = {before[v] for v in moved} | {v.series for v in changed if v.removed}
        left.discard(None)
        return moved | {v for v in versions if before[v] in left}

    def all_series(self) -> list[SeriesRecord]:
        return [*self.series.values(), *self.created]

    def all_versions(self) -> list[VersionRecord]:
        return [*self.versions.values(), *self.new_versions]


def update_series(
    session: Session, posting_threads: Iterable[int], trailer_threads: Iterable[int] = (),
    no_longer_parts: Iterable[int] = (),
) -> AssemblyResult:
    """Re-derive the postings of `posting_threads`, store what changed, and rebuild the
    trailers of every version that changed or whose thread got review trailers.
    `no_longer_parts`: messages stored as patches that are read now as something else (mail
    parsed again, `bot.ingest.reparse`), taken out of the versions that hold them."""
    conn = session.connection()
    result = AssemblyResult()
    touched: list[VersionRecord] = []
    found: list[tuple[int, Posting]] = []
    rows: dict[str, Any] = {}
    by_thread = _posting_parts(conn, posting_threads)
    shared = shared_ids(conn, by_thread)
    copies = carried(conn, shared)
    resent = resent_covers(conn, by_thread, shared)
    # copies of a shared Message-ID that no posting takes, patches without a diff, and patches
    # that are no longer: out of the versions that hold them
    not_taken: list[int] = list(no_longer_parts)
    for thread_id, parts in by_thread.items():
        parts, notes, dropped = settle(parts, shared, copies) if shared else (parts, {}, [])
        not_taken += dropped
        rows.update((r.msgid, r) for r in parts)
        rows.update((r.msgid, r) for r in resent.get(thread_id, ()))
        postings = group_thread(conn, parts, resent.get(thread_id, ()))
        note_postings(postings, notes)
        found += [(thread_id, p) for p in postings]
        not_taken += [rows[m].id for p in postings for m in [*p.without_diff, *p.fix_ups]]
    found = [(t, p) for t, p in found if p.patches]  # a cover letter alone is not a posting yet
    if found or not_taken:
        known = _Known(conn, [p for _, p in found], rows, not_taken)
        claims = _existing_versions(found, rows, known)
        known.claimed = {v for v in claims if v is not None}
        for (thread_id, posting), version in zip(found, claims, strict=True):
            if version is not None and _unchanged(version, posting, rows):
                continue
            created = version is None
            touched.append(_store_posting(conn, thread_id, posting, rows, version, known))
            if created:
                result.series_created += 1
            else:
                result.series_updated += 1
        for message_id in not_taken:
            if (holder := known.holder.get(message_id)) is not None:
                # a copy placed before the other came, or mail no longer read as a patch
                _remove_patch(holder, message_id, known)
        touched += known.regroup(conn, rows, set(by_thread))
        records.write(conn, known.all_series(), known.all_versions())
        link_rerolls(conn, by_thread)
        result.versions_removed = sum(v.removed and v.id is not None for v in known.all_versions())
    trailer_versions = {v.id for v in touched if v.id is not None and not v.removed}
    if trailer_threads := set(trailer_threads):
        trailer_versions |= set(
            conn.scalars(_VERSIONS_OF_THREADS, {"threads": list(trailer_threads)})
        )
    if trailer_versions:
        attribute_trailers(session, trailer_versions)
    return result


def _unchanged(version: VersionRecord, posting: Posting, rows: dict[str, Any]) -> bool:
    cover_id = rows[posting.cover].id if posting.cover else None
    return (
        version.cover_message_id == cover_id
        and version.version == posting.version
        and version.patches == {i: rows[m].id for i, m in posting.patches.items()}
        and version.fix_ups == _fix_ups(posting)
        and version.notes == posting.notes  # a Message-ID found shared since
        # the same rows read again otherwise (`bot.ingest.reparse`): a relay's author, a title
        and version.author_email == posting.author
        and version.title == posting.title
    )


def _fix_ups(posting: Posting) -> list[list[Any]]:
    return [[msgid, number] for msgid, number in posting.fix_ups.items()]


def _existing_versions(
    found: list[tuple[int, Posting]], rows: dict[str, Any], known: _Known
) -> list[VersionRecord | None]:
    """The stored version each posting (of a thread) continues, each version continued by one
    posting at most: the posting it is anchored by in the same thread, else the one holding
    most of its messages. (A thread's postings can be split anew when a part arrives: a series
    sent twice without threading. A version of another thread hanging from the same missing
    message is another posting, not this one's.)"""
    scores: list[tuple[tuple[bool, int], int, int]] = []  # (anchored, shared), posting, version
    for index, (thread_id, posting) in enumerate(found):
        anchored = known.by_anchor.get(posting.anchor)
        if anchored is not None and anchored.thread_id not in (thread_id, None):
            anchored = None
        shared = Counter(
            v for m in posting.members
            if (v := known.version_of_message.get(rows[m].id)) is not None
        )  # fmt: skip
        if anchored is not None:
            assert anchored.id is not None
            scores.append(((True, shared[anchored.id]), index, anchored.id))
        scores += [((False, n), index, v) for v, n in shared.items()]
    chosen: list[int | None] = [None] * len(found)
    taken: set[int] = set()
    for _, index, version_id in sorted(scores, key=lambda s: (s[0], -s[1]), reverse=True):
        if chosen[index] is None and version_id not in taken:
            chosen[index] = version_id
            taken.add(version_id)
    return [None if v is None else known.versions[v] for v in chosen]


def _anchor_for(
    conn: sa.Connection, posting: Posting, version: VersionRecord | None, known: _Known
) -> str:
    """The posting's anchor, unless another version holds it: two threads hanging from one
    missing message (different References), which once failed the batch on the unique
    anchor. The one sent first is named by that message, the other by its first patch, as
    grouping names other postings hanging there; when this one was sent first, the other
    gives the name up."""
    holder = known.by_anchor.get(posting.anchor)
    if holder is None or holder is version or holder.removed or (
        holder.anchor_msgid != posting.anchor  # gave it up to this one already
    ):
        return posting.anchor
    first = posting.patches[min(posting.patches)]
    if not holder.patches:  # a version of this run's that gets its patches later
        return first
    theirs = conn.scalar(_MSGID, {"id": holder.patches[min(holder.patches)]})
    if (holder.date or UNDATED_LAST, theirs) < (posting.date or UNDATED_LAST, first):
        return first
    holder.anchor_msgid = theirs
    holder.changed = True
    known.by_anchor[theirs] = holder
    return posting.anchor


def _store_posting(
    conn: sa.Connection,
    thread_id: int,
    posting: Posting,
    rows: dict[str, Any],
    version: VersionRecord | None,
    known: _Known,
) -> VersionRecord:
    """Make `version` (a new one when None) what `posting` now says; which series it is of is
    settled once every posting of the run is stored (`_Known.regroup`). Nothing is kept from
    what it said before: a value kept because it came first would depend on the order the
    mail arrived in."""
    if version is None:
        version = VersionRecord(
            series=None,
            anchor_msgid=_anchor_for(conn, posting, version, known),
            thread_id=thread_id,
            version=posting.version,
            title=posting.title,
            author_email=posting.author,
            expected=posting.expected,
            date=posting.date,
        )
        known.new_versions.append(version)
    version.changed = True
    # The anchor names the posting as it now stands: a cover letter that arrived late takes over.
    version.anchor_msgid = _anchor_for(conn, posting, version, known)
    known.by_anchor[version.anchor_msgid] = version
    cover = rows[posting.cover] if posting.cover else None
    version.cover_message_id = cover.id if cover is not None else None
    version.thread_id = thread_id
    carrier = cover or rows[posting.patches[min(posting.patches)]]  # b4 writes base-commit there
    version.version = posting.version
    version.title = posting.title
    version.author_email = posting.author
    version.rfc = any(rows[m].rfc for m in posting.members)
    version.resend = posting.resend
    version.prefixes = list(posting.prefixes)
    version.base_commit = carrier.base_commit
    version.change_id = carrier.change_id
    version.notes = posting.notes
    version.fix_ups = _fix_ups(posting)
    version.date = posting.date
    version.updated_at = utcnow()
    # What the posting no longer holds goes before its size is taken: a patch grouped here once
    # (as an older lorelab read it) whose own posting is stored later in this run.
    taken = {rows[m].id for m in posting.patches.values()}
    if dropped := [m for m in version.patches.values() if m not in taken]:
        version.patches = {i: m for i, m in version.patches.items() if m in taken}
        for message_id in dropped:
            known.holder.pop(message_id, None)
    _place_patches(version, posting, rows, known)
    indexes = set(version.patches)
    version.expected = max([posting.expected, *indexes])
    version.received = len(indexes)
    # a patch whose Message-ID other mails share, unresolved, is as good as missing
    version.ambiguous = ambiguous(posting.notes)
    version.complete = all(i in indexes for i in range(1, version.expected + 1)) and (
        not unresolved(posting.notes))
    return version


def _place_patches(
    version: VersionRecord, posting: Posting, rows: dict[str, Any], known: _Known
) -> None:
    for index, msgid in posting.patches.items():
        message_id = rows[msgid].id
        if version.patches.get(index) == message_id:
            continue
        holder = known.holder.get(message_id)
        if holder is version:  # at another place of this posting before
            version.patches = {i: m for i, m in version.patches.items() if m != message_id}
        elif holder is not None:  # placed in another posting before its parents arrived
            _remove_patch(holder, message_id, known)
        replaced = version.patches.get(index)
        if replaced is not None:
            # The message that held this place is no longer part of this posting: forget where
            # it was, so that its own posting (later in this run) gets a version of its own.
            known.holder.pop(replaced, None)
        version.patches[index] = message_id
        known.holder[message_id] = version


def _remove_patch(owner: VersionRecord, message_id: int, known: _Known) -> None:
    owner.patches = {i: m for i, m in owner.patches.items() if m != message_id}
    known.holder.pop(message_id, None)
    owner.changed = True
    if not owner.patches and owner not in known.claimed:  # a claimed one gets patches next
        owner.removed = True
    else:
        owner.received = len(owner.patches)
        owner.complete = False
