"""A follow-up's step: the reviewer's alternative applied in place of (or on top of) the
patch it answers.

Being written.
"""

from __future__ import annotations

from bot.config import Settings
from bot.db.session import Database
from bot.runs.steps import StepFailed, run_step


def run_apply_alternative_step(db: Database, settings: Settings, step_id: int,
        task_id: str | None = None) -> None:
    def body() -> None:
        raise StepFailed("not written yet")

    run_step(db, step_id, task_id, body)
