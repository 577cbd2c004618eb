"""Whose trailer a reply may give: b4's identity rule for follow-up trailers."""

from __future__ import annotations

import pytest

from bot.mail.trailer_sender import given_by_sender

SENDER = ("Jane Doe", "jane@intel.com")


@pytest.mark.parametrize(
    ("name", "value", "counted"),
    [
        ("Reviewed-by", "Jane Doe <jane@intel.com>", True),
        ("Reviewed-by", "J. Doe <JANE@Intel.COM>", True),  # the address, whatever its case
        ("Reviewed-by", "J. Doe <jane+lkml@intel.com>", True),  # a +detail
        ("Reviewed-by", "J. Doe <jane@linux.intel.com>", True),  # a subdomain by one label
        ("Reviewed-by", "jane doe <jd@home.example>", True),  # the name, whatever its case
        ("Reviewed-by", "J. Doe <jane@a.b.intel.com>", False),  # by two labels: not hers
        ("Reviewed-by", "J. Doe <jane@intel.com.evil.example>", False),
        ("Reviewed-by", "J. Doe <janet@intel.com>", False),
        ("Acked-by", "Linus Torvalds <torvalds@linux-foundation.org>", False),
        ("Reviewed-by", "Jane Doe<jane@intel.com>  ", True),
        ("Reviewed-by", "Jane <x> Doe <jane@intel.com>", True),  # the address is the last <...>
        ("Reviewed-by", "Jane Doe <jane@elsewhere.example> <x>", False),
        ("Tested-by", "jane@elsewhere.example", False),  # a bare address, not hers
        ("Fixes", "0123456789ab (\"mm: fix it\")", True),  # nobody's: always counted
        ("Closes", "https://lore.kernel.org/r/bug@example.net", True),
        ("Reported-by", "https://bugzilla.example/user@x.example", True),  # a URL, no person
    ],
)
def test_a_reply_gives_its_senders_trailers(name: str, value: str, counted: bool) -> None:
    assert given_by_sender(name, value, *SENDER) is counted


def test_a_sender_named_last_comma_first() -> None:
    assert given_by_sender("Reviewed-by", "Jane Doe <jd@home.example>", "Doe, Jane",
                           "jd@corp.example")
    assert not given_by_sender("Reviewed-by", "John Doe <jd@home.example>", "Doe, Jane",
                               "jd@corp.example")
    assert not given_by_sender("Reviewed-by", "Janet Doe <jd@home.example>", "Doe, Jane",
                               "jd@corp.example")  # a word, not a piece of one


def test_a_sender_without_address_or_name_gives_no_persons_trailer() -> None:
    assert not given_by_sender("Reviewed-by", "Jane Doe <jane@intel.com>", "", "")
    assert given_by_sender("Fixes", "0123456789ab", "", "")
