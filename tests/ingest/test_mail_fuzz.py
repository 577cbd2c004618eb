"""Generated hostile mail through parsing and storing, on SQLite and PostgreSQL (issue 16, item
6): headers with odd bytes, lengths and encodings, subjects with huge numbers, broken MIME. No
batch may fail: every mail is stored (with notes) or quarantined with a reason, the mail beside it
is stored, and a rerun stores nothing twice. Seeded, and a few seconds per backend."""

from __future__ import annotations

import contextlib

import sqlalchemy as sa
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from bot.config import IngestSettings
from bot.db.models import Message
from bot.db.session import Database
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from bot.mail import UnparseableMessage, parse_message

FRAGMENTS = [
    b"\0", b"\xff\xfe", b"\r", b"\n", b"\n ", b"<", b">", b"@", b"=?utf-8?q?", b"=?utf-8?b?",
    b"?=", b"=?x-unknown?q?=00?=", b"=?utf-8?q?=ED=A0=80?=", b"\\ud800", b"=?iso-2022-jp?b?GyRC",
    b"=?utf-7?q?+2D3cAA-?=", b'"', b"(", b";", b":", b",", "\u00b2".encode(), "\u0661".encode(),
    b"ada@example.org",
]
NUMBERS = st.one_of(st.integers(0, 12), st.integers(0, 10**30), st.sampled_from(
    [2**31 - 1, 2**31, 2**63 - 1, 2**63, 2**64]))


def header_value() -> st.SearchStrategy[bytes]:
    piece = st.one_of(st.sampled_from(FRAGMENTS), st.binary(max_size=12),
                      st.text(max_size=12).map(str.encode))
    long = st.tuples(st.sampled_from([b"x", b"\0", "\u00e9".encode()]),
                     st.integers(900, 1100)).map(lambda t: t[0] * t[1])
    return st.lists(st.one_of(piece, long), max_size=5).map(b"".join)


@st.composite
def subjects(draw: st.DrawFn) -> bytes:
    version = draw(st.one_of(NUMBERS.map(str), st.sampled_from(["\u00b2", "\u0661", "", "-1"])))
    counter, total = draw(NUMBERS), draw(NUMBERS)
    tags = draw(st.sampled_from(["PATCH", "PATCHv", "RFC PATCH", "PATCH net-next,"]))
    return f"[{tags} v{version} {counter}/{total}] mm: ".encode() + draw(header_value())


@st.composite
def bodies(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(extra headers, body): plain text, a diff, or MIME broken in one of several ways."""
    diff = (b"---\n a | 1 +\n\ndiff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,"
            + str(draw(NUMBERS)).encode() + b" +1,2 @@\n x\n+y\n")
    kind = draw(st.sampled_from(["plain", "diff", "mime"]))
    if kind == "plain":
        return b"", draw(st.binary(max_size=200))
    if kind == "diff":
        return b"", b"Signed-off-by: Ada <ada@example.org>\n" + diff
    boundary = draw(st.sampled_from([b"b", b"", b"=_x", b"\0", b"b" * 80]))
    cte = draw(st.sampled_from([b"base64", b"quoted-printable", b"x-uue", b"7bit"]))
    charset = draw(st.sampled_from([b"utf-8", b"utf-16", b"x-unknown", b"idna", b"rot13"]))
    parts = draw(st.integers(0, 40))
    part = (b"--" + boundary + b"\nContent-Type: text/plain; charset=" + charset
            + b"\nContent-Transfer-Encoding: " + cte + b"\n\n" + draw(st.binary(max_size=60))
            + b"\n")
    close = draw(st.sampled_from([b"--" + boundary + b"--\n", b""]))
    head = b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + boundary + b"\"\n"
    return head, part * parts + b"--" + boundary + b"\n\n" + diff + close


@st.composite
def mails(draw: st.DrawFn) -> bytes:
    msgid = draw(st.one_of(header_value(), st.just(b"fixed@x")))  # fixed: a Message-ID reused
    head = [b"From: " + draw(header_value()) + b" <ada@example.org>",
            b"Subject: " + draw(subjects()),
            b"Date: " + draw(st.one_of(header_value(), st.just(b"Tue, 02 Jan 2024 10:00 +0100"))),
            b"Message-ID: <" + msgid + b">"]
    if draw(st.booleans()):
        head.append(b"In-Reply-To: <" + draw(header_value()) + b">")
        head.append(b"References: <fixed@x> <" + draw(header_value()) + b">")
    if draw(st.booleans()):
        head.append(b"List-Id: <" + draw(header_value()) + b">")
    extra, body = draw(bodies())
    return b"\n".join(head) + b"\n" + extra + b"\n" + body


NORMAL = (b"From: Ada <ada@example.org>\nSubject: [PATCH] mm: fine\nDate: Tue, 02 Jan 2024 "
          b"10:00:00 +0100\nMessage-ID: <normal@example.org>\n\nHello.\n")


@seed(16)
@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(batch=st.lists(mails(), min_size=1, max_size=4))
def test_generated_mail_never_stops_a_batch(db: Database, batch: list[bytes]) -> None:
    for raw in batch:
        with contextlib.suppress(UnparseableMessage):  # the one refusal: input that is not mail
            parse_message(raw)
    raws = [RawMail(raw, f"fuzz#{n}") for n, raw in enumerate([*batch, NORMAL])]
    got = ingest(db, raws, settings=IngestSettings(batch_size=100))
    assert got.stored + got.quarantined + got.duplicates == got.read
    # the checks foresee everything generated: nothing falls through to the database's refusal
    assert not [r for r in got.quarantine_reasons if "database refused" in r]
    again = ingest(db, raws, settings=IngestSettings(batch_size=100))
    assert again.stored == 0 and again.quarantined == 0
    with db.session() as session:
        assert session.scalar(sa.select(Message.id).where(Message.msgid == "normal@example.org"))
