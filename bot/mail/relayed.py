"""Who wrote a mail that a relay sent in its own name.

Some mail reaches a list from a relay that puts its own address in From and the author's
elsewhere, naming itself "<author> via <relay>":
- Google Groups, for authors whose domain publishes a strict DMARC policy (42% of kasan-dev's
  archive): `'Marco Elver' via kasan-dev <kasan-dev@googlegroups.com>`, the author in
  X-Original-From and Reply-To;
- b4's web relay: `Kairui Song via B4 Relay <devnull+kasong.tencent.com@kernel.org>`, the author
  in X-Original-From and Reply-To;
- Mailman lists that munge From for DMARC: `Name via Listname <list@...>`, the author in
  Reply-To.

A series' author, whether two parts come from one author (grouping, trailers), and whom the
bot's reply is addressed to are the author's, not the relay's (a reply to B4 Relay's `devnull`
address reaches no one), and so is whoever a claim quoting such a mail belongs to
(`without_relay`, for `bot.analysis.claims`). So the sender of such a mail is the author the
relay names: the one address of X-Original-From, else of Reply-To. Mail without the "via" form
keeps its From, so a Reply-To set by an author for other reasons changes nothing. The raw mail
keeps its From, and a command sent through a relay is not taken as the author's: the relay's
signature vouches for the relay (`bot.commands.handler`).
"""

from __future__ import annotations

import re

from bot.mail.headers import parse_addresses
from bot.mail.mime import Headers
from bot.mail.record import Address

# What relays put in the display name: "'Name' via group", "Name via B4 Relay" (in lower case:
# "Juan Via Lopez" is a name).
_VIA = re.compile(r"\s+via\s+\S.*$", re.S)
RELAY_FIELDS = frozenset({"x-original-from", "reply-to"})  # the fields it reads


def without_relay(name: str) -> str:
    """The author's name in a relay's display name: "Kairui Song" of "Kairui Song via B4
    Relay"; any other name as it is."""
    match = _VIA.search(name)
    return name[: match.start()].strip().strip("'\"").strip() if match else name


def relayed_author(sender: Address, headers: Headers, problems: list[str]) -> Address:
    """The author of a mail whose From is `sender`: the author its relay names, else `sender`."""
    match = _VIA.search(sender.name)
    if match is None:
        return sender
    for field in ("x-original-from", "reply-to"):
        values = headers.get(field, ())
        if len(values) != 1:
            continue
        found = [a for a in parse_addresses(values[0], problems, field.title()) if a.email]
        if len(found) == 1 and found[0].email != sender.email:
            # B4 Relay's Reply-To has no name: the name before "via" is the author's.
            name = found[0].name or without_relay(sender.name)
            return Address(name=name, email=found[0].email)
    return sender
