"""A plain mbox read in byte ranges (`MboxSlice`: each worker finds the entries whose From_ line
starts in its range) gives exactly what reading it whole (`iter_mbox`) gives, wherever the ranges
are cut; and a slice split by offsets (`sources._entry_bounds`, one pass over every "From ")
gives what splitting it through `_split` and `_message_of` gives. On generated mboxes full of
separators, mboxrd escapes, CRLF and blank lines in every place, and with entries over the
limit on entries (made small here) that `_split` cuts where its reads end."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bot.ingest import sources
from bot.ingest.sources import MboxFile, MboxSlice, iter_mbox, renumbered

TOKENS = [b"From ", b"\n", b">", b">From ", b">>From ", b"\r\n", b"x", b"From x\n", b"\nFrom ",
          b"\n\n", b"\r\n\r\n", b" ", b"F", b"rom "]  # fmt: skip
FROM = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"


def read_sliced(path: Path, cuts: list[int]) -> list[tuple[bytes, str]]:
    """(data, origin) of each mail of `path` read as the slices between `cuts` (the first 0,
    the last the file's size), numbered in the file as the storing process numbers them."""
    out: list[tuple[bytes, str]] = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        mails = MboxSlice(str(path), start, end).mails()
        out += [(m.data, renumbered(m.origin, len(out))) for m in mails]
    return out


def read_whole(path: Path) -> list[tuple[bytes, str]]:
    return [(m.data, m.origin) for m in iter_mbox(path)]


def generated(tmp_path: Path, count: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for index in range(count):
        data = rng.choice([b"From ", b"From a\n"]) + b"".join(
            rng.choice(TOKENS) for _ in range(rng.randrange(60)))
        path = tmp_path / f"{index}.mbox"
        path.write_bytes(data)
        paths.append(path)
    return paths


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch):
    """Entries over 24 bytes are over the limit, `_split` reads 16 bytes at a time and a worker
    looks for its first entry 8 bytes at a time: every path of the cutting is taken."""

    def set_limits(entry: int = 24, read: int = 16, probe: int = 8) -> None:
        monkeypatch.setattr(sources, "MAX_ENTRY_BYTES", entry)
        monkeypatch.setattr(sources, "_READ_BYTES", read)
        monkeypatch.setattr(sources, "_PROBE_BYTES", probe)

    return set_limits


def test_offsets_split_as_the_reader_splits(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    paths = generated(tmp_path, 1500, 15)

    def read_all() -> list[object]:
        out = []
        for path in paths:
            out.append(read_sliced(path, [0, path.stat().st_size]))
            for per_slice in (1, 3):
                slices = MboxFile(path).slices(per_slice)
                out.append(read_sliced(path, [0] + [piece.end for piece in slices]))
        return out

    by_offsets = read_all()
    whole = [data for messages in by_offsets[::3] for data, _ in messages]
    assert sum(b">From " in data for data in whole) > 100  # mboxrd escapes undone, or kept
    monkeypatch.setattr(sources, "_entry_bounds", lambda data: None)
    assert read_all() == by_offsets


@pytest.mark.parametrize("limits", [{}, {"entry": 24, "read": 16, "probe": 8},
                                    {"entry": 9, "read": 32, "probe": 1},
                                    {"entry": 40, "read": 3, "probe": 64}])
def test_slices_cut_anywhere_read_what_the_whole_file_gives(
    tmp_path: Path, small_limits, limits: dict[str, int]
) -> None:
    """Cuts inside entries, inside From_ lines, between ">" and "From ", at entry starts, ranges
    holding no entry start; entries over the limit spanning ranges; files not ending in a
    newline (most of them here)."""
    if limits:
        small_limits(**limits)
    rng = random.Random(len(limits) + limits.get("entry", 0))
    over_the_limit = 0  # files with an entry `_split` may cut
    for path in generated(tmp_path, 600, rng.randrange(1000)):
        size = path.stat().st_size
        whole = read_whole(path)
        over_the_limit += sources._entry_bounds(path.read_bytes()) is None
        for _ in range(6):
            inner = {rng.randrange(size + 1) for _ in range(rng.randrange(12))}
            assert read_sliced(path, sorted({0, size} | inner)) == whole, path.read_bytes()
        assert read_sliced(path, list(range(size + 1))) == whole  # a range for every byte
    assert over_the_limit > (100 if limits else -1)


def test_each_entry_is_read_by_the_range_its_from_line_starts_in(tmp_path: Path) -> None:
    entries = [FROM + b"Subject: one\n\nA body\n>From quoted\n\n",
               FROM + b"Subject: two\n\nsecond\n\n",
               FROM + b"Subject: three\n\nlast, no newline"]
    path = tmp_path / "cuts.mbox"
    path.write_bytes(b"".join(entries))
    whole = read_whole(path)
    assert [data[:14] for data, _ in whole] == [b"Subject: one\n\n", b"Subject: two\n\n",
                                                b"Subject: three"]
    assert whole[0][0].endswith(b"\nFrom quoted\n")  # ">From " unescaped
    second = len(entries[0])
    third = second + len(entries[1])
    escaped = entries[0].index(b">From ")
    size = path.stat().st_size
    for at in (second, second - 1, second + 1, second + 3, escaped, escaped + 1, third - 1):
        assert read_sliced(path, [0, at, size]) == whole, at
    assert MboxSlice(str(path), second, third).mails()[0].data.startswith(b"Subject: two")
    assert MboxSlice(str(path), second + 1, third).mails() == []  # inside entry 2's From_ line
    assert MboxSlice(str(path), escaped, escaped + 1).mails() == []  # ">From " is no entry
    (last,) = MboxSlice(str(path), third - 1, size).mails()  # the "\n" before a From_ line
    assert (last.data, renumbered(last.origin, 2)) == whole[2]


def test_one_entry_crlf_and_no_trailing_newline(tmp_path: Path) -> None:
    one = tmp_path / "one.mbox"
    one.write_bytes(FROM + b"Subject: only\r\n\r\nbody\r\n\r\n")
    crlf = tmp_path / "crlf.mbox"
    crlf.write_bytes((FROM + b"Subject: a\n\nx\n\n" + FROM + b"Subject: b\n\ny\n\n")
                     .replace(b"\n", b"\r\n"))
    bare = tmp_path / "bare.mbox"
    bare.write_bytes(FROM + b"Subject: a\n\nx\n\n" + FROM + b"Subject: b\n\ny")
    for path in (one, crlf, bare):
        size = path.stat().st_size
        whole = read_whole(path)
        for at in range(size + 1):
            assert read_sliced(path, sorted({0, at, size})) == whole, (path, at)
    assert read_whole(one) == [(b"Subject: only\r\n\r\nbody\r\n", f"mbox:{one}#1")]
    assert [data for data, _ in read_whole(crlf)] == [b"Subject: a\r\n\r\nx\r\n",
                                                      b"Subject: b\r\n\r\ny\r\n"]


def test_an_entry_over_the_limit_is_cut_where_the_reader_cuts_it(tmp_path: Path,
                                                                small_limits) -> None:
    """An entry over the limit, spanning many ranges, read by the one its From_ line starts in:
    its first MAX_ENTRY_BYTES + 1 bytes, or all of it when its end is found in the read that
    takes it over the limit (where `iter_mbox`'s reads end, not the slice's)."""
    small_limits(entry=100, read=64)
    lengths = set()
    for big in range(20, 140):
        entries = [FROM + b"Subject: a\n\n" + b"x" * 30 + b"\n\n",
                   FROM + b"Subject: big\n\n" + b"y" * big + b"\n\n",
                   FROM + b"Subject: c\n\nz\n"]
        path = tmp_path / f"{big}.mbox"
        path.write_bytes(b"".join(entries))
        size = path.stat().st_size
        whole = read_whole(path)
        assert len(whole) == 3
        lengths.add(len(whole[1][0]))
        for step in (7, 33, 64):
            assert read_sliced(path, [*range(0, size, step), size]) == whole, (big, step)
    cut = 101 - len(FROM)  # a message cut with its From_ line at MAX_ENTRY_BYTES + 1 bytes
    assert cut in lengths and max(lengths) > cut  # cut, and kept whole though over the limit
