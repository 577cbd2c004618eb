"""`lorelab sources` as a person reads it: each cursor in words, times without microseconds;
`--json` keeps the stored position and times as they are (README.md, "JSON shapes")."""

from __future__ import annotations

import re
from pathlib import Path

from bot.db.session import Database, ensure_schema
from bot.ingest.cursor import CursorKey, advance, record_poll
from tests.cli import Lorelab

LORE = CursorKey("lore", "https://lore.example.org/linux-mm", "linux-mm")
PI = CursorKey("pi-git", "/srv/pi/linux-mm", "linux-mm")
FETCHED = "2026-12-01T09:00:00.123456+00:00"
EPOCH0 = "0123456789abcdef0123456789abcdef01234567"


def test_cursors_read_as_words(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'lorelab.db'}")
    ensure_schema(db.engine)
    with db.session() as session:
        advance(session, LORE, {
            "etag": None, "last_modified": None, "seen": ["a@example.org", "b@example.org"],
            "newest": "2026-12-01T10:00:00.654321+00:00",
            "context_fetched": {f"s{i}@example.org": FETCHED for i in (1, 2, 3)},
        }, stored=7)
        advance(session, PI, {"epoch/0": EPOCH0}, stored=5)
    record_poll(db, LORE)
    record_poll(db, PI)
    lorelab = Lorelab(tmp_path / "home", db.url)

    text = lorelab.run("sources").stdout.decode()
    assert "newest 2026-12-01 10:00 UTC, 3 threads fetched for context" in text, text
    assert "epoch 0 at 0123456789ab" in text, text
    for repr_bit in ("None", "{", "etag=", "context_fetched", "'"):
        assert repr_bit not in text, text
    assert not re.search(r"\d\d:\d\d:\d\d\.\d", text), text  # no microseconds
    assert len(re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", text)) >= 3, text  # polls too

    rows = {row["kind"]: row for row in lorelab.json("sources")}
    assert rows["lore"]["position"]["context_fetched"]["s1@example.org"] == FETCHED
    assert rows["lore"]["position"]["etag"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00",
                        rows["lore"]["last_poll"])
