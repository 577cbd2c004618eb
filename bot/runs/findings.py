"""What a run shows its reader beside its outcome: the headline changes and the reply it wrote.

`headline` reads the main metrics its lab campaigns stored when they were judged (one line per
metric: name, change, interval, verdict); `run_reply` finds the reply this run wrote (its own
Message-ID, bot.report.compose.message) and the replies earlier runs wrote to the same series
version, so that `lorelab review`, `retest` and `runs show` print this run's result and say when
the list was already answered.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import LabCampaign, OutboxReply, Run
from bot.report.deliver.outbox import earlier_replies
from bot.runs.records import ReportRecord


def _pct(value: float, digits: int = 2) -> str:
    return f"{value:+.{digits}f}%" if math.isfinite(value) else "?"


@dataclass(frozen=True)
class Headline:
    campaign: int
    benchmark: str  # "readtwice mb=64"
    metric: str
    change_pct: float
    ci_pct: tuple[float, float]
    verdict: str  # the Verdict value: "regression", "no change", "inconclusive", ...
    words: str  # as the reply prints it

    def line(self) -> str:
        low, high = (_pct(x) for x in self.ci_pct)
        return (f"{self.metric} ({self.benchmark}): {_pct(self.change_pct)} [{low}, {high}] "
                f"{self.words}")

    def short(self) -> str:
        """For a table cell: "readtwice.throughput -3.1% regression"."""
        return f"{self.metric} {_pct(self.change_pct, 1)} {self.verdict}"

    def as_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "benchmark": self.benchmark, "metric": self.metric,
                "change_pct": self.change_pct, "ci_pct": list(self.ci_pct),
                "verdict": self.verdict, "words": self.words}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Headline:
        low, high = data["ci_pct"]
        return cls(data["campaign"], data["benchmark"], data["metric"], data["change_pct"],
                   (low, high), data["verdict"], data["words"])


def headline(campaigns: Iterable[LabCampaign]) -> list[Headline]:
    """The main metrics of the finished campaigns, as they were judged and stored."""
    found = []
    for campaign in campaigns:
        if campaign.state != "done":
            continue
        result = campaign.result or {}
        label = " ".join([campaign.benchmark, *(f"{k}={v}" for k, v in
                                                 result.get("parameters", []))])
        for metric in result.get("metrics", []):
            if metric.get("secondary"):
                continue
            low, high = metric.get("ci_pct") or (None, None)
            found.append(Headline(campaign.id, label, metric["metric"],
                                  _number(metric.get("change_pct")),
                                  (_number(low), _number(high)), metric["verdict"],
                                  metric.get("words", metric["verdict"])))
    return found


def _number(value: Any) -> float:
    """A stored figure; JSON keeps no infinity or NaN, so an unbounded one comes back as None
    (or a string): NaN here, printed as "?"."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def run_campaigns(session: Session, run: Run, *, done: bool = False) -> list[LabCampaign]:
    """The run's lab campaigns in the order they ran; only the finished ones with `done`."""
    query = sa.select(LabCampaign).where(LabCampaign.run_id == run.id)
    if done:
        query = query.where(LabCampaign.state == "done")
    return list(session.scalars(query.order_by(LabCampaign.id)))


@dataclass(frozen=True)
class RunReply:
    reply: OutboxReply | None  # the reply this run wrote, if it wrote one
    earlier: tuple[OutboxReply, ...]  # replies of that kind to the same version, before it

    def notes(self) -> list[str]:
        """Lines telling a maintainer what else the list got, or will get, for this version."""
        if self.reply is None:
            return []
        lines = [f"earlier {r.kind} reply for this version: <{r.message_id}> ({r.state})"
                 for r in self.earlier]
        if self.reply.reason:
            lines.append(f"this reply is {self.reply.state}: {self.reply.reason}")
        return lines


def run_reply(session: Session, run: Run) -> RunReply:
    report = next((s for s in run.steps if s.name == "report"), None)
    reply_id = ReportRecord.from_step(report).reply if report is not None else None
    row = session.get(OutboxReply, reply_id) if reply_id else None
    return RunReply(row, tuple(earlier_replies(session, row)) if row is not None else ())
