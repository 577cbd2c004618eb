"""When ingest refreshes the query planner's statistics: as the archive grows, not per mail.

Plans chosen on the statistics of a small database stop fitting a large one (the per-message
cost of ingest grew 30% at 100k messages when SQLite had none). Statistics are refreshed when
the messages stored since the last refresh reach as many as the database held then: a
backfill from nothing refreshes them about log2(size) times, a delivery of one mail never.
"""

from __future__ import annotations

import sqlalchemy as sa

from bot.db.models import Message
from bot.db.session import Database

MIN_GROWTH = 1000  # below this many new messages the statistics are left as they are


class StatisticsUpkeep:
    """Told how many messages each committed batch stored; runs `Database.optimize` when the
    database has grown enough since the last time."""

    def __init__(self, db: Database, min_growth: int = MIN_GROWTH) -> None:
        self.db = db
        self.min_growth = min_growth
        self.grown = 0  # messages stored since the last refresh (or the start)
        self.held: int | None = None  # messages the database held then; read when first needed
        self.refreshes = 0

    def stored(self, count: int) -> None:
        self.grown += count
        if self.grown < self.min_growth:
            return
        if self.held is None:
            with self.db.session() as session:
                top = session.scalar(sa.select(sa.func.max(Message.id))) or 0
            self.held = max(0, top - self.grown)
        if self.grown >= self.held:
            self.db.optimize()
            self.refreshes += 1
            self.held += self.grown
            self.grown = 0
