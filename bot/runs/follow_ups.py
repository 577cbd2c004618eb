"""Follow-ups of a review: which ones a finished review calls for, and making each exactly once.

A follow-up is a run of its own kind (bot.runs.lifecycle.FOLLOW_UPS), child of the review run it
follows, that answers the question the review's result raises in one more reply on the thread
(docs/replies.md, "Follow-ups"):

- bisect: the review found a change (a regression, or an improvement the author did not claim)
  in a series of several patches: which patch brings it;
- align: the review found a change: does it survive forced function alignment;
- compare, options {"alternative": MSGID}: a reply in the thread from someone other than the
  author carries an inline diff answering a patch of the version: the reviewer's version as a
  third arm. One asked for by mail (trigger "email:ADDRESS") is "on request": its reply says
  when the diff does not apply;
- experiment: the author states benchmark command lines (cover letter, replies): run as they
  ran them.

Each is off when `[follow_ups]` says so. `plan` is the rule, pure: a review's facts in, the
follow-ups out. `planned_follow_ups` reads those facts from the database, `start_follow_up` makes
one run (same tree, base, lab host and benchmarks as the review unless asked otherwise) unless
the same follow-up (kind, benchmarks, options) of the same review exists already, whatever its
state. The report step calls `start_follow_ups` after the review's reply is written; each round
of `lorelab run` calls `compare_new_alternatives` for inline diffs that arrive later, and sends
the follow-ups no one has sent (bot.runs.rounds).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.benchmarks.spec import from_spec
from bot.config import Settings
from bot.config.lab_hosts import find_host
from bot.config.sections import FollowUpSettings
from bot.db.models import LabCampaign, Message, Patch, Run, SeriesVersion
from bot.mail.record import MessageKind
from bot.report.compose.results import ClaimQuote
from bot.runs.experiment_plan import planned_experiment
from bot.runs.lifecycle import create_run
from bot.runs.outcome import Outcome, outcome_of
from bot.runs.states import RunState
from bot.runs.stops import series_stopped

# What a review that measured can have found; the others (not applied, not built, not
# benchmarked) leave nothing to follow up.
MEASURED = (Outcome.REGRESSION, Outcome.IMPROVEMENT, Outcome.NO_CHANGE, Outcome.INCONCLUSIVE)
CHANGES = (Outcome.REGRESSION.value, Outcome.IMPROVEMENT.value)
AUTO = "auto"  # the trigger of the follow-ups lorelab starts by itself

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReviewFacts:
    """What the follow-up rule needs to know about a finished review."""

    outcome: str  # bot.runs.outcome.Outcome's label
    patches: int  # in the series
    changed: tuple[str, ...] = ()  # the benchmarks (specs) whose main metric changed
    claimed_improvement: bool = False  # the author claims the series makes something faster
    alternatives: tuple[str, ...] = ()  # Message-IDs of reviewers' inline diffs on its patches
    experiment: FollowUp | None = None  # the author's own commands the lab can run, if any


@dataclass(frozen=True)
class FollowUp:
    """One follow-up to make: its kind, what it is asked for, and its benchmarks (empty: the
    review's)."""

    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)
    benchmarks: tuple[str, ...] = ()


def claims_improvement(claim: ClaimQuote) -> bool:
    """Whether an author's claim says the series makes something better."""
    if claim.change_pct is None or claim.higher_is_better is None or claim.change_pct == 0:
        return False
    return (claim.change_pct > 0) == claim.higher_is_better


def plan(facts: ReviewFacts, settings: FollowUpSettings) -> list[FollowUp]:
    """The follow-ups a finished review calls for, in the order they should run."""
    if facts.outcome not in MEASURED:
        return []
    changed = facts.outcome in CHANGES
    unexplained = facts.outcome == Outcome.REGRESSION or (
        facts.outcome == Outcome.IMPROVEMENT and not facts.claimed_improvement)
    found: list[FollowUp] = []
    if settings.bisect and unexplained and facts.patches > 1:
        found.append(FollowUp("bisect", {}, facts.changed))
    if settings.align and changed:
        found.append(FollowUp("align", {}, facts.changed))
    if settings.compare:
        found += [FollowUp("compare", {"alternative": msgid}) for msgid in facts.alternatives]
    if settings.experiment and facts.experiment is not None:
        found.append(facts.experiment)
    return found


# ---------------------------------------------------------------------------------------------
# The facts, from the database


def changed_benchmarks(review: Run, campaigns: Iterable[LabCampaign]) -> tuple[str, ...]:
    """The review's benchmarks (as it named them) whose finished campaign found a change in a
    main metric."""
    found: list[str] = []
    for campaign in campaigns:
        metrics = (campaign.result or {}).get("metrics", []) if campaign.state == "done" else []
        if any(m.get("verdict") in CHANGES for m in metrics if not m.get("secondary")):
            spec = _spec_of(review, campaign)
            if spec not in found:
                found.append(spec)
    return tuple(found)


def reviewed_spec(review: Run, campaign: LabCampaign) -> str | None:
    """The review's own spec for the campaign's benchmark ("readtwice:mb=512"), which may set
    what the campaign's parameters do not record (a metric's delta); None if it has none."""
    for spec in review.benchmarks or []:
        try:
            bench = from_spec(spec)
        except ValueError:  # a benchmark the registry no longer has: not this campaign's
            continue
        if bench.name == campaign.benchmark and dict(bench.parameters) == campaign.parameters:
            return spec
    return None


def _spec_of(review: Run, campaign: LabCampaign) -> str:
    """The review's own spec for the campaign's benchmark, else one made from the campaign's
    name and parameters."""
    return reviewed_spec(review, campaign) or ":".join(
        [campaign.benchmark, *(f"{k}={v}" for k, v in (campaign.parameters or {}).items())])


def alternatives(session: Session, version: SeriesVersion) -> tuple[str, ...]:
    """The Message-IDs of the inline diffs in the version's thread, oldest first, that someone
    other than its author sent in answer to one of its patches (at any depth below it)."""
    if version.thread_id is None:
        return ()
    patches = {patch.message.msgid for patch in version.applied_patches}
    author = version.author_email.strip().lower()
    found = []
    for message in session.scalars(
            sa.select(Message).where(Message.thread_id == version.thread_id,
                                     Message.kind == MessageKind.INLINE_DIFF)
            .order_by(Message.date, Message.id)):
        if message.from_email.strip().lower() != author and answers_patch(message, patches):
            found.append(message.msgid)
    return tuple(found)


def answers_patch(message: Message, patches: set[str]) -> bool:
    """Whether the message answers one of these patches, directly or below a reply to it."""
    return bool({message.in_reply_to, *(message.references or ())} & patches)


def author_experiment(session: Session, settings: Settings, version: SeriesVersion,
                      review: Run) -> FollowUp | None:
    """The experiment the author's own benchmark command lines (cover letter, their replies)
    call for, as the review's lab host can run them (bot.runs.experiment_plan); None when
    they state none the lab can run, or only benchmarks the review ran as they stated them."""
    try:
        host = find_host(settings.lab_hosts, review.runner)
    except ValueError:  # its lab host is no longer configured: nothing can run there
        return None
    experiment = planned_experiment(session, version, host)
    # Nothing the lab can run, or nothing the review did not run already as the author
    # stated it (its reply gives those figures): no experiment.
    if not set(experiment.benchmarks) - set(review.benchmarks or ()):
        return None
    return FollowUp("experiment", experiment.options, tuple(experiment.benchmarks))


def review_facts(session: Session, settings: Settings, review: Run,
                 claims: Sequence[ClaimQuote] = ()) -> ReviewFacts:
    """The facts `plan` needs about a stored review run; `claims`: the author's performance
    claims its reply quoted (workers/report_step.py author_claims)."""
    version = session.get(SeriesVersion, review.series_version_id)
    assert version is not None
    campaigns = list(session.scalars(sa.select(LabCampaign).where(LabCampaign.run_id == review.id)
                                     .order_by(LabCampaign.id)))
    return ReviewFacts(
        outcome=outcome_of(session, review, campaigns).label,
        patches=version.expected,
        changed=changed_benchmarks(review, campaigns),
        claimed_improvement=any(claims_improvement(c) for c in claims),
        alternatives=alternatives(session, version),
        experiment=author_experiment(session, settings, version, review))


# ---------------------------------------------------------------------------------------------
# Making them


def start_follow_up(session: Session, parent: Run, kind: str, options: Mapping[str, Any],
                    trigger: str, benchmarks: Sequence[str] = ()) -> tuple[Run, bool]:
    """The follow-up `kind` of the review run `parent` with `options` (and `benchmarks`,
    default the review's), made queued unless the same exists already; (the run, whether it
    is new). Committed by the caller, sent by it or by the next round of `lorelab run`."""
    wanted = list(benchmarks) or list(parent.benchmarks or [])
    for run in session.scalars(sa.select(Run).where(Run.parent_run_id == parent.id,
                                                    Run.kind == kind).order_by(Run.id)):
        if dict(run.options or {}) == dict(options) and list(run.benchmarks or []) == wanted:
            return run, False
    version = session.get(SeriesVersion, parent.series_version_id)
    assert version is not None
    # The review's own base commit: the follow-up measures what the review measured.
    run = create_run(session, version, kind=kind, tree=parent.tree,
                     base=parent.base_commit or parent.requested_base, benchmarks=wanted,
                     runner=parent.runner, trigger=trigger, parent=parent,
                     options=dict(options))
    return run, True


def start_follow_ups(session: Session, settings: Settings, review: Run,
                     claims: Sequence[ClaimQuote] = ()) -> list[int]:
    """Make the follow-ups the finished review calls for (those not made already); their ids."""
    if review.kind != "review":
        return []
    made = []
    try:
        with session.begin_nested():
            facts = review_facts(session, settings, review, claims)
            for wanted in plan(facts, settings.follow_ups):
                run, new = start_follow_up(session, review, wanted.kind, wanted.options, AUTO,
                                           wanted.benchmarks)
                if new:
                    made.append(run.id)
    except Exception:  # noqa: BLE001 - the review's reply stands without its follow-ups
        log.exception("run %d: its follow-ups could not be planned", review.id)
        return []
    return made


def followed_review(session: Session, version: SeriesVersion) -> Run | None:
    """The version's latest review run that finished and measured: the one a follow-up
    follows; None when there is none."""
    for run in session.scalars(sa.select(Run).where(Run.series_version_id == version.id,
                                                    Run.kind == "review",
                                                    Run.state == RunState.DONE)
                               .order_by(Run.id.desc())):
        if outcome_of(session, run).outcome in MEASURED:
            return run
    return None


def compare_new_alternatives(session: Session, settings: Settings,
                             message_ids: Iterable[str]) -> list[int]:
    """Compare follow-ups for inline diffs that arrived after their version's review: each
    stored reply among `message_ids` that is a reviewer's alternative to a patch of a version
    with a finished review (the newest version of a series not stopped); the runs made."""
    if not settings.follow_ups.compare:
        return []
    made = []
    for message in session.scalars(sa.select(Message).where(
            Message.msgid.in_(list(message_ids)), Message.kind == MessageKind.INLINE_DIFF)):
        for version in _versions_answered(session, message):
            review = followed_review(session, version)
            if review is None or message.msgid not in alternatives(session, version):
                continue
            run, new = start_follow_up(session, review, "compare",
                                       {"alternative": message.msgid}, AUTO)
            if new:
                made.append(run.id)
    return made


def _versions_answered(session: Session, message: Message) -> list[SeriesVersion]:
    """The newest versions of series not stopped, among those whose patches the message
    answers."""
    refs = [r for r in {message.in_reply_to, *(message.references or ())} if r]
    versions = session.scalars(
        sa.select(SeriesVersion).join(Patch, Patch.series_version_id == SeriesVersion.id)
        .join(Message, Message.id == Patch.message_id).where(Message.msgid.in_(refs))
    ).unique().all()
    return [v for v in versions if not series_stopped(session, v.series_id)
            and max(other.version for other in v.series.versions) == v.version]
