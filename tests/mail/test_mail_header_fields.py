"""The header fields parse_message reads, found by one regex scan of the folded header block,
and the fast paths beside it (References, the text/plain charset): each must give what a
field-by-field reading gives, whatever the capitalisation, folding or odd characters."""

from __future__ import annotations

import pytest

from bot.mail import UnparseableMessage, parse_message
from bot.mail.headers import parse_msgid_list
from bot.mail.mime import PART_FIELDS, _charset, parse_content_type, read_head


def test_field_names_in_any_case_and_folded_values() -> None:
    raw = (
        b"FROM: Ada <ada@example.org>\nsubject: [PATCH] mm:\n\tfolded\n  title\n"
        b"MESSAGE-id: <m@x>\nIn-Reply-TO:\n <p@x>\nDate: Tue, 02 Jan 2024 10:00:00 +0100\n"
        b"X-Subject: not the subject\n\nHello.\n"
    )
    parsed = parse_message(raw)
    assert parsed.sender.email == "ada@example.org"
    assert parsed.subject.title == "mm: folded title"
    assert (parsed.msgid, parsed.in_reply_to) == ("m@x", "p@x")
    assert parsed.problems == []


def test_only_the_requested_fields_are_returned() -> None:
    raw = b"Content-Type: text/plain\nX-Other: 1\nContent-Disposition: inline\n\nbody\n"
    headers, body_start = read_head(raw, 0, len(raw), [], PART_FIELDS)
    assert headers == {"content-type": ["text/plain"], "content-disposition": ["inline"]}
    assert raw[body_start:] == b"body\n"


def test_a_block_with_a_non_header_line_takes_the_careful_walk() -> None:
    raw = b"Subject: one\nnot a header\nFrom: a@b.c\n\nbody\n"
    parsed = parse_message(raw)
    assert parsed.subject.title == "one" and parsed.sender.email == "a@b.c"
    assert parsed.problems[0] == "headers: non-header line skipped: 'not a header'"


def test_mail_fields_beyond_those_read_make_input_mail() -> None:
    # none of the fields parse_message reads, but a mail field: the Kelvin sign lowers to "k"
    for name in ("DKIM-Signature", "D\u212aIM-Signature"):
        parsed = parse_message(f"{name}: v=1\n\nbody\n".encode())
        assert parsed.body == "body\n"
    with pytest.raises(UnparseableMessage):
        parse_message(b"X-Not-Mail: 1\nX-Other: 2\n\nbody\n")


def test_a_dotted_capital_i_in_a_name_or_value() -> None:
    parsed = parse_message("Subj\u0130ct: no\nSubject: \u0130stanbul\nFrom: a@b.c\n\nx\n".encode())
    assert parsed.subject.raw == "\u0130stanbul"


@pytest.mark.parametrize(
    ("value", "ids"),
    [
        ("<a@b> <c@d>\t<a@b>", ["a@b", "c@d"]),
        ("<a@b>\n <c@d>", ["a@b", "c@d"]),
        ("<a b@c> <d@e>", ["ab@c", "d@e"]),
        ("<> <x@y>", ["x@y"]),
        ("<a@b><c@d>", ["a@b", "c@d"]),
        ("a@b c@d", ["a@b", "c@d"]),
        ("junk <a@b> more", ["a@b"]),
        ("<a@b", ["a@b"]),
    ],
)
def test_reference_lists(value: str, ids: list[str]) -> None:
    assert parse_msgid_list(value) == ids


@pytest.mark.parametrize(
    "value",
    [
        "text/plain; charset=us-ascii",
        'TEXT/PLAIN;charset="UTF-8"  ',
        "text/plain; charset=utf-8; format=flowed",
        'text/plain; charset="utf-8',
        "text/plain; CHARSET*=utf-8''x",
        "text/plain; charset=\u017ftrange",
        "text/plain",
    ],
)
def test_the_charset_fast_path_agrees_with_the_full_parse(value: str) -> None:
    assert _charset(value) == parse_content_type(value)[1].get("charset")
