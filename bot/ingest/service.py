"""The poll loop behind `lorelab run`: every configured source on its own interval.

A plain loop for the embedded default (Celery beat can drive `poll_source` later). A failed
poll is logged, recorded on the source's cursor and tried again at the next interval; SIGTERM
(or SIGINT) ends the loop once the poll in progress has committed what it read.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.config import Settings
from bot.config.sections import SourceSettings
from bot.db.session import Database
from bot.ingest.live import LiveSummary
from bot.ingest.lore import LoreSource
from bot.ingest.pigit import PiGitSource

log = logging.getLogger(__name__)


def make_source(cfg: SourceSettings) -> LoreSource | PiGitSource:
    if cfg.kind == "lore":
        return LoreSource(cfg.url, cfg.list or None)
    return PiGitSource(cfg.url, cfg.list or None)


def describe(summary: LiveSummary) -> str:
    s = summary.ingest
    text = f"stored {s.stored}, duplicates {s.duplicates}, quarantined {s.quarantined}"
    if summary.removals:
        text += f", removals {summary.removals}"
    if summary.skipped:
        text += f", skipped {summary.skipped} unreadable (see `lorelab sources`)"
    return text


def poll_source(
    db: Database, settings: Settings, source: LoreSource | PiGitSource
) -> LiveSummary | None:
    """One poll, logged; None when it failed (the error is on the cursor and in the log)."""
    started = time.monotonic()
    try:
        if isinstance(source, LoreSource):
            summary = source.poll(db, settings.ingest, settings.lists,
                                  max_age_days=settings.plan.max_age_days)
        else:
            summary = source.poll(db, settings.ingest, settings.lists)
    except Exception as exc:  # noqa: BLE001 - one source failing must not stop the others
        log.error("%s %s: poll failed, will retry: %s", source.kind, source.key.location, exc)
        return None
    log.info("%s %s: %s in %.1f s", source.kind, source.key.location, describe(summary),
             time.monotonic() - started)
    return summary


@dataclass
class _Due:
    source: LoreSource | PiGitSource
    interval: float
    next_at: float = 0.0


def run(
    db: Database,
    settings: Settings,
    *,
    stop: threading.Event | None = None,
    once: bool = False,
    sources: Sequence[SourceSettings] | None = None,
    clock: Callable[[], float] = time.monotonic,
    after_polls: Callable[[], None] | None = None,
) -> None:
    """Poll each source when it is due until `stop` is set (or once each, with `once`).

    `after_polls` runs after every round in which a source was polled (the automatic pipeline);
    an error in it is logged and the loop goes on."""
    stop = stop or threading.Event()
    configured = list(settings.sources if sources is None else sources)
    if not configured:
        log.warning("no [[sources]] configured: nothing to poll")
        return
    due = [_Due(make_source(cfg), float(cfg.interval)) for cfg in configured]
    while not stop.is_set():
        polled = False
        for item in due:
            if stop.is_set():
                break
            if clock() >= item.next_at:
                poll_source(db, settings, item.source)
                item.next_at = clock() + item.interval
                polled = True
        if polled and after_polls is not None:
            try:
                after_polls()
            except Exception:  # noqa: BLE001 - the next round retries; ingest must go on
                log.exception("the pipeline round after the polls failed; will retry")
        if once:
            return
        stop.wait(max(0.0, min(item.next_at for item in due) - clock()))
    log.info("stopped")


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set `stop`: the loop finishes its poll and returns."""

    def handler(signum: int, _frame: object) -> None:
        log.info("%s received: stopping after the current poll", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
