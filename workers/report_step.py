"""The `report` step of a review run: the reply the run's outcome calls for, into the outbox.

Which reply, if any, is decided by `bot.runs.outcome.decide` (docs/replies.md): does-not-apply
naming the patch and the conflicting files, build-failure quoting the first errors, or the
benchmark reply from the campaigns' samples. No reply when lorelab could not test the series
(the base does not build, the lab failed: the author cannot fix it, the status page shows why),
nor after `#lorelab stop` for the series (bot.runs.stops). The reply's Message-ID derives from
the series version, so a repeated step finds the stored reply instead of writing a second one.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from bot.config import Settings
from bot.db.models import Run, SeriesVersion
from bot.db.session import Database
from bot.report.compose.benchmark_reply import compose_benchmark_reply
from bot.report.compose.failure_reply import (
    BUILD_FAILURE,
    DOES_NOT_APPLY,
    ApplyFailureContext,
    BuildFailureContext,
    compose_apply_failure,
    compose_build_failure,
)
from bot.report.compose.from_db import (
    answered_message,
    fetch_lines,
    parent_message,
    reply_options,
    series_info,
)
from bot.report.compose.message import ComposedReply
from bot.report.deliver.outbox import enqueue
from bot.runs.follow_ups import start_follow_ups
from bot.runs.outcome import RunOutcome, outcome_of
from bot.runs.records import ApplyRecord, BuildRecord, ReportRecord
from bot.runs.steps import StepEnd, run_step, stored_step
from bot.runs.stops import series_stopped
from workers.follow_up_replies.alignment import alignment_reply
from workers.follow_up_replies.alternative import alternative_reply
from workers.follow_up_replies.bisect import bisect_reply
from workers.follow_up_replies.experiment import experiment_reply
from workers.reply_context import (
    author_claims,
    benchmark_context,
    build_info,
    reproduce_lines,
    status_url,
    tree_info,
)

# The reply of each follow-up run (docs/replies.md, "Follow-ups"), by run kind: None when it
# has nothing to say to the list (the reason is the outcome's).
FollowUpReply = Callable[[sa.orm.Session, Settings, Run, RunOutcome], "ComposedReply | None"]
FOLLOW_UP_REPLIES: dict[str, FollowUpReply] = {
    "align": alignment_reply,
    "bisect": bisect_reply,
    "compare": alternative_reply,
    "experiment": experiment_reply,
}


def run_report_step(db: Database, settings: Settings, step_id: int,
                    task_id: str | None = None) -> None:
    run_step(db, step_id, task_id, lambda: _report(db, settings, step_id))


def _report(db: Database, settings: Settings, step_id: int) -> StepEnd:
    with db.session() as session:
        step = stored_step(session, step_id)
        reply, why = compose_for_run(session, settings, step.run)
        if reply is None:
            return StepEnd(result=ReportRecord(why=why).as_result())
        row, new = enqueue(session, reply, settings.report)
        session.flush()
        if step.run.kind == "review":  # the questions its result raises, queued
            version = session.get(SeriesVersion, step.run.series_version_id)
            start_follow_ups(session, settings, step.run, author_claims(answered_message(version)))
        record = ReportRecord(reply=row.id, message_id=row.message_id, kind=row.kind,
                              state=row.state, new=new, why=why)
        return StepEnd(result=record.as_result())


def compose_for_run(session: sa.orm.Session, settings: Settings,
                    run: Run) -> tuple[ComposedReply | None, str]:
    """The reply a finished review run calls for (bot.runs.outcome), or None and why none."""
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    if series_stopped(session, version.series_id):
        return None, "#lorelab stop was said for this series: no replies about it"
    outcome = outcome_of(session, run)
    if outcome.reply is None:
        return None, outcome.why
    if run.kind in FOLLOW_UP_REPLIES:
        return FOLLOW_UP_REPLIES[run.kind](session, settings, run, outcome), outcome.why
    by_name = {s.name: s for s in run.steps}
    apply = ApplyRecord.from_step(by_name["apply"])
    parent = parent_message(answered_message(version))
    series = series_info(version, status_url=status_url(settings, version), run_id=run.id)
    options = reply_options(settings.report)
    tree = tree_info(settings, run, apply)
    if outcome.reply == DOES_NOT_APPLY:
        index, subject = _failed_patch(version, apply.failed_patch)
        ctx = ApplyFailureContext(
            parent=parent, series=series, tree=tree, failing_patch=index,
            failing_subject=subject, conflicts=apply.conflicted_paths,
            reproduce=tuple(fetch_lines(version, run.base_commit or apply.base,
                                        apply.patches)))
        return compose_apply_failure(ctx, options), outcome.why
    base = BuildRecord.from_step(by_name["build-base"])
    if outcome.reply == BUILD_FAILURE:
        ctx_build = BuildFailureContext(
            parent=parent, series=series, tree=tree, build=build_info(settings, base, run),
            log=by_name["build-patched"].log_excerpt,
            reproduce=reproduce_lines(version, run, settings, base))
        return compose_build_failure(ctx_build, options), outcome.why
    return compose_benchmark_reply(benchmark_context(session, settings, run, outcome.label),
                                   options), outcome.why


def _failed_patch(version: SeriesVersion, failed: str | None) -> tuple[int, str]:
    """(1-based index, subject) of the patch git am stopped at (its subject as git named it)."""
    text = str(failed)
    for patch in version.applied_patches:
        if str(patch.index) == text or patch.message.title in text or text in patch.message.subject:
            return patch.index, patch.message.subject
    return 1, text
