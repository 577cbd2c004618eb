"""Whether a command mail's From can be believed: who vouches for it, or why nobody does.

A `#lorelab test|retest|stop` is only acted on when its sender is verified; the From field alone
is whatever its writer typed. The sender is verified by:
1. a DKIM signature that verifies (dkimpy; keys from bot.commands.dkim_keys) whose domain (d=)
   is the From domain or a parent of it, signs the whole body (no l=), and signs From, Date,
   Message-ID, and In-Reply-To and References where the mail has them (so a signed mail
   cannot be sent again as a new one, or moved under another series); or
2. for mail of a list in `[commands] trusted_lists`, an Authentication-Results field (RFC 8601)
   whose authserv-id is in `trusted_authserv_ids` and that says dkim=pass for such a domain
   (header.d, or header.i's domain) or dmarc=pass for the From domain (header.from). A list
   server that adds these fields removes those that arriving mail carries with its own
   authserv-id (RFC 8601, section 5), so a field bearing a trusted id is the server's own.

A From field must name exactly one address, and appear once; `From: ada@..., mallory@...`,
an encoded-word with no address, and two From fields are refused whatever signs them.

Pure but for the key lookups, which go through the `dnsfunc` given. The rules as users read
them: docs/replies.md, "Commands: who is believed".
"""

from __future__ import annotations

import email.utils
import logging
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

import dkim
import dkim.util

from bot.config.sections import CommandSettings
from bot.report.compose.message import ANSWERABLE

# Fields a signature must cover when the mail has them.
MUST_SIGN = ("From", "Date", "Message-ID", "In-Reply-To", "References")
_COMMENT = re.compile(r"\([^()]*\)")
# dkimpy logs each failure it returns as False at ERROR; the reason goes to the sender instead.
_DKIM_LOG = logging.getLogger(__name__ + ".dkimpy")
_DKIM_LOG.setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class Authenticity:
    """The sender of a mail as far as lorelab can tell."""

    address: str  # the From address, lower case; "" when the From field has no single one
    verified_by: str = ""  # e.g. "DKIM signature of example.org"; "" when not verified
    reason: str = ""  # why not verified, for the sender to read

    @property
    def verified(self) -> bool:
        return bool(self.verified_by)


def verify_sender(raw: bytes, *, lists: Collection[str], settings: CommandSettings,
                  dnsfunc: Callable[..., bytes | None]) -> Authenticity:
    """Who vouches for the From of `raw`, a mail stored from `lists` (their names)."""
    try:
        headers = [(name.decode("ascii").lower(), value) for name, value
                   in dkim.rfc822_parse(raw)[0]]
    except (dkim.MessageFormatError, UnicodeDecodeError) as exc:
        return Authenticity("", reason=f"its header cannot be read ({exc})")
    froms = [value for name, value in headers if name == "from"]
    if len(froms) != 1:
        return Authenticity("", reason=f"it has {len(froms)} From fields")
    text = froms[0].decode("utf-8", errors="replace")
    addresses = [address for _, address in email.utils.getaddresses([text]) if address]
    if len(addresses) != 1:
        return Authenticity("", reason=f"its From field names {len(addresses)} addresses")
    address = addresses[0].strip().lower()
    if not ANSWERABLE.fullmatch(address):
        return Authenticity("", reason="its From field has no address lorelab can read")
    domain = address.rpartition("@")[2]
    reasons: list[str] = []
    by_results = _authentication_results(headers, domain, lists, settings, reasons)
    if by_results:
        return Authenticity(address, verified_by=by_results)
    present = {name for name, _ in headers}
    signatures = [value for name, value in headers if name == "dkim-signature"]
    if not signatures:
        reasons.append("it has no DKIM signature")
    for index, value in enumerate(signatures):
        problem = _signature_problem(raw, index, value, domain, present, dnsfunc)
        if not problem:
            return Authenticity(address, verified_by=f"DKIM signature of {domain}")
        reasons.append(problem)
    return Authenticity(address, reason="; ".join(reasons))


def aligned(signer: str, domain: str) -> bool:
    """Whether `signer` (a d= or header.d) speaks for mail from `domain`: the same, or a
    parent domain of it (not a top-level domain alone)."""
    signer = signer.strip().rstrip(".").lower()
    return "." in signer and (domain == signer or domain.endswith("." + signer))


def _signature_problem(raw: bytes, index: int, value: bytes, domain: str, present: set[str],
                       dnsfunc: Callable[..., bytes | None]) -> str:
    """Why the `index`th DKIM-Signature does not vouch for `domain`; "" when it does."""
    try:
        tags = dkim.util.parse_tag_value(value)
        signer = tags.get(b"d", b"").decode("ascii").lower()
    except (dkim.util.InvalidTagValueList, UnicodeDecodeError) as exc:
        return f"a DKIM signature cannot be read ({exc})"
    if not aligned(signer, domain):
        return f"it is signed by d={signer}, not by {domain}"
    if b"l" in tags:
        return f"the signature of d={signer} covers only part of the body (l=)"
    signed = {name.strip().lower() for name in tags.get(b"h", b"").decode("ascii", "replace")
              .split(":")}
    missing = [name for name in MUST_SIGN if name.lower() in present
               and name.lower() not in signed]
    if missing:
        return f"the signature of d={signer} does not cover {', '.join(missing)}"
    selector = tags.get(b"s", b"").decode("ascii", "replace")
    try:
        # Asked first (the answer is kept) so that a missing key is told as such: dkimpy only
        # logs it.
        if not dnsfunc(f"{selector}._domainkey.{signer}"):
            return f"no key is published at {selector}._domainkey.{signer}"
        if dkim.DKIM(raw, minkey=1024, logger=_DKIM_LOG).verify(idx=index, dnsfunc=dnsfunc):
            return ""
    except dkim.DKIMException as exc:
        return f"the signature of d={signer} does not verify ({exc})"
    except Exception as exc:  # noqa: BLE001 - DNS failures, and dkimpy on hostile input
        return f"the signature of d={signer} could not be checked ({type(exc).__name__}: {exc})"
    return f"the signature of d={signer} does not verify"


def _authentication_results(headers: list[tuple[str, bytes]], domain: str,
                            lists: Collection[str], settings: CommandSettings,
                            reasons: list[str]) -> str:
    """"Authentication-Results of ID" when a trusted server vouches for `domain`, else ""."""
    trusted_ids = {i.strip().lower() for i in settings.trusted_authserv_ids}
    if not trusted_ids or not set(lists) & set(settings.trusted_lists):
        return ""
    for name, value in headers:
        if name != "authentication-results":
            continue
        text = value.decode("utf-8", errors="replace")
        while _COMMENT.search(text):
            text = _COMMENT.sub(" ", text)
        server, *results = [part.strip() for part in text.split(";")]
        server_id = (server.split() or [""])[0].lower()
        if server_id not in trusted_ids:
            continue
        for result in results:
            if _passes(result, domain):
                return f"Authentication-Results of {server_id}"
        reasons.append(f"{server_id} did not find a DKIM or DMARC pass for {domain}")
    return ""


def _passes(result: str, domain: str) -> bool:
    """Whether one resinfo ("dkim=pass header.d=example.org ...") vouches for `domain`."""
    words = result.split()
    if not words:
        return False
    method, _, outcome = words[0].lower().partition("=")
    properties = {}
    for word in words[1:]:
        key, equals, value = word.partition("=")
        if equals:
            properties[key.lower()] = value.strip('"').lower()
    if outcome != "pass":
        return False
    if method.split("/")[0] == "dkim":
        signer = properties.get("header.d") or properties.get("header.i", "").rpartition("@")[2]
        return aligned(signer, domain)
    if method.split("/")[0] == "dmarc":
        return properties.get("header.from", domain) == domain
    return False
