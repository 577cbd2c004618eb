"""Keep series, series versions and patches in step with the stored messages.

Called by ingest, inside the batch's transaction, with the threads whose postings may have
changed (a cover letter or patch arrived, or threads were merged) and the threads that got review
trailers. Messages and the series built from them are committed together; re-running changes
nothing. Ingest speed depends on this module: it reads what it needs in a fixed number of
queries per batch, works on plain records (`bot.series.records`) and writes them back once, and
it leaves a posting alone when nothing about it changed.
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
from bot.series import records
from bot.series.grouping import Posting, group_postings
from bot.series.parts import thread_message
from bot.series.records import SeriesRecord, VersionRecord, move, title_key
from bot.series.shared_ids import ambiguous, note_postings, settle, shared_ids, unresolved
from bot.series.trailers import attribute_trailers

_POSTING_COLUMNS = (
    Message.id, Message.msgid, Message.in_reply_to, Message.references, Message.thread_id,
    Message.from_email, Message.from_name, Message.date, Message.kind, Message.version,
    Message.version_explicit, Message.counter, Message.total, Message.resend, Message.rfc,
    Message.title, Message.prefixes, Message.base_commit, Message.change_id,
    Message.claimed_msgid,
)  # fmt: skip


# The statements a batch sends, built once: the lists they look up are their parameters.
_POSTING_PARTS = sa.select(*_POSTING_COLUMNS).where(
    in_param(Message.thread_id, "threads"), Message.kind.in_(("cover", "patch"))
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
_SERIES_BY_CHANGE = sa.select(Series.change_id, Series.id).where(
    in_param(Series.change_id, "changes")
)
_SERIES_BY_TITLE = (
    sa.select(Series.title_key, Series.author_email, Series.id)
    .where(in_param(Series.title_key, "titles"))
    .order_by(Series.updated_at.desc())
)
_PATCHES_OF_VERSIONS = sa.select(Patch.series_version_id, Patch.index, Patch.message_id).where(
    in_param(Patch.series_version_id, "versions")
)
# (message-id, series) of the messages that postings reply to, where those are a version's
# patch or cover letter. Two lookups, not one join on an OR: the OR made the planner scan
# every version.
_SERIES_OF_PARENTS = (
    sa.select(Message.msgid, SeriesVersion.series_id)
    .join(Patch, Patch.message_id == Message.id)
    .join(SeriesVersion, SeriesVersion.id == Patch.series_version_id)
    .where(in_param(Message.msgid, "parents")),
    sa.select(Message.msgid, SeriesVersion.series_id)
    .join(SeriesVersion, SeriesVersion.cover_message_id == Message.id)
    .where(in_param(Message.msgid, "parents")),
)
_SERIES_BY_ID = sa.select(
    *records.SERIES_COLUMNS,
    sa.select(sa.func.count()).where(SeriesVersion.series_id == Series.id).scalar_subquery(),
).where(in_param(Series.id, "ids"))
_VERSIONS_OF_THREADS = sa.select(SeriesVersion.id).where(
    in_param(SeriesVersion.thread_id, "threads")
)


@dataclass
class AssemblyResult:
    series_created: int = 0
    series_updated: int = 0


def _posting_parts(conn: sa.Connection, thread_ids: Iterable[int]) -> dict[int, list[Any]]:
    """Cover letters and patches of the threads, as rows, by thread."""
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
        self.new_series: dict[tuple[str, str], SeriesRecord] = {}  # ("change", id), (title, author)
        self.created: list[SeriesRecord] = []  # the new series, each once
        self.new_versions: list[VersionRecord] = []
        self.pending: dict[str, VersionRecord] = {}  # stored this run, by member message-id
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
        carriers = [rows[p.cover or p.patches[min(p.patches)]] for p in postings]
        by_change = conn.execute(
            _SERIES_BY_CHANGE, {"changes": list({c.change_id for c in carriers if c.change_id})}
        ).all()
        by_title = conn.execute(
            _SERIES_BY_TITLE, {"titles": list({title_key(p.title) for p in postings})}
        ).all()
        by_parent = self._series_of_parents(conn, carriers)
        self.series = self._read_series(conn, {r.series_id for r in version_rows}
                                        | {r[-1] for r in [*by_change, *by_title, *by_parent]})
        self.series_by_change: dict[str, SeriesRecord] = {}
        for change_id, series_id in by_change:
            self.series_by_change.setdefault(change_id, self.series[series_id])
        self.series_by_title: dict[tuple[str, str], SeriesRecord] = {}
        for key, author, series_id in by_title:
            self.series_by_title.setdefault((key, author), self.series[series_id])
        self.series_by_parent = {msgid: self.series[s] for msgid, s in by_parent}
        patches: dict[int, dict[int, int]] = defaultdict(dict)
        for version_id, index, message_id in conn.execute(
            _PATCHES_OF_VERSIONS, {"versions": list({r.id for r in version_rows})}
        ):
            patches[version_id][index] = message_id
        self.versions = {
            r.id: records.version_record(r._mapping, self.series[r.series_id], patches[r.id])
            for r in version_rows
        }
        self.by_anchor = {v.anchor_msgid: v for v in self.versions.values()}
        # Which version holds each message as a patch, as this run places them.
        self.holder = {m: v for v in self.versions.values() for m in v.patches.values()}

    @staticmethod
    def _series_of_parents(conn: sa.Connection, carriers: list[Any]) -> list[Any]:
        """(message-id, series) of the messages that postings reply to, where those are a
        version's patch or cover letter: a new version threaded under the old."""
        parents = list({p for c in carriers for p in [c.in_reply_to, *(c.references or [])] if p})
        found: list[Any] = []
        for version_of_parent in _SERIES_OF_PARENTS:
            found += conn.execute(version_of_parent, {"parents": parents})
        return found

    @staticmethod
    def _read_series(conn: sa.Connection, ids: set[int]) -> dict[int, SeriesRecord]:
        return {row.id: records.series_record(row._mapping, row[-1])
                for row in conn.execute(_SERIES_BY_ID, {"ids": list(ids)})}  # fmt: skip

    def all_series(self) -> list[SeriesRecord]:
        return [*self.series.values(), *self.created]

    def all_versions(self) -> list[VersionRecord]:
        return [*self.versions.values(), *self.new_versions]


def update_series(
    session: Session, posting_threads: Iterable[int], trailer_threads: Iterable[int] = ()
) -> AssemblyResult:
    """Re-derive the postings of `posting_threads`, store what changed, and rebuild the
    trailers of every version that changed or whose thread got review trailers."""
    conn = session.connection()
    result = AssemblyResult()
    touched: list[VersionRecord] = []
    found: list[tuple[int, Posting]] = []
    rows: dict[str, Any] = {}
    by_thread = _posting_parts(conn, posting_threads)
    shared = shared_ids(conn, by_thread)
    not_taken: list[int] = []  # copies of a shared Message-ID that no posting takes
    for thread_id, parts in by_thread.items():
        parts, notes, dropped = settle(parts, shared) if shared else (parts, {}, [])
        not_taken += dropped
        rows.update((r.msgid, r) for r in parts)
        postings = group_postings(thread_message(r._mapping) for r in parts)
        note_postings(postings, notes)
        found += [(thread_id, p) for p in postings]
    found = [(t, p) for t, p in found if p.patches]  # a cover letter alone is not a posting yet
    if found or not_taken:
        known = _Known(conn, [p for _, p in found], rows, not_taken)
        claims = _existing_versions([p for _, p in found], rows, known)
        known.claimed = {v for v in claims if v is not None}
        for (thread_id, posting), version in zip(found, claims, strict=True):
            if version is not None and _unchanged(version, posting, rows):
                continue
            created = version is None
            touched.append(_store_posting(thread_id, posting, rows, version, known))
            if created:
                result.series_created += 1
            else:
                result.series_updated += 1
        for message_id in not_taken:
            if (holder := known.holder.get(message_id)) is not None:
                _remove_patch(holder, message_id, known)  # a copy placed before the other came
        records.write(conn, known.all_series(), known.all_versions())
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
        and version.notes == posting.notes  # a Message-ID found shared since
    )


def _existing_versions(
    postings: list[Posting], rows: dict[str, Any], known: _Known
) -> list[VersionRecord | None]:
    """The stored version each posting continues, each version continued by one posting at
    most: the posting it is anchored by, else the one holding most of its messages. (A thread's
    postings can be split anew when a part arrives: a series sent twice without threading.)"""
    scores: list[tuple[tuple[bool, int], int, int]] = []  # (anchored, shared), posting, version
    for index, posting in enumerate(postings):
        anchored = known.by_anchor.get(posting.anchor)
        shared = Counter(
            v for m in posting.members
            if (v := known.version_of_message.get(rows[m].id)) is not None
        )  # fmt: skip
        if anchored is not None:
            assert anchored.id is not None
            scores.append(((True, shared[anchored.id]), index, anchored.id))
        scores += [((False, n), index, v) for v, n in shared.items()]
    chosen: list[int | None] = [None] * len(postings)
    taken: set[int] = set()
    for _, index, version_id in sorted(scores, key=lambda s: (s[0], -s[1]), reverse=True):
        if chosen[index] is None and version_id not in taken:
            chosen[index] = version_id
            taken.add(version_id)
    return [None if v is None else known.versions[v] for v in chosen]


def _anchor_for(posting: Posting, version: VersionRecord | None, known: _Known) -> str:
    """The posting's anchor, unless another version holds it: two threads hanging from one
    missing message (different References), which once failed the batch on the unique
    anchor. Its first patch names it then, as grouping names other postings hanging there."""
    holder = known.by_anchor.get(posting.anchor)
    if holder is None or holder is version:
        return posting.anchor
    return posting.patches[min(posting.patches)]


def _store_posting(
    thread_id: int,
    posting: Posting,
    rows: dict[str, Any],
    version: VersionRecord | None,
    known: _Known,
) -> VersionRecord:
    now = utcnow()
    if version is None:
        version = VersionRecord(
            series=None,
            anchor_msgid=_anchor_for(posting, version, known),
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
    version.anchor_msgid = _anchor_for(posting, version, known)
    known.by_anchor[version.anchor_msgid] = version
    cover = rows[posting.cover] if posting.cover else None
    if cover is not None and version.cover_message_id != cover.id:
        version.cover_message_id = cover.id
        _join_titled_series(version, cover.title, known)
    if version.thread_id is None:
        version.thread_id = thread_id
    carrier = cover or rows[posting.patches[min(posting.patches)]]  # b4 writes base-commit there
    version.version = posting.version
    version.title = posting.title or version.title
    version.rfc = any(rows[m].rfc for m in posting.members)
    version.resend = posting.resend
    version.prefixes = carrier.prefixes
    version.base_commit = carrier.base_commit or version.base_commit
    version.change_id = carrier.change_id or version.change_id
    version.notes = posting.notes
    if posting.date and (version.date is None or posting.date < version.date):
        version.date = posting.date
    version.updated_at = now
    if version.series is None:
        move(version, _find_or_create_series(version, carrier, known))
    _place_patches(version, posting, rows, known)
    indexes = set(version.patches)
    version.expected = max([posting.expected, *indexes])
    version.received = len(indexes)
    # a patch whose Message-ID other mails share, unresolved, is as good as missing
    version.ambiguous = ambiguous(posting.notes)
    version.complete = all(i in indexes for i in range(1, version.expected + 1)) and (
        not unresolved(posting.notes))
    known.pending.update((m, version) for m in posting.members)
    series = version.series
    assert series is not None
    series.changed = True
    newest = max((d for m in posting.members if (d := rows[m].date) is not None), default=now)
    if series.last_mail_at is None or newest > series.last_mail_at:
        series.last_mail_at = newest
    if version.change_id and not series.change_id:
        series.change_id = version.change_id
    return version


def _join_titled_series(version: VersionRecord, title: str, known: _Known) -> None:
    """A cover letter that came after its patches names the version: when the series made for
    the patches holds nothing else and the author has a series of that title, move it there."""
    alone = version.series
    if alone is None or alone.versions != 1:
        return
    key = (title_key(title), version.author_email)
    titled = known.new_series.get(key) or known.series_by_title.get(key)
    if titled is not None and titled is not alone:
        move(version, titled)  # `alone` is left with no version: it is deleted


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
        if owner.series is not None:
            owner.series.versions -= 1
            owner.series.changed = True
    else:
        owner.received = len(owner.patches)
        owner.complete = False


def _find_or_create_series(
    version: VersionRecord, carrier: Any, known: _Known
) -> SeriesRecord:
    """The series this posting is a version of: by change-id, by thread, or by title and author."""
    by_change = ("change", version.change_id or "")
    by_title = (title_key(version.title), version.author_email)
    if version.change_id:
        series = known.new_series.get(by_change) or known.series_by_change.get(version.change_id)
        if series is not None:
            return series
    # A new version threaded under the previous one.
    for parent in [carrier.in_reply_to, *reversed(carrier.references or [])]:
        earlier = known.pending.get(parent) if parent else None
        if earlier is not None and earlier.author_email == version.author_email:
            assert earlier.series is not None
            return earlier.series
        series = known.series_by_parent.get(parent) if parent else None
        if series is not None and series.author_email == version.author_email:
            return series
    series = known.new_series.get(by_title) or known.series_by_title.get(by_title)
    if series is not None:
        return series
    series = SeriesRecord(
        title=version.title,
        title_key=title_key(version.title),
        author_name=carrier.from_name,
        author_email=version.author_email,
        change_id=version.change_id,
        last_mail_at=None,
        versions=0,
    )
    known.created.append(series)
    known.new_series[by_title] = series
    if version.change_id:
        known.new_series[by_change] = series
    return series
