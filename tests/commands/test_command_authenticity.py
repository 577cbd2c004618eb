"""Commands only from mail whose sender can be verified (issue 16, item 9): a DKIM signature of
the From domain, checked with the tests' own keys (no DNS), or the Authentication-Results of a
trusted list server; a forged, tampered or two-address From is not acted on, and is answered
at most once per thread per day."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from bot.config.sections import CommandSettings
from bot.db.models import CommandRequest
from tests.support.command_thread import ADA, HANNES, MALLORY, Thread, unwrapped
from tests.support.dkim_signing import SIGNED_HEADERS, key_table, sign

TRUSTED = "smtp.subspace.kernel.org"
REPLY = (b"From: Ada Reclaim <ada@example.org>\nTo: linux-mm@kvack.org\n"
         b"Subject: Re: [PATCH 1/2] mm/vmscan: reclaim\nDate: Mon, 30 Nov 2026 11:30:00 +0000\n"
         b"Message-ID: <r1@example.org>\nIn-Reply-To: <p1@example.org>\n\n#lorelab stop\n")


def _verify(raw: bytes, tmp_path, lists=("linux-mm",), **settings):
    from bot.commands.authenticity import verify_sender
    from bot.commands.dkim_keys import CachedTxt, table_txt

    keys = table_txt(key_table(tmp_path, ["example.org", "example.net"]))
    return verify_sender(raw, lists=lists, settings=CommandSettings(**settings),
                         dnsfunc=CachedTxt(keys, ttl_seconds=60))


def _with_from(raw: bytes, value: bytes) -> bytes:
    head, _, body = raw.partition(b"\n\n")
    lines = [line if not line.startswith(b"From:") else b"From: " + value
             for line in head.split(b"\n")]
    return b"\n".join(lines) + b"\n\n" + body


def test_a_signature_of_the_from_domain_verifies_the_sender(tmp_path):
    verdict = _verify(sign(REPLY, "example.org"), tmp_path)
    assert verdict.verified and verdict.address == "ada@example.org"
    assert verdict.verified_by == "DKIM signature of example.org"


def test_what_does_not_verify_says_why(tmp_path):
    unsigned = _verify(REPLY, tmp_path)
    assert not unsigned.verified and "no DKIM signature" in unsigned.reason
    other = _verify(sign(REPLY, "example.net"), tmp_path)  # Mallory's domain signs Ada's From
    assert not other.verified and "d=example.net" in other.reason
    tampered = sign(REPLY.replace(b"#lorelab stop", b"#lorelab help"), "example.org")
    tampered = tampered.replace(b"#lorelab help", b"#lorelab stop")
    assert "body hash" in _verify(tampered, tmp_path).reason
    # a signature of part of the body (l=) leaves room for an appended command
    assert "l=" in _verify(sign(REPLY, "example.org", length=True), tmp_path).reason
    # a signature that leaves Message-ID out lets a copy of the mail be sent again as new
    partial = sign(REPLY, "example.org", headers=[h for h in SIGNED_HEADERS
                                                  if h != b"message-id"])
    assert "Message-ID" in _verify(partial, tmp_path).reason
    # a domain whose key is not published
    unpublished = sign(_with_from(REPLY, b"ada@example.com"), "example.com")
    assert "no key is published at test._domainkey.example.com" in _verify(
        unpublished, tmp_path).reason


def test_a_from_with_two_addresses_or_none_is_refused(tmp_path):
    two = _with_from(REPLY, b"ada@example.org, mallory@example.net")
    verdict = _verify(sign(two, "example.net"), tmp_path)
    assert not verdict.verified and "2 addresses" in verdict.reason
    encoded = _with_from(REPLY, b"=?utf-8?q?ada=40example.org?=")
    verdict = _verify(sign(encoded, "example.org"), tmp_path)
    assert not verdict.verified and "no address" in verdict.reason
    twice = b"From: Ada Reclaim <ada@example.org>\n" + _with_from(REPLY, b"mallory@example.net")
    verdict = _verify(sign(twice, "example.net"), tmp_path)
    assert not verdict.verified and "2 From fields" in verdict.reason


def test_a_trusted_list_servers_authentication_results_verify_the_sender(tmp_path):
    trust = {"trusted_authserv_ids": [TRUSTED], "trusted_lists": ["linux-mm"]}

    def results(value: str) -> bytes:
        return f"Authentication-Results: {value}\n".encode() + REPLY

    dkim_pass = results(f"{TRUSTED}; dkim=pass (2048-bit key) header.d=example.org "
                        'header.i=@example.org header.b="AbCd"')
    verdict = _verify(dkim_pass, tmp_path, **trust)
    assert verdict.verified and verdict.verified_by == f"Authentication-Results of {TRUSTED}"
    assert _verify(results(f"{TRUSTED}; dmarc=pass (p=none dis=none) header.from=example.org"),
                   tmp_path, **trust).verified
    # not trusted: another server's word, mail from another list, a pass for another domain
    assert not _verify(dkim_pass.replace(TRUSTED.encode(), b"mx.example.net"), tmp_path,
                       **trust).verified
    assert not _verify(dkim_pass, tmp_path, lists=("other-list",), **trust).verified
    assert not _verify(dkim_pass, tmp_path).verified  # nothing configured
    assert not _verify(results(f"{TRUSTED}; dkim=pass header.d=example.net"), tmp_path,
                       **trust).verified
    assert not _verify(results(f"{TRUSTED}; dmarc=pass header.from=example.net"), tmp_path,
                       **trust).verified
    assert not _verify(results(f"{TRUSTED}; dkim=fail header.d=example.org"), tmp_path,
                       **trust).verified


def test_dns_answers_are_cached(tmp_path):
    from bot.commands.authenticity import verify_sender
    from bot.commands.dkim_keys import CachedTxt, table_txt

    table = table_txt(key_table(tmp_path, ["example.org"]))
    asked: list[str] = []

    def lookup(name: str) -> bytes | None:
        asked.append(name)
        return table(name)

    now = [0.0]
    cache = CachedTxt(lookup, ttl_seconds=3600, clock=lambda: now[0])
    signed = sign(REPLY, "example.org")
    settings = CommandSettings()
    for _ in range(30):
        assert verify_sender(signed, lists=(), settings=settings, dnsfunc=cache).verified
    assert asked == ["test._domainkey.example.org"]
    now[0] = 3601.0
    assert verify_sender(signed, lists=(), settings=settings, dnsfunc=cache).verified
    assert len(asked) == 2


def test_a_forged_from_does_not_stop_the_authors_test(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [test] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    assert test.outcome == "queued"
    # Mallory writes as Ada, without Ada's signature
    _, [forged] = thread.send(thread.v1[0], ADA, "#lorelab stop", signed_by=None)
    assert forged.outcome == "unverified" and thread.run(test.run_ids[0]).state == "queued"
    text = unwrapped(thread.answer(forged.outbox_id))
    assert "cannot verify that this mail comes from ada@example.org" in text
    assert "no DKIM signature" in text and "Nothing was done." in text
    # signed by Mallory's own domain: still not Ada
    _, [other] = thread.send(thread.v1[0], ADA, "#lorelab retest", signed_by="example.net")
    assert other.outcome == "unverified" and other.run_ids == ()
    assert other.outbox_id is None  # one answer per thread per day
    # a day later the thread is answered again
    thread.clock += dt.timedelta(days=1)
    _, [later] = thread.send(thread.v1[0], ADA, "#lorelab stop", signed_by=None)
    assert later.outbox_id is not None
    with db.session() as session:
        states = list(session.scalars(sa.select(CommandRequest.state)
                                      .order_by(CommandRequest.id)))
    assert states == ["accepted", "unverified", "unverified", "unverified"]
    assert thread.run(test.run_ids[0]).state == "queued"
    # forged mail does not use up Ada's own rate limit, and Ada's signed stop works
    _, [stop] = thread.send(thread.v1[0], ADA, "#lorelab stop")
    assert stop.outcome == "stopped" and thread.run(test.run_ids[0]).state == "cancelled"


def test_a_from_with_two_addresses_does_not_act(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [test] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    raw = thread.reply(thread.v1[0], MALLORY, "#lorelab stop", signed_by=None)
    raw = sign(_with_from(raw, b"Ada Reclaim <ada@example.org>, Mallory <mallory@example.net>"),
               "example.net")
    thread.store(raw)
    [outcome] = thread.handle(raw)
    assert outcome.outcome == "unverified" and "2 addresses" in outcome.detail
    assert thread.run(test.run_ids[0]).state == "queued"


def test_a_command_sent_through_a_relay_in_the_authors_name_does_not_act(db, tmp_path):
    """B4 Relay signs for kernel.org and names Ada in X-Original-From: lorelab reads Ada as the
    mail's author, but nothing vouches that Ada wrote it."""
    thread = Thread(db, tmp_path)
    _, [test] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    raw = thread.reply(thread.v1[0], MALLORY, "#lorelab stop", signed_by=None)
    raw = _with_from(raw, b"Ada Reclaim via B4 Relay <devnull+ada.example.org@kernel.org>")
    head, _, body = raw.partition(b"\n\n")
    raw = head + b"\nX-Original-From: Ada Reclaim <ada@example.org>\n\n" + body
    raw = sign(raw, "kernel.org")
    thread.store(raw)
    [outcome] = thread.handle(raw)
    assert outcome.outcome == "unverified"
    assert ("vouched for as devnull+ada.example.org@kernel.org, but lorelab reads its author as "
            "ada@example.org") in outcome.detail
    assert thread.run(test.run_ids[0]).state == "queued"


def test_a_maintainer_verified_by_the_list_server_may_ask(db, tmp_path):
    thread = Thread(db, tmp_path, CommandSettings(trusted_authserv_ids=[TRUSTED],
                                                  trusted_lists=["linux-mm"]))
    raw = thread.reply(thread.v1[1], HANNES, "#lorelab test hackbench", signed_by=None)
    raw = (f"Authentication-Results: {TRUSTED}; dkim=pass header.d=cmpxchg.org\n"
           f"Authentication-Results: {TRUSTED}; arc=none smtp.remote-ip=192.0.2.1\n").encode() + raw
    thread.store(raw)
    [outcome] = thread.handle(raw)
    assert outcome.outcome == "queued" and len(outcome.run_ids) == 1
    with db.session() as session:
        request = session.scalar(sa.select(CommandRequest))
        assert request is not None
        assert request.authenticated_by == f"Authentication-Results of {TRUSTED}"
