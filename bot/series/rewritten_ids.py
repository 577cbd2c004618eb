"""Ids a mail server rewrote: the first mail of a `git send-email` run, which the run's other
mails name by the id send-email gave it. Pure functions, used twice: by `ThreadIndex` to put
the two in one thread, and by `group_postings` (rule 3) to read the other mails as replies to it.

Outlook's servers, and Amazon SES (which Codeaurora sent through), give every mail sent
through them a Message-ID of their own. `git send-email` threads a run's mails under the id
it gave the first (`<20200426022650.10355-1-xc-racer2@live.ca>`: the time the run began
sending, its process id, the mail's place in the run and the sender's address), so the cover
letter arrives under the server's id and its patches in reply to an id no archive holds: two
threads, a version without its cover letter, or one split in two (linux-samsung-soc,
linux-wireless, alsa-devel: Jonathan Bakker's, Shiji Yang's, Chris Morgan's series).

The id says enough to find its mail: sent by that address, about that time (send-email dates
its mails from one second a file before it began, and SES dated them when it sent them on),
under an id that is not send-email's, and the run's first in their series: its cover letter,
or patch 1 of a series sent without one (same version, a letter's any where the patches give
none, and size). Mostly the id is the run's first mail's; where it is a later one's (Tencent's
servers keep In-Reply-To: Edward Adam Davis's `[PATCH V4 2/2]` replied to
`<...-3-eadavis@qq.com>`, his 1/2, the third mail of a run that sent two elsewhere first), the
same finds the posting's first mail, which it continues.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from bot.series.parts import ThreadMessage

# send-email's ids since git 2.9 (`<YYYYmmddHHMMSS.PID-N-address>`, the time in UTC), and
# before (`<EPOCH-PID-N-git-send-email-address>`): the N-th mail of a run.
_RUN_MAIL = re.compile(r"(\d{14})\.\d+-\d+-(\S+@\S+)|(\d{9,10})-\d+-\d+-git-send-email-(\S+@\S+)")
_SEND_EMAIL = re.compile(r"\d{14}\.\d+-\d+-|\d{9,10}-\d+-\d+-git-send-email-")
# How far the first mail's Date may be from the time in the id: send-email dates a run's mails
# from one second a file before it starts sending, a relay may date them when it sends them on.
BEFORE = dt.timedelta(minutes=10)
AFTER = dt.timedelta(minutes=2)


def run_start(msgid: str) -> tuple[dt.datetime, str] | None:
    """When a `git send-email` run began sending and its sender's address (lower-cased), from
    the id it gave one of its mails; None for any other id."""
    match = _RUN_MAIL.fullmatch(msgid)
    if match is None:
        return None
    try:
        if match[1]:
            when = dt.datetime.strptime(match[1], "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC)
            return when, match[2].lower()
        return dt.datetime.fromtimestamp(int(match[3]), dt.UTC), match[4].lower()
    except (ValueError, OverflowError):  # a stamp that is no time: not send-email's
        return None


def may_be_first(msg: ThreadMessage) -> bool:
    """Whether a mail may be the first of a run whose id was rewritten: a cover letter or patch
    1 of a series, under an id send-email did not give."""
    return (msg.kind in ("cover", "patch") and msg.counter <= 1 and msg.total > 1
            and _SEND_EMAIL.match(msg.msgid) is None)


def first_mail(
    run_id: str, part: ThreadMessage, candidates: Iterable[ThreadMessage]
) -> ThreadMessage | None:
    """The mail `part` names as `run_id`, the first of its run, among `candidates`: a cover
    letter or patch 1 (`may_be_first`) of `part`'s sender, series version (a cover letter's
    any, for a patch whose subject gives none: some write it on the letter only) and size,
    before `part` in it, dated about the time `run_id` gives. Where there are both, the one dated
    nearest to `part`: patch 1 for the later patches of a run that sent a cover letter (patch
    1 goes to the letter in its turn), and for those of a run that sent no patch 1 or letter
    of its own, after the run that did (one run a patch or a few, each run's in reply to the
    first of the run before)."""
    start = run_start(run_id)
    if start is None or part.author != start[1] or part.kind != "patch":
        return None
    when = start[0]
    found = [
        m for m in candidates
        if m.author == part.author and m.date is not None
        and when - BEFORE <= m.date <= when + AFTER
        and (m.version == part.version or m.kind == "cover" and not part.version_explicit)
        and m.total == part.total and m.counter < part.counter
        and may_be_first(m)
    ]  # fmt: skip
    sent = part.date or when  # an undated part: as if sent when its run began
    return min(found, key=lambda m: (abs(m.date - sent), m.counter, m.msgid),  # type: ignore[operator]
               default=None)


def window(msg: ThreadMessage) -> tuple[dt.datetime, dt.datetime] | None:
    """The dates within which the other mails of `msg`'s run, or its run's first, were sent:
    around the time its hook's id gives when that is a run's, else around its own date when it
    may be a run's first."""
    start = run_start(msg.hook) if msg.hook else None
    if start is not None:
        return start[0] - BEFORE, start[0] + AFTER
    if msg.date is not None and may_be_first(msg):
        return msg.date - AFTER, msg.date + BEFORE
    return None
