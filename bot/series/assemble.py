"""Keep series, series versions and patches in step with the stored messages.

Called by ingest, inside the batch's transaction, with the threads whose postings may have
changed (a cover letter or patch arrived, or threads were merged) and the threads that got review
trailers. Messages and the series built from them are committed together; re-running changes
nothing. Ingest speed depends on this module: it reads columns, not ORM objects, and it leaves a
posting alone when nothing about it changed.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, lazyload, selectinload

from bot.db.models import Message, Patch, Series, SeriesVersion, utcnow
from bot.series.grouping import Posting, ThreadMessage, group_postings, series_title
from bot.series.trailers import attribute_trailers

# Patches sent with `git format-patch --no-thread` arrive as separate threads; numbered patches of
# one author, version and size within this window are taken as one posting.
LOOSE_WINDOW = dt.timedelta(hours=1)

_POSTING_COLUMNS = (
    Message.id, Message.msgid, Message.in_reply_to, Message.references, Message.thread_id,
    Message.from_email, Message.from_name, Message.date, Message.kind, Message.version,
    Message.version_explicit, Message.counter, Message.total, Message.resend, Message.rfc,
    Message.title, Message.prefixes, Message.base_commit, Message.change_id,
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


def _as_thread_message(row: Any) -> ThreadMessage:
    return ThreadMessage(
        msgid=row.msgid,
        in_reply_to=row.in_reply_to,
        references=tuple(row.references or ()),
        author=row.from_email,
        author_name=row.from_name,
        date=row.date,
        kind=row.kind,
        version=row.version,
        version_explicit=row.version_explicit,
        counter=row.counter,
        total=row.total,
        resend=row.resend,
        title=row.title,
    )


class _Known:
    """What the database holds for a set of postings, fetched in a few queries up front, and
    what this run has added but not flushed yet. Per-posting queries made ingest ten times
    slower than parsing."""

    def __init__(self, session: Session, postings: list[Posting], rows: dict[str, Any]) -> None:
        self.new_series: dict[tuple[str, str], Series] = {}  # by ("change", id) or (title, author)
        self.pending: dict[str, SeriesVersion] = {}  # stored this run, by member message-id
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
    for thread_id, parts in _posting_parts(session, posting_threads).items():
        rows.update((r.msgid, r) for r in parts)
        found += [(thread_id, p) for p in group_postings(_as_thread_message(r) for r in parts)]
    found = [(t, p) for t, p in found if p.patches]  # a cover letter alone is not a posting yet
    known = _Known(session, [p for _, p in found], rows)
    # One flush at the end, not one per posting: a flush costs a few statements however small.
    with session.no_autoflush:
        for thread_id, posting in found:
            version = _existing_version(session, posting, rows, known)
            if version is not None and _unchanged(version, posting, rows):
                continue
            created = version is None
            version = _store_posting(session, thread_id, posting, rows, version, known)
            touched.append(version)
            if created:
                result.series_created += 1
            else:
                result.series_updated += 1
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
    )


def _existing_version(
    session: Session, posting: Posting, rows: dict[str, Any], known: _Known
) -> SeriesVersion | None:
    version = known.by_anchor.get(posting.anchor)
    if version is not None:
        return version
    for msgid in posting.members:
        version_id = known.version_of_message.get(rows[msgid].id)
        if version_id is not None:
            return session.get(SeriesVersion, version_id, options=[_PATCHES])
    if posting.loose and posting.date is not None:
        # Unthreaded patches: another part of the same posting may be in another thread.
        _flush(session)
        candidates = session.scalars(
            sa.select(SeriesVersion)
            .options(_PATCHES)
            .where(
                SeriesVersion.author_email == posting.author,
                SeriesVersion.version == posting.version,
                SeriesVersion.expected == posting.expected,
                SeriesVersion.cover_message_id.is_(None),
                SeriesVersion.complete.is_(False),
                SeriesVersion.date.between(
                    posting.date - LOOSE_WINDOW, posting.date + LOOSE_WINDOW
                ),
            )
        )
        for candidate in candidates:
            if not {p.index for p in candidate.patches} & set(posting.patches):
                return candidate
    return None


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
            anchor_msgid=posting.anchor,
            thread_id=thread_id,
            version=posting.version,
            title=posting.title,
            author_email=posting.author,
            expected=posting.expected,
            date=posting.date,
        )
        session.add(version)
    # The anchor names the posting as it now stands: a cover letter that arrived late takes over.
    version.anchor_msgid = posting.anchor
    cover = rows[posting.cover] if posting.cover else None
    if cover is not None:
        version.cover_message_id = cover.id
    if version.thread_id is None:
        version.thread_id = thread_id
    _place_patches(session, version, posting, rows, known)
    carrier = cover or rows[posting.patches[min(posting.patches)]]  # b4 writes base-commit there
    indexes = {p.index for p in version.patches}
    version.version = posting.version
    version.title = posting.title or version.title
    version.expected = max([posting.expected, *indexes])
    version.received = len(indexes)
    version.complete = all(i in indexes for i in range(1, version.expected + 1))
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
                _remove_patch(session, old)
        if patch is not None:
            # The message that held this place is no longer part of this posting: forget where
            # it was, so that its own posting (later in this run) gets a version of its own.
            known.version_of_message.pop(patch.message_id, None)
            patch.message_id = message_id
        else:
            version.patches.append(Patch(index=index, message_id=message_id))
        known.version_of_message.pop(message_id, None)


def _remove_patch(session: Session, patch: Patch) -> None:
    owner = patch.version
    owner.patches.remove(patch)
    _flush(session)
    if not owner.patches:
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
