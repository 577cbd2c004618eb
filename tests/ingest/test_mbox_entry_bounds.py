"""A slice of an mbox split by offsets (`sources._entry_bounds`, one pass over every "From ")
gives what splitting it through `_split` and `_message_of` gives, on generated mboxes full of
separators, mboxrd escapes, CRLF and blank lines in every place."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bot.ingest import sources
from bot.ingest.sources import MboxFile, MboxSlice

TOKENS = [b"From ", b"\n", b">", b">From ", b">>From ", b"\r\n", b"x", b"From x\n", b"\nFrom ",
          b"\n\n", b"\r\n\r\n", b" ", b"F", b"rom "]  # fmt: skip


def test_offsets_split_as_the_reader_splits(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(15)
    paths = []
    for index in range(1500):
        data = rng.choice([b"From ", b"From a\n"]) + b"".join(
            rng.choice(TOKENS) for _ in range(rng.randrange(40)))
        path = tmp_path / f"{index}.mbox"
        path.write_bytes(data)
        paths.append(path)

    def read_all() -> list[object]:
        out = []
        for path in paths:
            size = path.stat().st_size
            out.append([(m.data, m.origin) for m in MboxSlice(str(path), 0, size, 1).mails()])
            for per_slice in (1, 3):
                out.append([[(m.data, m.origin) for m in piece.mails()]
                            for piece in MboxFile(path).slices(per_slice)])
        return out

    by_offsets = read_all()
    whole = [data for messages in by_offsets[::3] for data, _ in messages]
    assert sum(b">From " in data for data in whole) > 100  # mboxrd escapes undone, or kept
    monkeypatch.setattr(sources, "_entry_bounds", lambda data: None)
    assert read_all() == by_offsets
