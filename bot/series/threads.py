"""Threads: messages joined by In-Reply-To/References, robust to missing and late parents.

A thread is named by its root message-id, which may be a message never seen. When a message
arrives that connects two threads (a parent that came late), the threads are merged.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Message, SeriesVersion, Thread


class ThreadIndex:
    """Assigns threads to a batch of new messages, looking up known ones in the database."""

    def __init__(self, session: Session, msgids: Sequence[str], related: Sequence[str]) -> None:
        self.session = session
        wanted = set(msgids) | set(related)
        self.thread_of: dict[str, int] = {}
        self.by_root: dict[str, int] = {}
        for chunk in _chunks(sorted(wanted)):
            for msgid, thread_id in session.execute(
                sa.select(Message.msgid, Message.thread_id).where(Message.msgid.in_(chunk))
            ):
                if thread_id is not None:
                    self.thread_of[msgid] = thread_id
            for root, thread_id in session.execute(
                sa.select(Thread.root_msgid, Thread.id).where(Thread.root_msgid.in_(chunk))
            ):
                self.by_root[root] = thread_id
        self.touched: set[int] = set()
        self.merged: set[int] = set()  # threads that absorbed others: their postings may join

    def assign(self, msgid: str, in_reply_to: str | None, references: Sequence[str]) -> int:
        """The thread for a new message (created or merged as needed)."""
        related = list(references) + ([in_reply_to] if in_reply_to else [])
        found = {self.thread_of[r] for r in related if r in self.thread_of}
        found |= {self.by_root[r] for r in [msgid, *related] if r in self.by_root}
        if not found:
            root = references[0] if references else (in_reply_to or msgid)
            thread_id = self.session.execute(
                sa.insert(Thread).values(root_msgid=root).returning(Thread.id)
            ).scalar_one()
            self.by_root[root] = thread_id
        else:
            thread_id = min(found)
            others = found - {thread_id}
            if others:
                self._merge(thread_id, others)
        self.thread_of[msgid] = thread_id
        self.touched.add(thread_id)
        return thread_id

    def _merge(self, keep: int, others: set[int]) -> None:
        s = self.session
        s.execute(sa.update(Message).where(Message.thread_id.in_(others)).values(thread_id=keep))
        s.execute(
            sa.update(SeriesVersion)
            .where(SeriesVersion.thread_id.in_(others))
            .values(thread_id=keep)
        )
        s.execute(sa.delete(Thread).where(Thread.id.in_(others)))
        for table in (self.thread_of, self.by_root):
            for key, value in table.items():
                if value in others:
                    table[key] = keep
        self.touched -= others
        self.touched.add(keep)
        self.merged -= others
        self.merged.add(keep)


def _chunks(items: list[str], size: int = 500) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
