"""Series sent without threading headers (`git format-patch` without `--thread`): which parts
belong together. Pure functions, used twice: by `ThreadIndex` to put such parts in one thread,
and by `group_postings` to split that thread into postings.

An *unthreaded part* is a cover letter `[PATCH 0/N]` or a patch `[PATCH i/N]` (N > 1) with no
In-Reply-To and no References. Two parts are *kin* when one person sent them (`same_author`)
with the same subject prefix (version, size N, RFC, RESEND and tags such as `mm-unstable`) and
at most `WINDOW` apart. Threads are joined only through a patch `i/N` with i >= 2: in a threaded
series only the cover letter (or patch 1) has no parent, so two threaded series of one author
are never joined by their roots.

Within a thread, kin parts are split into postings in order of date: a part goes with a
posting (of its kin) that does not have its number yet and whose dates still run in the order
of the numbers, give or take `ORDER_SLACK` (`git send-email` sends 0, 1, 2, ... a second apart;
by hand, patches go out minutes apart and sometimes one too early); of those, one in exact
order first, then the nearest in time. So a series sent twice within the hour (a resend) is
two postings, and the result does not depend on the order the mails arrived in. Mails whose
Date is not their sending time (files sent by a mail client that kept format-patch's author
dates) may be split apart.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from bot.series.parts import ThreadMessage, same_author

# Parts of one posting further apart than this are not taken as one: send-email sends a whole
# series within seconds, and a hand-sent series within minutes.
WINDOW = dt.timedelta(hours=1)
ORDER_SLACK = dt.timedelta(minutes=10)  # a part sent this much before a lower number still fits

PrefixKey = tuple[int, int, bool, bool, tuple[str, ...]]


def prefix_key(msg: ThreadMessage) -> PrefixKey:
    """What the subject prefixes of one posting's parts share: version, N, RFC, RESEND, tags."""
    tags = tuple(sorted({p.lower() for p in msg.prefixes}))
    return (msg.version, msg.total, msg.rfc, msg.resend, tags)


def is_unthreaded_part(msg: ThreadMessage) -> bool:
    """A numbered cover letter or patch sent with no threading headers at all."""
    if msg.in_reply_to or msg.references or msg.total < 2 or msg.date is None:
        return False
    if msg.kind == "cover":
        return msg.counter == 0
    return msg.kind == "patch" and 1 <= msg.counter <= msg.total


def joins_threads(a: ThreadMessage, b: ThreadMessage) -> bool:
    """Whether unthreaded parts `a` and `b` go in one thread: kin, one of them a patch >= 2."""
    return max(a.counter, b.counter) >= 2 and a.msgid != b.msgid and kin(a, b)


def kin(a: ThreadMessage, b: ThreadMessage) -> bool:
    """Parts one person sent with the same subject prefix, at most `WINDOW` apart."""
    if a.date is None or b.date is None or abs(a.date - b.date) > WINDOW:
        return False
    return prefix_key(a) == prefix_key(b) and same_author(a, b)


def split_postings(chains: Sequence[list[ThreadMessage]]) -> list[list[ThreadMessage]]:
    """The postings formed by `chains` (each headed by an unthreaded part, followed by the
    messages threaded under it), as lists of messages, in order of their first date."""
    postings: list[list[ThreadMessage]] = []
    for chain in sorted(chains, key=_start):
        head = chain[0]
        numbers = {m.counter for m in chain}
        fitting = [
            p for p in postings
            if not numbers & {m.counter for m in p} and any(kin(head, m) for m in p)
            and _in_order(p, chain, ORDER_SLACK)
        ]  # fmt: skip
        if fitting:
            best = min(fitting, key=lambda p: (not _in_order(p, chain), _distance(p, head)))
            best.extend(chain)
        else:
            postings.append(list(chain))
    return postings


def _start(chain: list[ThreadMessage]) -> tuple[dt.datetime, int, str]:
    head = chain[0]
    assert head.date is not None  # an unthreaded part has a date
    return (head.date, head.counter, head.msgid)


def _in_order(
    posting: list[ThreadMessage], chain: list[ThreadMessage], slack: dt.timedelta = dt.timedelta()
) -> bool:
    """Whether the posting's dates still run in the order of its numbers with `chain` added:
    no part dated more than `slack` before a part of a lower number."""
    dated = sorted((m for m in [*posting, *chain] if m.date is not None), key=lambda m: m.counter)
    latest = None
    for m in dated:
        assert m.date is not None
        if latest is not None and m.date + slack < latest:
            return False
        latest = m.date if latest is None else max(latest, m.date)
    return True


def _distance(posting: list[ThreadMessage], head: ThreadMessage) -> dt.timedelta:
    assert head.date is not None
    return min(abs(m.date - head.date) for m in posting if m.date is not None)
