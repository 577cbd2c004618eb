"""The parse workers' fast paths give what the general code they stand in for gives, on
generated input of every shape they must refuse as well as the usual one:

- a header block read straight from the bytes (`mime._plain_fields`) against the block decoded
  and read as text;
- a file's hunks checked together (`diff._read_hunks`) against each hunk checked on its own.
"""

from __future__ import annotations

import random

import pytest

from bot.mail import diff, mime
from bot.mail.parse import _FIELDS, _FIELDS_WITH_RECIPIENTS, _MAIL_FIELDS

NAMES = ["From", "from", "FROM", "To", "Cc", "Subject", "subJect", "Date", "Message-ID",
         "References", "In-Reply-To", "List-Id", "Content-Type", "content-transfer-encoding",
         "Received", "X-Foo", "DKIM-Signature", "Reply-To", "\u212aey", "Fromx", "Subject ",
         "X Bad", "", "ARC-Seal"]  # fmt: skip
PIECES = [b" ", b"\t", b"value", b"<a@b>", b":", b"\r", b"\xc3\xa9", b"\xff", b"From ", b"\x1c"]


def header_block(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randrange(12)):
        roll = rng.random()
        if roll < 0.7:
            name = rng.choice(NAMES).encode()
            lines.append(name + rng.choice([b":", b": ", b" : ", b":\t"])
                         + b"".join(rng.choice(PIECES) for _ in range(rng.randrange(4))))
        elif roll < 0.85:
            lines.append(rng.choice([b" ", b"\t"]) + b"folded" + rng.choice(PIECES))
        elif roll < 0.9:
            lines.append(b"")
        else:
            lines.append(b"".join(rng.choice(PIECES) for _ in range(rng.randrange(4))))
    return rng.choice([b"\n", b"\n", b"\n", b"\r\n"]).join(lines)


@pytest.mark.parametrize("window", [mime.PLAIN_HEAD_BYTES, 40, 7])
def test_header_block_from_the_bytes_reads_as_decoded(
    window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mime, "PLAIN_HEAD_BYTES", window)  # blocks longer than it, and cut in it
    rng = random.Random(15)
    cases = []
    for _ in range(4000):
        before = rng.choice([b"", b"", b"\n", b"\r\n", b"--b\n", b"x\r"])
        blank = rng.choice([b"\n\n", b"\r\n\r\n", b"\n", b"", b"\n\n\t"])
        data = before + header_block(rng) + blank + rng.choice([b"", b"body\n", b"From x\n"])
        end = max(len(before), len(data) - rng.choice([0, 0, 0, 1, 3]))
        fields = rng.choice([_FIELDS, _MAIL_FIELDS, _FIELDS_WITH_RECIPIENTS, mime.PART_FIELDS])
        cases.append((data, len(before), end, fields))
    # the usual block, which the fast path takes
    usual = (b"Received: from a\n\tby b\nFrom: Ada <ada@example.org>\nSubject: [PATCH] x\n"
             b" folded\nX-Other: y\n\nbody\n")
    cases += [(usual, 0, len(usual), _FIELDS), (b"\n" + usual, 1, len(usual) + 1, _MAIL_FIELDS)]

    def read_all() -> list[object]:
        out = []
        for data, start, end, fields in cases:
            problems: list[str] = []
            out.append((mime.read_head(data, start, end, problems, fields), problems))
        return out

    fast = read_all()
    taken = sum(mime._plain_fields(data, start, end, fields) is not None
                for data, start, end, fields in cases)
    assert taken > (300 if window > 40 else 30)  # the fast path is exercised, not only refused
    monkeypatch.setattr(mime, "_plain_fields", lambda *args: None)
    assert read_all() == fast


HUNK_LINES = [" ctx", "-old", "+new", " ", "", "-- ", "--- a/x", "junk", "@@ -1 +1 @@", "@@ bad",
              "@@@ -1,2 -1,2 +1,3 @@@", "@foo", "diff --git a/y b/y", "base-commit: abc", "\r",
              "\\ No newline at end of file"]  # fmt: skip


def hunk(rng: random.Random) -> list[str]:
    old, new = rng.randrange(6), rng.randrange(6)
    lines, old_left, new_left = [], old, new
    while old_left or new_left:
        roll = rng.randrange(3)
        if roll == 0 and old_left and new_left:
            lines.append(" c")
            old_left, new_left = old_left - 1, new_left - 1
        elif roll == 1 and old_left:
            lines.append("-r")
            old_left -= 1
        elif roll == 2 and new_left:
            lines.append("+a")
            new_left -= 1
    if rng.random() < 0.3:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(HUNK_LINES))
    if rng.random() < 0.2:
        old += rng.choice([-1, 1])
    header = rng.choice([f"@@ -1,{old} +1,{new} @@ f()", f"@@ -1,{old} +1,{new} @@",
                         "@@ -1 +1 @@", f"@@ -{old} +{new} @@"])
    return [header, *lines]


def patch_body(rng: random.Random) -> str:
    lines = ["Fix it.", "", "Signed-off-by: Ada <ada@example.org>", "---"]
    for _ in range(rng.randrange(1, 4)):
        path = rng.choice(["a.c", "mm/b.h"])
        lines += rng.choice([[f"diff --git a/{path} b/{path}", "index 1..2 100644"], [],
                             [f"Index: {path}", "===="]])
        lines += [f"--- a/{path}", f"+++ b/{path}"]
        for _ in range(rng.randrange(5)):
            lines += hunk(rng)
        if rng.random() < 0.2:
            lines.append(rng.choice(["", "-- ", "text between"]))
    lines += rng.choice([["-- ", "2.43.0", ""], [""], []])
    body = "\n".join(lines)
    if rng.random() < 0.1:
        body = body.replace("\n", "\r\n")
    return body[: rng.randrange(len(body) + 1)] if rng.random() < 0.2 else body


def test_hunks_checked_together_read_as_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(15)
    bodies = [patch_body(rng) for _ in range(3000)]
    fast = [vars(diff.scan_diff(body)) for body in bodies]
    original = diff._read_hunks
    taken = 0

    def counting(text: str, pos: int, current: diff._File) -> int:
        nonlocal taken
        end = original(text, pos, current)
        taken += end != pos
        return end

    monkeypatch.setattr(diff, "_read_hunks", counting)
    assert [vars(diff.scan_diff(body)) for body in bodies] == fast
    assert taken > 300
    monkeypatch.setattr(diff, "_read_hunks", lambda text, pos, current: pos)
    assert [vars(diff.scan_diff(body)) for body in bodies] == fast
