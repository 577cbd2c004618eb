"""A mail a relay sent in its author's name is the author's (`bot.mail.relayed`).

The header lines are those of real archived mail: kasan-dev (Google Groups, for DMARC), the
B4 Relay on cgroups, and a Mailman list that munges From.
"""

from __future__ import annotations

import pytest

from bot.mail import parse_message
from bot.mail.record import Address
from tests.mail.test_mail_parse import mail

COMMON = (
    "Date: Tue, 3 Mar 2026 16:50:33 +0100",
    "Message-ID: <relayed-1@example.org>",
    "Subject: [PATCH] kfence: add kfence.fault parameter",
)


@pytest.mark.parametrize("lines, author", [
    pytest.param(("From: \"'Alexander Potapenko' via kasan-dev\" <kasan-dev@googlegroups.com>",
                  "X-Original-Sender: glider@google.com",
                  "X-Original-From: Alexander Potapenko <glider@google.com>",
                  "Reply-To: Alexander Potapenko <glider@google.com>",
                  "List-Post: <https://groups.google.com/group/kasan-dev/post>, "
                  "<mailto:kasan-dev@googlegroups.com>"),
                 Address("Alexander Potapenko", "glider@google.com"), id="google-groups"),
    pytest.param(("From: Kairui Song via B4 Relay <devnull+kasong.tencent.com@kernel.org>",
                  "X-Original-From: Kairui Song <kasong@tencent.com>",
                  "Reply-To: kasong@tencent.com"),
                 Address("Kairui Song", "kasong@tencent.com"), id="b4-relay"),
    pytest.param(("From: Kairui Song via B4 Relay <devnull+kasong.tencent.com@kernel.org>",
                  "Reply-To: <KaSong@Tencent.com>"),
                 Address("Kairui Song", "kasong@tencent.com"), id="b4-relay-reply-to-only"),
    pytest.param(("From: Jane Doe via Dev <dev@lists.example.org>",
                  "Reply-To: Jane Doe <jane@example.com>"),
                 Address("Jane Doe", "jane@example.com"), id="mailman-munged"),
])
def test_a_relayed_mail_is_its_authors(lines, author):
    parsed = parse_message(mail(*lines, *COMMON))
    assert parsed.sender == author
    assert parsed.problems == []


@pytest.mark.parametrize("lines, sender", [
    # An author's own Reply-To (a list, another address) is not who wrote the mail.
    pytest.param(("From: Yu Zhao <yuzhao@google.com>", "Reply-To: Other <other@example.org>",
                  "X-Original-From: Someone <someone@example.org>"),
                 Address("Yu Zhao", "yuzhao@google.com"), id="no-relay"),
    # Mailman's "reply goes to list": the relay names no one else.
    pytest.param(("From: Jane Doe via Dev <dev@lists.example.org>",
                  "Reply-To: dev@lists.example.org"),
                 Address("Jane Doe via Dev", "dev@lists.example.org"), id="reply-to-the-list"),
    # Two candidates, or two fields: no guess.
    pytest.param(("From: Jane Doe via Dev <dev@lists.example.org>",
                  "Reply-To: Jane <jane@example.com>, Joe <joe@example.com>"),
                 Address("Jane Doe via Dev", "dev@lists.example.org"), id="two-addresses"),
    pytest.param(("From: Jane Doe via Dev <dev@lists.example.org>",
                  "X-Original-From: Jane <jane@example.com>",
                  "X-Original-From: Joe <joe@example.com>"),
                 Address("Jane Doe via Dev", "dev@lists.example.org"), id="two-fields"),
    pytest.param(("From: Jane Doe via Dev <dev@lists.example.org>",
                  "X-Original-From: Jane Doe"),
                 Address("Jane Doe via Dev", "dev@lists.example.org"), id="no-address"),
])
def test_a_relay_that_names_no_one_author_keeps_the_from(lines, sender):
    assert parse_message(mail(*lines, *COMMON)).sender == sender
