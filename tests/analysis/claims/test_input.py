"""Files that are not plain-text mail (bot/analysis/claims/input.py, the claims command)."""

from __future__ import annotations

import os
import random

from bot.analysis.claims.input import read_message_text
from bot.cli.claims import _analyse

HTML = b"""From: Dev <dev@example.org>
Subject: [PATCH] mm: faster reclaim
Message-ID: <html@example.org>
MIME-Version: 1.0
Content-Type: text/html; charset=utf-8

<html><body><p>With the patch:</p><pre>
Before: 44017.78 Ops/sec
After:  44687.08 Ops/sec (+1.5%)
</pre></body></html>
"""


def test_binary_data_is_a_clear_cannot_read() -> None:
    raw = bytes(random.Random(2).randrange(256) for _ in range(4096)) + os.urandom(16)
    message = read_message_text(raw)
    assert message.unreadable == "binary data, not text"
    result = _analyse(message)
    assert result.unreadable == "cannot read: binary data, not text" and result.claims == ()


def test_html_only_mail_is_read_from_its_text() -> None:
    message = read_message_text(HTML)
    assert message.unreadable is None
    result = _analyse(message)
    [judged] = result.claims
    assert (judged.claim.before_after.before, judged.claim.before_after.after) == (
        44017.78, 44687.08,
    )  # fmt: skip
