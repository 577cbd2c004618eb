"""What parsing one mail costs is bounded, whatever its shape (issue 16, item 7): 100k MIME parts
in 3.7 MB once took 176 s of CPU (the text of every part summed again per part), 80,000 encoded
words in a Subject 9.6 s, 80,000 nested brackets 4.8 s. The work is counted (Python and C calls
made while parsing), not timed."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from bot.mail import parse_message
from bot.mail.mime import MAX_PARTS

HEAD = (b"From: Ada <ada@example.org>\nSubject: [PATCH] mm: parts\nMessage-ID: <parts@x>\n"
        b"Date: Tue, 02 Jan 2024 10:00:00 +0100\nMIME-Version: 1.0\n"
        b'Content-Type: multipart/mixed; boundary="b"\n\n')
FIRST = b"--b\nContent-Type: text/plain\n\nThe first part: the message itself.\n"
TEXT = b"--b\nContent-Type: text/plain\n\nsome text here.\n"
DIFF = b"--b\nContent-Type: text/x-patch\n\ndiff --git a/x b/x\n"
NESTED = b'--b\nContent-Type: multipart/mixed; boundary="c"\n\n--c\n\nnested\n--c--\n'


def bomb(parts: int, part: bytes) -> bytes:
    return HEAD + FIRST + part * (parts - 1) + b"--b--\n"


def calls(raw: bytes) -> tuple[int, Any]:
    """Function calls (Python and C) made by parsing `raw`, and the parsed message."""
    count = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        message = parse_message(raw)
    finally:
        sys.setprofile(None)
    return count, message


def test_work_per_mail_stops_growing_at_the_part_limit() -> None:
    for part in (TEXT, DIFF, NESTED):
        small, _ = calls(bomb(MAX_PARTS // 2, part))
        at_limit, _ = calls(bomb(MAX_PARTS, part))
        work = {n: calls(bomb(n, part)) for n in (5_000, 20_000, 100_000)}
        # about linear up to the limit, and flat beyond it: 100k parts cost what 1,000 do
        assert at_limit < 3 * small, part
        for count, _ in work.values():
            assert count < 1.2 * at_limit, (part, {n: c for n, (c, _) in work.items()})


H = (b"From: Ada <ada@example.org>\nMessage-ID: <h@x>\nDate: Tue, 02 Jan 2024 10:00:00 +0100\n")
SHAPES = {  # a header that grows with n
    "encoded words": lambda n: H + b"Subject: " + b" ".join(b"=?utf-8?q?w%d?=" % i
                                                         for i in range(n)) + b"\n\nbody\n",
    "nested brackets": lambda n: H + b"Subject: " + b"[" * n + b"PATCH" + b"]" * n + b"\n\n.\n",
    "bracket groups": lambda n: H + b"Subject: " + b"[PATCH v2 1/2]" * n + b"\n\n.\n",
    "unclosed brackets": lambda n: H + b"Subject: " + b"[" * n + b"\n\n.\n",
    "addresses": lambda n: H.replace(b"Ada <ada@example.org>", b", ".join(
        b'"N%d" <a%d@x>' % (i, i) for i in range(n))) + b"Subject: x\n\n.\n",
}


def test_work_per_header_stops_growing_past_its_cap() -> None:
    for name, shape in SHAPES.items():
        work = [calls(shape(n))[0] for n in (20_000, 80_000)]
        assert work[1] < 1.2 * work[0], (name, work)


def test_a_truncated_mail_is_kept_with_a_note() -> None:
    _, message = calls(bomb(100_000, DIFF))
    assert message.body.startswith("The first part: the message itself.")
    assert message.body.count("diff --git") < MAX_PARTS
    assert f"MIME parts truncated: only the first {MAX_PARTS} were read" in message.problems
    _, whole = calls(bomb(MAX_PARTS - 1, DIFF))
    assert not any("truncated" in p for p in whole.problems)
    assert whole.body.count("diff --git") == MAX_PARTS - 2
