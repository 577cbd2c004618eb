"""The claims report of a message as a whole (format "lorelab-claims/2", docs/claims.md), and of
a thread with quoted copies of claims already reported left out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.analysis.claims.benchmarks import block_benchmarks
from bot.analysis.claims.command_lines import Command, find_all_commands
from bot.analysis.claims.doubts import Doubt, find_doubts
from bot.analysis.claims.extract import extract_claims
from bot.analysis.claims.judge import judge_claim
from bot.analysis.claims.judgement import JudgedClaim
from bot.analysis.claims.model import Claim
from bot.analysis.claims.numbers import Budget, TooMuchWork
from bot.analysis.claims.text import message_blocks
from bot.analysis.claims.unmentioned import Unmentioned, find_unmentioned
from bot.analysis.verdict import DEFAULT_ALPHA, DEFAULT_DELTA

FORMAT = "lorelab-claims/2"


@dataclass(frozen=True)
class MessageClaims:
    """Everything the claims command reports about one message."""

    subject: str
    sender: str
    msgid: str | None
    benchmarks: tuple[str, ...]
    commands: tuple[Command, ...]
    claims: tuple[JudgedClaim, ...]
    doubts: tuple[Doubt, ...]
    unmentioned: tuple[Unmentioned, ...] = ()
    unreadable: str | None = None  # why the message could not be read; None when it was

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "subject": self.subject,
            "sender": self.sender,
            "msgid": self.msgid,
            "benchmarks": list(self.benchmarks),
            "commands": [c.to_dict() for c in self.commands],
            "claims": [c.to_dict() for c in self.claims],
            "doubts": [d.to_dict() for d in self.doubts],
            "unmentioned": [u.to_dict() for u in self.unmentioned],
            "unreadable": self.unreadable,
        }


def analyse_message(
    subject: str,
    sender: str,
    body: str,
    msgid: str | None = None,
    *,
    delta: float = DEFAULT_DELTA,
    alpha: float = DEFAULT_ALPHA,
    budget: Budget | None = None,
) -> MessageClaims:
    """Claims with judgements, benchmarks, commands and doubts of one message; a message too
    large to read within `budget` gives no claims and says why (`unreadable`)."""
    budget = budget or Budget()
    try:
        return _analyse(subject, sender, body, msgid, delta=delta, alpha=alpha, budget=budget)
    except TooMuchWork as exc:
        return MessageClaims(subject, sender, msgid, (), (), (), (), (), f"cannot read: {exc}")


def unreadable_message(subject: str, sender: str, msgid: str | None, reason: str) -> MessageClaims:
    """The report of a message that could not be read at all (binary data, no text part)."""
    return MessageClaims(subject, sender, msgid, (), (), (), (), (), f"cannot read: {reason}")


def _analyse(
    subject: str,
    sender: str,
    body: str,
    msgid: str | None,
    *,
    delta: float,
    alpha: float,
    budget: Budget,
) -> MessageClaims:
    claims = extract_claims(body, sender=sender, budget=budget)
    judged = tuple(JudgedClaim(c, judge_claim(c, claims, delta=delta, alpha=alpha)) for c in claims)
    budget.charge(sum(len(c.measurements) for c in claims))
    names = {name for block in message_blocks(body, sender) for name in block_benchmarks(block)}
    return MessageClaims(
        subject=subject,
        sender=sender,
        msgid=msgid,
        benchmarks=tuple(sorted(names)),
        commands=tuple(find_all_commands(body, sender=sender)),
        claims=judged,
        doubts=tuple(_doubts_outside_tables(find_doubts(body, sender=sender), claims)),
        unmentioned=tuple(find_unmentioned(judged, body, sender)),
    )


def _doubts_outside_tables(doubts: Sequence[Doubt], claims: Sequence[Claim]) -> list[Doubt]:
    """Doubts in prose only: a table's "%stddev" or "Stddev" heading is not a reviewer's doubt."""
    tables = {line.number for c in claims if c.kind in ("table", "summary") for line in c.lines}
    return [
        d for d in doubts
        if 2 * len({line.number for line in d.lines} & tables) <= len(d.lines)
    ]  # fmt: skip


def drop_repeated_quotes(thread: Sequence[MessageClaims]) -> list[MessageClaims]:
    """The messages of a thread (oldest first) without quoted copies of claims reported already:
    a claim quoted in a reply is dropped when its author's own message is in the thread, or when
    an earlier reply quoted it. Claims keep their per-message index (so gaps may appear)."""
    own = {
        _claim_key(j.claim) for m in thread for j in m.claims if j.claim.speaker.role == "replier"
    }
    seen = set(own)
    kept = []
    for message in thread:
        claims = []
        for judged in message.claims:
            key = _claim_key(judged.claim)
            if judged.claim.speaker.role == "quoted" and key in seen:
                continue
            seen.add(key)
            claims.append(judged)
        kept.append(replace(message, claims=tuple(claims)))
    return kept


def _claim_key(claim: Claim) -> tuple[str, tuple[str, ...]]:
    """A claim's kind and its lines' words: equal for a claim and a quoted copy of it."""
    return claim.kind, tuple(" ".join(line.text.split()) for line in claim.lines)
