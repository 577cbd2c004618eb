"""When not to write (docs/replies.md): allow-listed lists, opt-outs, rate limits, moderation.

Pure decisions over plain data; `bot.report.deliver.outbox` and `bot.report.deliver.delivery`
apply them. The allow-list, opt-out and moderation are decided when a reply is stored, and
again when a maintainer retries or approves a suppressed reply (the settings may have changed
since); the opt-out again and the rate limits when it is about to be sent, since both can
change while a reply waits.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

RATE_WINDOW = dt.timedelta(days=1)


class OptOutList:
    """Addresses ("a@example.org") and whole domains ("@example.org") never written to."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.addresses: set[str] = set()
        self.domains: set[str] = set()
        for entry in entries:
            entry = entry.strip().lower().removeprefix("*")
            if not entry:
                continue
            if entry.startswith("@"):
                self.domains.add(entry[1:])
            else:
                self.addresses.add(entry)

    def __contains__(self, address: object) -> bool:
        if not isinstance(address, str):
            return False
        address = address.strip().lower()
        return address in self.addresses or address.rpartition("@")[2] in self.domains


@dataclass(frozen=True)
class Admission:
    """The state a new reply starts in, and why when it is not going out."""

    state: str  # one of bot.report.deliver.outbox's states
    reason: str | None = None


def admit(
    *,
    kind: str,
    author: str,
    lists: Sequence[str],
    allowed_lists: Sequence[str],
    allow_any_list: bool,
    opt_out: OptOutList,
    moderation: bool,
    disabled_kinds: Sequence[str] = (),
    cc: Sequence[str] = (),
) -> Admission:
    """Suppressed (with the reason), pending-approval under moderation, else queued.

    `cc` is the reply's Cc: when no list is among it, the reason names what it does hold."""
    if kind in disabled_kinds:
        return Admission("suppressed", f"{kind} replies are disabled in this deployment "
                                       "([report] does_not_apply_replies)")
    if author in opt_out:
        return Admission("suppressed", f"the author {author} opted out")
    if not lists:
        if not cc:
            return Admission("suppressed", "the reply would go to no list: it has no Cc")
        return Admission("suppressed", (
            f"no configured list in its Cc ({', '.join(cc)}): add the list's address to "
            "[[lists]], then `lorelab outbox retry` the reply"))
    allowed = {address.lower() for address in allowed_lists}
    refused = [address for address in lists if address.lower() not in allowed]
    if refused and not allow_any_list:
        return Admission("suppressed", f"not allow-listed: {', '.join(refused)}")
    opted_lists = [address for address in lists if address in opt_out]
    if opted_lists:
        return Admission("suppressed", f"the list {', '.join(opted_lists)} opted out")
    if moderation:
        return Admission("pending-approval")
    return Admission("queued")


@dataclass(frozen=True)
class RecentSend:
    """A reply that went out (or began to) inside the rate window."""

    started_at: dt.datetime
    author: str
    lists: tuple[str, ...]


@dataclass(frozen=True)
class RateDecision:
    reason: str | None  # None: may send now
    retry_at: dt.datetime | None = None  # when the window has room again


def rate_limit(
    *,
    author: str,
    lists: Sequence[str],
    recent: Sequence[RecentSend],
    now: dt.datetime,
    per_list: int,
    per_author: int,
) -> RateDecision:
    """Whether one more reply to `author` on `lists` stays within the daily limits.

    A reply over a limit is deferred, not dropped: it goes out when the 24-hour window has room
    (a newer version of the series suppresses it in the meantime).
    """
    window = [send for send in recent if send.started_at > now - RATE_WINDOW]
    checks = [
        (f"the author {author}", per_author, [s for s in window if s.author == author.lower()])
    ]
    for address in lists:
        key = address.lower()
        checks.append((f"the list {address}", per_list, [s for s in window if key in s.lists]))
    for who, limit, sends in checks:
        if len(sends) >= limit:
            # Room again when enough of the counted sends have left the window.
            oldest = sorted(send.started_at for send in sends)[len(sends) - limit]
            return RateDecision(
                f"rate limit: {len(sends)} replies to {who} in 24 hours (limit {limit})",
                oldest + RATE_WINDOW,
            )
    return RateDecision(None)
