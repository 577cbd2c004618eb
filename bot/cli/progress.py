"""The progress bar of a public-inbox walk: the epoch, its commits done, messages per second.

A backfill of a whole list takes long enough that a user wants to see where it is and how
fast it goes; the bar is drawn on a terminal only (never into JSON output or a log file).
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from bot.ingest.pigit import WalkProgress


class RateColumn(ProgressColumn):
    """Commits walked per second, over rich's recent window."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text("   - msg/s" if speed is None else f"{speed:6.0f} msg/s")


class WalkBar(WalkProgress):
    """A rich progress bar driven by a walk: one bar, reset as each epoch starts."""

    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled,
        )
        self.task = self.progress.add_task("pi-git", total=None)

    def epoch(self, number: int, changes: int) -> None:
        self.progress.reset(self.task, total=changes, description=f"epoch {number}")

    def stored(self, changes: int) -> None:
        self.progress.advance(self.task, changes)

    def __enter__(self) -> WalkBar:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.progress.stop()
