"""Threads: messages joined by In-Reply-To/References, robust to missing and late parents.

A thread is named by its root message-id, which may be a message never seen. A thread is what
the threading headers connect, whatever the order of arrival: a message joins the threads of
every message it names and of every message that named it before it came. Mail clients trim
References, drop them, or reply from another view of the thread, so a reply stored before its
parent may name another root than the parent does; the ids that stored mail names but that no
stored message has are kept with their threads (`UnseenMessage`) for this. When a message
arrives that connects two threads (a parent that came late), the threads are merged.

A series sent without threading headers (`git format-patch` without `--thread`) is one thread
too: an unthreaded cover letter or patch joins the threads of its kin (`bot.series.unthreaded`),
looked up among the stored messages of the same hour and the batch's own.

Threads new in a batch get provisional ids, above every real one and in creation order, and are
inserted together by `store_new` (one INSERT per new thread cost 6% of the ingest process); their
real ids keep that order, so which thread survives a merge does not depend on it.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Message, SeriesVersion, Thread, UnseenMessage
from bot.db.value_lists import in_param, insert_tuples, sqlite_inserted_ids
from bot.series import rewritten_ids, unthreaded
from bot.series.parts import HAS_DIFF, ThreadMessage, thread_message
from bot.series.reused_ids import ReusedIds

_PROVISIONAL = 1 << 62  # provisional ids start here: above any real id
_THREADS = Thread.__table__
# The statements a batch sends, built once: the lists they look up are their parameters.
_THREADS_OF_MESSAGES = sa.select(Message.msgid, Message.thread_id).where(
    in_param(Message.msgid, "msgids")
)
_THREADS_BY_ROOT = sa.select(Thread.root_msgid, Thread.id).where(
    in_param(Thread.root_msgid, "roots")
)
_UNSEEN = UnseenMessage.__table__
_THREADS_OF_UNSEEN = sa.select(_UNSEEN.c.msgid, _UNSEEN.c.thread_id).where(
    in_param(_UNSEEN.c.msgid, "msgids")
)
_ARRIVED = sa.delete(_UNSEEN).where(in_param(_UNSEEN.c.msgid, "msgids"))


class ThreadIndex:
    """Assigns threads to a batch of new messages, looking up known ones in the database."""

    def __init__(
        self,
        session: Session,
        msgids: Sequence[str],
        related: Sequence[str],
        unthreaded_parts: Sequence[ThreadMessage] = (),
        claimed: Iterable[str] = (),
        run_parts: Sequence[ThreadMessage] = (),
    ) -> None:
        """`msgids`: the batch's messages, none of them stored yet (`copies.sort_out` sorted
        out those that are); `related`: the ids they refer to; `unthreaded_parts`: the batch's
        messages that `unthreaded.is_unthreaded_part`; `claimed`: the ids the batch's copies
        claim (`bot.ingest.copies`), which `reused` then knows; `run_parts`: the batch's
        messages that `rewritten_ids.window` places (parts of a `git send-email` run whose
        ids may have been rewritten)."""
        self.session = session
        conn = session.connection()
        new = set(msgids)
        # Only the messages referred to can be stored; any of them may name a thread.
        referred = list(set(related) - new)
        self.thread_of: dict[str, int] = {}
        self.stored: set[str] = set()  # of those, the ones stored
        for msgid, thread_id in conn.execute(_THREADS_OF_MESSAGES, {"msgids": referred}):
            self.stored.add(msgid)
            if thread_id is not None:
                self.thread_of[msgid] = thread_id
        # Ids several mails carry: a reply names the one it could answer (`reused_ids`)
        self.reused = ReusedIds()
        self.thread_of.update(self.reused.load(conn, self.stored, set(claimed)))
        # The first mails of runs whose ids a server rewrote, by the id their runs gave them
        # (`rewritten_ids`: a run's later parts may name patch 1, and patch 1 the cover letter),
        # and those ids by the mail.
        self.first_mail: dict[str, list[str]] = defaultdict(list)
        self.run_ids: dict[str, list[str]] = defaultdict(list)
        if run_parts:
            self._find_first_mails(conn, run_parts, new)
        # Ids named before but not stored, the batch's own among them: every thread root that
        # is no stored message is one (a root is the first id its thread's first mail named).
        self.unseen: dict[str, int] = dict(
            conn.execute(_THREADS_OF_UNSEEN,
                         {"msgids": list(new | set(related) | set(self.first_mail))}).all()
        )
        self.recorded = set(self.unseen)  # those with a row
        self.arrived = [msgid for msgid in self.recorded if msgid in new]  # rows to delete
        self.touched: set[int] = set()
        self.merged: set[int] = set()  # threads that absorbed others: their postings may join
        self.new_roots: dict[int, str] = {}  # provisional id -> root, in creation order
        self._next_id = itertools.count(_PROVISIONAL)
        self.parts = {m.msgid: m for m in unthreaded_parts}
        # Unthreaded parts with a thread (stored, or assigned in this batch), by prefix.
        self.placed: dict[unthreaded.PrefixKey, list[ThreadMessage]] = defaultdict(list)
        for part, thread_id in _stored_unthreaded(conn, self.parts.values()):
            self.thread_of.setdefault(part.msgid, thread_id)
            self.placed[unthreaded.prefix_key(part)].append(part)

    def assign(self, msgid: str, in_reply_to: str | None, references: Sequence[str],
               date: dt.datetime | None = None) -> int:
        """The thread for a new message (created or merged as needed)."""
        related = list(references) + ([in_reply_to] if in_reply_to else [])
        if self.first_mail:
            related += [mail for r in related for mail in self.first_mail.get(r, ())]
        # most batches name no id that several mails carry: then each names its one mail
        answered = ([self.reused.answered(r, date) for r in related] if self.reused.carriers
                    else related)
        found = {self.thread_of[r] for r in answered if r in self.thread_of}
        names = [msgid, *related, *self.run_ids.get(msgid, ())]
        found |= {self.unseen[r] for r in names if r in self.unseen}
        part = self.parts.get(msgid)
        if part is not None:
            kin = self.placed[unthreaded.prefix_key(part)]
            found |= {self.thread_of[k.msgid] for k in kin if unthreaded.joins_threads(part, k)}
            kin.append(part)
        if not found:
            thread_id = next(self._next_id)
            self.new_roots[thread_id] = references[0] if references else (in_reply_to or msgid)
        else:
            thread_id = min(found)
            others = found - {thread_id}
            if others:
                self._merge(thread_id, others)
        self.thread_of[msgid] = thread_id
        for r in related:
            if r not in self.thread_of and r not in self.stored:
                self.unseen[r] = thread_id
        self.touched.add(thread_id)
        return thread_id

    def _find_first_mails(
        self, conn: sa.Connection, run_parts: Sequence[ThreadMessage], new: set[str]
    ) -> None:
        """Pair the ids of runs' first mails that the batch's parts name, or that stored parts
        named before the batch's first mails came, with those mails (`rewritten_ids`)."""
        # Parts whose run's id is here name no rewritten one; a first mail may reply to anything.
        run_parts = [p for p in run_parts if rewritten_ids.may_be_first(p)
                     or p.hook not in new and p.hook not in self.stored]
        windows = [w for p in run_parts if (w := rewritten_ids.window(p)) is not None]
        if not windows:
            return
        stored = _stored_within(conn, _STORED_SERIES_PARTS, windows)
        candidates = [*run_parts, *(part for part, _ in stored)]
        hanging: dict[str, list[ThreadMessage]] = defaultdict(list)
        for part in candidates:
            if part.hook and rewritten_ids.run_start(part.hook) and part.hook not in new:
                hanging[part.hook].append(part)
        # An id stored parts named may have arrived since: it is no rewritten one then.
        named = [run_id for run_id in hanging if run_id not in self.stored]
        arrived = {msgid for msgid, _ in conn.execute(_THREADS_OF_MESSAGES, {"msgids": named})
                   } if named else set()
        for run_id, parts in hanging.items():
            if run_id in self.stored or run_id in arrived:
                continue
            # every mail the parts name, so that the threads joined do not depend on which
            # part of the run came first
            mails = {m.msgid for p in parts
                     if (m := rewritten_ids.first_mail(run_id, p, candidates)) is not None}
            for msgid in sorted(mails):
                self.first_mail[run_id].append(msgid)
                self.run_ids[msgid].append(run_id)
        self.thread_of.update(
            (part.msgid, thread_id) for part, thread_id in stored
            if part.msgid in self.run_ids
        )  # fmt: skip

    def store_new(self) -> None:
        """Insert the batch's new threads and put their real ids everywhere in this index; store
        the ids the batch named that no message has, and forget those it brought.

        Call after the last `assign` and before anything stores a thread id."""
        if self.new_roots:
            self._insert_threads()
        conn = self.session.connection()
        if self.arrived:
            conn.execute(_ARRIVED, {"msgids": self.arrived})
        insert_tuples(conn, _UNSEEN, ("msgid", "thread_id"), [
            (msgid, thread_id) for msgid, thread_id in self.unseen.items()
            if msgid not in self.thread_of and msgid not in self.recorded
        ])  # fmt: skip

    def _insert_threads(self) -> None:
        roots = list(self.new_roots.values())
        conn = self.session.connection()
        conn.execute(sa.insert(_THREADS), [{"root_msgid": root} for root in roots])
        real: dict[str, int]
        if conn.dialect.name == "sqlite":
            real = dict(zip(roots, sqlite_inserted_ids(conn, len(roots)), strict=True))
        else:
            real = dict(conn.execute(_THREADS_BY_ROOT, {"roots": roots}).all())
        ids = {provisional: real[root] for provisional, root in self.new_roots.items()}
        for table in (self.thread_of, self.unseen):
            for key, value in table.items():
                if value >= _PROVISIONAL:
                    table[key] = ids[value]
        self.touched = {ids.get(t, t) for t in self.touched}
        self.merged = {ids.get(t, t) for t in self.merged}
        self.new_roots = {}

    def _merge(self, keep: int, others: set[int]) -> None:
        # Provisional threads have no rows yet: dropping them is all a merge takes.
        stored = {t for t in others if t < _PROVISIONAL}
        for t in others - stored:
            del self.new_roots[t]
        if stored:
            conn = self.session.connection()
            merged = {"keep": keep, "stored": list(stored)}
            for statement in _MERGE:
                conn.execute(statement, merged)
        for table in (self.thread_of, self.unseen):
            for key, value in table.items():
                if value in others:
                    table[key] = keep
        self.touched -= others
        self.touched.add(keep)
        self.merged -= others
        self.merged.add(keep)


_MESSAGES = Message.__table__
_VERSIONS = SeriesVersion.__table__
# Merging threads: the others' messages, versions and unseen ids go to the one kept, their
# rows go.
_MERGE = (
    sa.update(_MESSAGES).where(in_param(_MESSAGES.c.thread_id, "stored"))
    .values(thread_id=sa.bindparam("keep")),
    sa.update(_UNSEEN).where(in_param(_UNSEEN.c.thread_id, "stored"))
    .values(thread_id=sa.bindparam("keep")),
    sa.update(_VERSIONS).where(in_param(_VERSIONS.c.thread_id, "stored"))
    .values(thread_id=sa.bindparam("keep")),
    sa.delete(_THREADS).where(in_param(_THREADS.c.id, "stored")),
)  # fmt: skip


def _stored_unthreaded(
    conn: sa.Connection, parts: Iterable[ThreadMessage]
) -> list[tuple[ThreadMessage, int]]:
    """Stored unthreaded parts within `unthreaded.WINDOW` of `parts`, with their threads."""
    windows = [(p.date - unthreaded.WINDOW, p.date + unthreaded.WINDOW)
               for p in parts if p.date is not None]
    return [(part, thread_id) for part, thread_id in _stored_within(conn, _STORED_PARTS, windows)
            if unthreaded.is_unthreaded_part(part)]


def _stored_within(
    conn: sa.Connection, query: sa.Select, windows: Iterable[tuple[dt.datetime, dt.datetime]]
) -> list[tuple[ThreadMessage, int]]:
    """The stored messages `query` selects dated within any of `windows`, with their threads:
    one query per stretch of time the windows cover (on the date index)."""
    spans: list[list[dt.datetime]] = []
    for start, end in sorted(windows):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    found: list[tuple[ThreadMessage, int]] = []
    for start, end in spans:
        for row in conn.execute(query, {"start": start, "end": end}):
            if row.thread_id is not None:
                found.append((thread_message(row._mapping), row.thread_id))
    return found


_PART_COLUMNS = (
    Message.msgid, Message.in_reply_to, Message.references, Message.thread_id,
    Message.from_email, Message.from_name, Message.date, Message.kind, Message.version,
    Message.version_explicit, Message.counter, Message.total, Message.resend, Message.rfc,
    Message.title, Message.prefixes, Message.patch_fingerprint, HAS_DIFF,
)  # fmt: skip
_STORED_SERIES_PARTS = sa.select(*_PART_COLUMNS).where(
    Message.date.between(sa.bindparam("start"), sa.bindparam("end")),
    Message.kind.in_(("cover", "patch")),
    Message.total > 1,
)
_STORED_PARTS = _STORED_SERIES_PARTS.where(Message.in_reply_to.is_(None))
