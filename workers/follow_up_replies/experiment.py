"""The experiment follow-up's reply, read from the database: the run's campaigns as the
benchmark reply shows them (workers/reply_context.py), and the author's commands the run was
made for (its options["commands"], bot/benchmarks/author_commands.py)."""

from __future__ import annotations

import sqlalchemy as sa

from bot.benchmarks.author_commands import AuthorCommand
from bot.config import Settings
from bot.db.models import Run
from bot.report.compose.experiment_reply import ExperimentReplyContext, compose_experiment_reply
from bot.report.compose.from_db import reply_options
from bot.report.compose.message import ComposedReply
from bot.runs.outcome import RunOutcome
from workers.reply_context import benchmark_context


def experiment_reply(session: sa.orm.Session, settings: Settings, run: Run,
                     outcome: RunOutcome) -> ComposedReply | None:
    """The reply of an experiment run that measured."""
    options = run.options or {}
    ctx = ExperimentReplyContext(
        bench=benchmark_context(session, settings, run, outcome.label),
        commands=tuple(AuthorCommand.from_option(c) for c in options.get("commands", ())),
        pairs=options.get("pairs"))
    return compose_experiment_reply(ctx, reply_options(settings.report))
