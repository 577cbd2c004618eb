"""A follow-up's step: a bisection of campaigns over the series' prefixes (being written)."""

from __future__ import annotations

from bot.config import Settings
from bot.db.session import Database
from bot.runs.steps import StepFailed, run_step


def run_bisect_step(db: Database, settings: Settings, step_id: int,
        task_id: str | None = None) -> None:
    def body() -> None:
        raise StepFailed("not written yet")

    run_step(db, step_id, task_id, body)
