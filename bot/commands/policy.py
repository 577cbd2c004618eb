"""Who may run which `#lorelab` command, and how often: the [commands] settings and the rules.

- `help`, and a line that was not understood: anyone (the answer is the help or the problem).
- `test`, `retest`, `bisect`, `compare` (each costs lab time): the series author; a maintainer
  or reviewer of the files the series touches (M:/R: in the tree's MAINTAINERS) who is on the
  thread (To/Cc of its postings, or of the mail answered); anyone on the allow-list.
- `stop`: the series author, or such a maintainer. The allow-list does not reach it: stopping
  someone else's test is for the people responsible for the code.
- Nothing at all for mail whose sender cannot be verified (bot.commands.authenticity): its
  commands are recorded, not done, and answered at most once per thread per day.
- Every sender, whatever they ask, gets at most `rate_limit` commands done in any
  `window_minutes`; past that a command is recorded and not done, and only the first such one
  in a window is answered, so that a flood of mail does not become a flood of replies.
- Whoever asks, a thread gets at most `thread_answers` answers, and a series `series_answers`,
  in any `window_minutes` (senders that rotate their address are not held by the per-sender
  limit); past that commands are still done, but not answered.

Pure: the handler (bot.commands.handler) gathers the facts and records the decisions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config.sections import CommandSettings

# The commands that make runs, and who may give them.
ASKS_FOR_RUNS = ("test", "retest", "bisect", "compare")


@dataclass(frozen=True)
class Requester:
    """What the sender of a command is to the series it is about."""

    address: str  # lower case
    author: bool = False
    maintainer: bool = False  # in MAINTAINERS for the touched files, and on the thread
    allow_listed: bool = False


def on_allow_list(address: str, allow_list: Sequence[str]) -> bool:
    """Whether `address` is on the list, itself or by its domain ("@example.org")."""
    address = address.strip().lower()
    domain = "@" + address.rpartition("@")[2]
    entries = {entry.strip().lower() for entry in allow_list}
    return address in entries or domain in entries


def may_run(command: str, requester: Requester) -> bool:
    if command in ASKS_FOR_RUNS:
        return requester.author or requester.maintainer or requester.allow_listed
    if command == "stop":
        return requester.author or requester.maintainer
    return True


def who_may(command: str) -> str:
    """The sentence a refused sender reads."""
    if command == "stop":
        return ("Only the author of the series and the maintainers of the files it touches "
                "(in MAINTAINERS, and on this thread) may stop its tests.")
    return ("Only the author of the series, the maintainers of the files it touches "
            "(in MAINTAINERS, and on this thread) and the addresses the lab allows may ask "
            "for a test.")


@dataclass(frozen=True)
class PastRequest:
    """One of the sender's commands within the window."""

    at: dt.datetime
    limited: bool  # it was over the limit (not done)
    answered: bool


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    answer: bool  # allowed ones are always answered; limited ones once per window
    retry_at: dt.datetime | None = None  # limited: when the sender's next command is taken


def rate_decision(past: Sequence[PastRequest], now: dt.datetime,
                  settings: CommandSettings) -> RateDecision:
    """Whether one more command of a sender is done, given their commands since
    `now - window` (those before are ignored)."""
    if settings.rate_limit <= 0:
        return RateDecision(allowed=True, answer=True)
    start = now - dt.timedelta(minutes=settings.window_minutes)
    recent = [p for p in past if p.at > start]
    done = sorted(p.at for p in recent if not p.limited)
    if len(done) < settings.rate_limit:
        return RateDecision(allowed=True, answer=True)
    # The count falls below the limit when the oldest command that keeps it there leaves.
    retry_at = done[-settings.rate_limit] + dt.timedelta(minutes=settings.window_minutes)
    told = any(p.limited and p.answered for p in recent)
    return RateDecision(allowed=False, answer=not told, retry_at=retry_at)


UNVERIFIED_ANSWER_EVERY = dt.timedelta(days=1)  # per thread


def answer_allowed(on_thread: int, on_series: int, settings: CommandSettings) -> bool:
    """Whether one more answer may go out, given the answers sent in the window on the
    command's thread and on its series."""
    limits = ((on_thread, settings.thread_answers), (on_series, settings.series_answers))
    return all(limit <= 0 or sent < limit for sent, limit in limits)
