"""Keep series, series versions and patches in step with the stored messages.

Called by ingest, inside the batch's transaction, with the threads whose postings may have
changed (a cover letter or patch arrived, or threads were merged) and the threads that got review
trailers. Messages and the series built from them are committed together; re-running changes
nothing. Ingest speed depends on this module: it reads columns, not ORM objects, and it leaves a
posting alone when nothing about it changed.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, lazyload, selectinload

from bot.db.models import Message, Patch, Series, SeriesVersion, utcnow
from bot.series.grouping import Posting, group_postings, series_title
from bot.series.parts import thread_message
from bot.series.shared_ids import ambiguous, note_postings, settle, shared_ids, unresolved
from bot.series.trailers import attribute_trailers

_POSTING_COLUMNS = (
    Message.id, Message.msgid, Message.in_reply_to, Message.references, Message.thread_id,
    Message.from_email, Message.from_name, Message.date, Message.kind, Message.version,
    Message.version_explicit, Message.counter, Message.total, Message.resend, Message.rfc,
    Message.title, Message.prefixes, Message.base_commit, Message.change_id,
    Message.claimed_msgid,
)  # fmt: skip


@dataclass
class AssemblyResult:
    series_created: int = 0
    series_updated: int = 0


# Patch.message is loaded joined by default, and with it each message's raw mail (decompressed)
# and its lists; assembly needs only Patch.message_id.
_PATCHES = selectinload(SeriesVersion.patches).options(lazyload(Patch.message))

_NOT_WORD = re.compile(r"[^a-z0-9]+")


def title_key(title: str) -> str:
    """A title normalised for matching versions: case, punctuation and spacing ignored."""
    return _NOT_WORD.sub(" ", title.lower()).strip()[:500]


def _chunks(items: Iterable[Any], size: int = 500) -> Iterable[list[Any]]:
    items = sorted(set(items))
    return (items[i : i + size] for i in range(0, len(items), size))


def _posting_parts(session: Session, thread_ids: Iterable[int]) -> dict[int, list[Any]]:
    """Cover letters and patches of the threads, as rows, by thread."""
    out: dict[int, list[Any]] = defaultdict(list)
    for chunk in _chunks(thread_ids):
        query = sa.select(*_POSTING_COLUMNS).where(
            Message.thread_id.in_(chunk), Message.kind.in_(("cover", "patch"))
        )
        for row in session.execute(query):
            out[row.thread_id].append(row)
    return out


class _Known:
    """What the database holds for a set of postings, fetched in a few queries up front, and
    what this run has added but not flushed yet. Per-posting queries made ingest ten times
    slower than parsing."""

    def __init__(self, session: Session, postings: list[Posting], rows: dict[str, Any]) -> None:
        self.new_series: dict[tuple[str, str], Series] = {}  # by ("change", id) or (title, author)
        self.pending: dict[str, SeriesVersion] = {}  # stored this run, by member message-id
        self.claimed: set[int] = set()  # versions a posting of this run continues: kept
        anchors = [p.anchor for p in postings]
        member_ids = [rows[m].id for p in postings for m in p.members]
        self.by_anchor: dict[str, SeriesVersion] = {}
        for chunk in _chunks(anchors):
            for version in session.scalars(
                sa.select(SeriesVersion)
                .where(SeriesVersion.anchor_msgid.in_(chunk))
                .options(_PATCHES)
            ):
                self.by_anchor[version.anchor_msgid] = version
        self.version_of_message: dict[int, int] = {}
        for chunk in _chunks(member_ids):
            self.version_of_message.update(
                session.execute(
                    sa.select(Patch.message_id, Patch.series_version_id).where(
                        Patch.message_id.in_(chunk)
                    )
                ).all()
            )
            self.version_of_message.update(
                session.execute(
                    sa.select(SeriesVersion.cover_message_id, SeriesVersion.id).where(
                        SeriesVersion.cover_message_id.in_(chunk)
                    )
                ).all()
            )
        carriers = [rows[p.cover or p.patches[min(p.patches)]] for p in postings]
        self.series_by_change: dict[str, Series] = {}
        for chunk in _chunks(c.change_id for c in carriers if c.change_id):
            for series in session.scalars(sa.select(Series).where(Series.change_id.in_(chunk))):
                self.series_by_change.setdefault(series.change_id, series)  # type: ignore[arg-type]
        self.series_by_title: dict[tuple[str, str], Series] = {}
        for chunk in _chunks(title_key(p.title) for p in postings):
            for series in session.scalars(
                sa.select(Series)
                .where(Series.title_key.in_(chunk))
                .order_by(Series.updated_at.desc())
            ):
                self.series_by_title.setdefault((series.title_key, series.author_email), series)
        # Series of the messages that postings reply to: a new version threaded under the old.
        # Two lookups (parent is a patch, parent is a cover letter), not one join on an OR:
        # the OR made the planner scan every version.
        self.series_by_parent: dict[str, Series] = {}
        parents = {p for c in carriers for p in [c.in_reply_to, *(c.references or [])] if p}
        for chunk in _chunks(parents):
            for version_of_parent in (
                sa.select(Message.msgid, Series)
                .join(Patch, Patch.message_id == Message.id)
                .join(SeriesVersion, SeriesVersion.id == Patch.series_version_id),
                sa.select(Message.msgid, Series)
                .join(SeriesVersion, SeriesVersion.cover_message_id == Message.id),
            ):
                query = version_of_parent.join(Series, Series.id == SeriesVersion.series_id)
                for msgid, series in session.execute(query.where(Message.msgid.in_(chunk))):
                    self.series_by_parent[msgid] = series


def update_series(
    session: Session, posting_threads: Iterable[int], trailer_threads: Iterable[int] = ()
) -> AssemblyResult:
    """Re-derive the postings of `posting_threads`, store what changed, and rebuild the
    trailers of every version that changed or whose thread got review trailers."""
    result = AssemblyResult()
    touched: list[SeriesVersion] = []
    found: list[tuple[int, Posting]] = []
    rows: dict[str, Any] = {}
    by_thread = _posting_parts(session, posting_threads)
    shared = shared_ids(session, by_thread)
    not_taken: list[int] = []  # copies of a shared Message-ID that no posting takes
    for thread_id, parts in by_thread.items():
        parts, notes, dropped = settle(parts, shared) if shared else (parts, {}, [])
        not_taken += dropped
        rows.update((r.msgid, r) for r in parts)
        postings = group_postings(thread_message(r._mapping) for r in parts)
        note_postings(postings, notes)
        found += [(thread_id, p) for p in postings]
    found = [(t, p) for t, p in found if p.patches]  # a cover letter alone is not a posting yet
    known = _Known(session, [p for _, p in found], rows)
    # One flush at the end, not one per posting: a flush costs a few statements however small.
    with session.no_autoflush:
        claims = _existing_versions(session, [p for _, p in found], rows, known)
        known.claimed = {v.id for v in claims if v is not None}
        for (thread_id, posting), version in zip(found, claims, strict=True):
            if version is not None and _unchanged(version, posting, rows):
                continue
            created = version is None
            version = _store_posting(session, thread_id, posting, rows, version, known)
            touched.append(version)
            if created:
                result.series_created += 1
            else:
                result.series_updated += 1
    for patch in session.scalars(sa.select(Patch).where(Patch.message_id.in_(not_taken))):
        _remove_patch(session, patch, known)  # a copy placed before the other arrived
    _flush(session)
    trailer_versions = {v.id for v in touched}
    for chunk in _chunks(trailer_threads):
        trailer_versions |= set(
            session.scalars(sa.select(SeriesVersion.id).where(SeriesVersion.thread_id.in_(chunk)))
        )
    if trailer_versions:
        attribute_trailers(session, trailer_versions)
    return result


def _flush(session: Session) -> None:
    """Flush, with the new rows numbered first: every flush here goes through this."""
    with session.no_autoflush:
        _number_new_rows(session)
    session.flush()


def _number_new_rows(session: Session) -> None:
    """Give new series, versions and patches their ids before the flush, on SQLite.

    With ids to send, the ORM inserts each table's rows in one executemany; without, it sends
    them one statement per row to read each id back. The batch's transaction holds SQLite's
    write lock, so the next ids are ours; they are numbered in the order the rows were added,
    as the database would. PostgreSQL already batches RETURNING, so it is left as it is.
    """
    if session.get_bind().dialect.name != "sqlite":
        return
    new: dict[type, list[Any]] = defaultdict(list)
    for obj in session.new:
        if isinstance(obj, (Series, SeriesVersion, Patch)) and obj.id is None:
            new[type(obj)].append(obj)
    for cls, objs in new.items():
        top = session.scalar(sa.select(sa.func.max(cls.id))) or 0
        objs.sort(key=lambda obj: sa.inspect(obj).insert_order)
        for number, obj in enumerate(objs, start=top + 1):
            obj.id = number


def _unchanged(version: SeriesVersion, posting: Posting, rows: dict[str, Any]) -> bool:
    cover_id = rows[posting.cover].id if posting.cover else None
    return (
        version.cover_message_id == cover_id
        and version.version == posting.version
        and {p.index: p.message_id for p in version.patches}
        == {i: rows[m].id for i, m in posting.patches.items()}
        and version.notes == posting.notes  # a Message-ID found shared since
    )


def _existing_versions(
    session: Session, postings: list[Posting], rows: dict[str, Any], known: _Known
) -> list[SeriesVersion | None]:
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
            scores.append(((True, shared[anchored.id]), index, anchored.id))
        scores += [((False, n), index, v) for v, n in shared.items()]
    chosen: list[int | None] = [None] * len(postings)
    taken: set[int] = set()
    for _, index, version_id in sorted(scores, key=lambda s: (s[0], -s[1]), reverse=True):
        if chosen[index] is None and version_id not in taken:
            chosen[index] = version_id
            taken.add(version_id)
    return [
        None if v is None else session.get(SeriesVersion, v, options=[_PATCHES]) for v in chosen
    ]


def _anchor_for(posting: Posting, version: SeriesVersion | None, known: _Known) -> str:
    """The posting's anchor, unless another version holds it: two threads hanging from one
    missing message (different References), which once failed the batch on the unique
    anchor. Its first patch names it then, as grouping names other postings hanging there."""
    holder = known.by_anchor.get(posting.anchor)
    if holder is None or holder is version:
        return posting.anchor
    return posting.patches[min(posting.patches)]


def _store_posting(
    session: Session,
    thread_id: int,
    posting: Posting,
    rows: dict[str, Any],
    version: SeriesVersion | None,
    known: _Known,
) -> SeriesVersion:
    if version is None:
        version = SeriesVersion(
            anchor_msgid=_anchor_for(posting, version, known),
            thread_id=thread_id,
            version=posting.version,
            title=posting.title,
            author_email=posting.author,
            expected=posting.expected,
            date=posting.date,
        )
        session.add(version)
    # The anchor names the posting as it now stands: a cover letter that arrived late takes over.
    version.anchor_msgid = _anchor_for(posting, version, known)
    known.by_anchor[version.anchor_msgid] = version
    cover = rows[posting.cover] if posting.cover else None
    if cover is not None and version.cover_message_id != cover.id:
        version.cover_message_id = cover.id
        _join_titled_series(session, version, cover.title, known)
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
    version.updated_at = utcnow()
    if version.series is None:
        version.series = _find_or_create_series(session, version, carrier, known)
    # With its series: moving a patch here from another version flushes this one.
    _place_patches(session, version, posting, rows, known)
    indexes = {p.index for p in version.patches}
    version.expected = max([posting.expected, *indexes])
    version.received = len(indexes)
    # a patch whose Message-ID other mails share, unresolved, is as good as missing
    version.ambiguous = ambiguous(posting.notes)
    version.complete = all(i in indexes for i in range(1, version.expected + 1)) and (
        not unresolved(posting.notes))
    known.pending.update((m, version) for m in posting.members)
    series = version.series
    series.updated_at = utcnow()
    newest = max((d for m in posting.members if (d := rows[m].date) is not None),
                 default=series.updated_at)
    if series.last_mail_at is None or newest > series.last_mail_at:
        series.last_mail_at = newest
    series.title = series_title(
        (v.version, v.cover_message_id is not None, v.date, v.title) for v in series.versions
    )
    series.title_key = title_key(series.title)
    if version.change_id and not series.change_id:
        series.change_id = version.change_id
    return version


def _join_titled_series(
    session: Session, version: SeriesVersion, title: str, known: _Known
) -> None:
    """A cover letter that came after its patches names the version: when the series made for
    the patches holds nothing else and the author has a series of that title, move it there."""
    alone = version.series
    if alone is None or len(alone.versions) != 1:
        return
    key = (title_key(title), version.author_email)
    titled = known.new_series.get(key) or known.series_by_title.get(key)
    if titled is not None and titled is not alone:
        version.series = titled
        session.delete(alone)


def _place_patches(
    session: Session, version: SeriesVersion, posting: Posting, rows: dict[str, Any], known: _Known
) -> None:
    current = {p.index: p for p in version.patches}
    for index, msgid in posting.patches.items():
        message_id = rows[msgid].id
        patch = current.get(index)
        if patch is not None and patch.message_id == message_id:
            continue
        if message_id in known.version_of_message:
            # Placed in another posting before its parents arrived: move it here. Flush first:
            # this run may already have moved it, and the query must see that, not the old row.
            _flush(session)
            old = session.scalar(
                sa.select(Patch)
                .options(lazyload(Patch.message))
                .where(Patch.message_id == message_id)
            )
            if old is not None:
                _remove_patch(session, old, known)
        if patch is not None:
            # The message that held this place is no longer part of this posting: forget where
            # it was, so that its own posting (later in this run) gets a version of its own.
            known.version_of_message.pop(patch.message_id, None)
            patch.message_id = message_id
        else:
            version.patches.append(Patch(index=index, message_id=message_id))
        known.version_of_message.pop(message_id, None)


def _remove_patch(session: Session, patch: Patch, known: _Known) -> None:
    owner = patch.version
    owner.patches.remove(patch)
    _flush(session)
    if not owner.patches and owner.id not in known.claimed:  # a claimed one gets patches next
        series = owner.series
        session.delete(owner)
        _flush(session)
        if series is not None and not series.versions:
            session.delete(series)
    else:
        owner.received = len(owner.patches)
        owner.complete = False


def _find_or_create_series(
    session: Session, version: SeriesVersion, carrier: Any, known: _Known
) -> Series:
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
            return earlier.series
        series = known.series_by_parent.get(parent) if parent else None
        if series is not None and series.author_email == version.author_email:
            return series
    series = known.new_series.get(by_title) or known.series_by_title.get(by_title)
    if series is not None:
        return series
    series = Series(
        title=version.title,
        title_key=title_key(version.title),
        author_name=carrier.from_name,
        author_email=version.author_email,
        change_id=version.change_id,
    )
    session.add(series)
    known.new_series[by_title] = series
    if version.change_id:
        known.new_series[by_change] = series
    return series
