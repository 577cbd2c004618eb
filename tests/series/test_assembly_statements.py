"""Assembly's cost per batch, on SQLite and PostgreSQL: the statements that read and write
series, versions and patches do not grow with the number of postings a batch changes (ingest
speed depends on it: one statement per posting made storing slower than parsing)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import IngestSettings
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_series, make_tree
from tests.series.mailing import all_series, store
from tests.support.statements import statements

# Statements on the tables assembly writes (others, such as a test database made in the
# background, are not counted).
SERIES_TABLES = re.compile(r"\b(series|series_versions|patches)\b")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def cover_letters_late(db: Database, tree: Path, count: int, topic: str) -> int:
    """Store `count` series' patches, then their cover letters in one batch (each posting
    changes: a stored version gets its cover letter and title); the statements on the series
    tables that the second batch sent. Each series has an author of its own: two of one
    author whose first patches share a subject are one series until their cover letters come,
    and then two (a series more to insert)."""
    settings = IngestSettings(batch_size=1000, parse_workers=0)
    posted = [make_series(tree, SeriesSpec(title=f"mm/{topic}: part {n} of the work", patches=2,
                                           author=(f"Dev {n}", f"{topic}{n}@example.org")))
              for n in range(count)]
    store(db, [m for messages in posted for m in messages[1:]], settings)
    with statements() as seen:
        store(db, [messages[0] for messages in posted], settings)
    assert all(v["cover_message_id"] for s in all_series(db) for v in s["versions"])
    return len([sql for sql, _ in seen if SERIES_TABLES.search(sql)])


def test_a_batch_costs_the_same_statements_for_two_postings_or_eight(
    db: Database, tree: Path
) -> None:
    assert cover_letters_late(db, tree, 2, "vmscan") == cover_letters_late(db, tree, 8, "swap")
