"""What every command shares: settings, the database, JSON output and user-facing errors."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from typing import Any

from rich.console import Console

from bot.cli import terminal
from bot.config import ConfigError, Settings, load_settings

CONFIG_PATH: str | None = None  # set by the root callback from --config
_loaded: dict[tuple[object, ...], Settings] = {}

console = terminal.stderr()  # progress and messages; never wrapped in a pipe


class UserError(Exception):
    """An error the user can act on; printed without a traceback."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def settings() -> Settings:
    """The settings, read once per process (again only if --config or the environment that
    names them changed, as between in-process calls of the CLI)."""
    key = (CONFIG_PATH, os.environ.get("XDG_CONFIG_HOME"),
           tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("LORELAB_"))))
    if key not in _loaded:
        try:
            _loaded.clear()
            _loaded[key] = load_settings(CONFIG_PATH)
        except ConfigError as exc:
            raise UserError(str(exc), exit_code=78) from None  # EX_CONFIG
    return _loaded[key]


def emit_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=_json_value)
    sys.stdout.write("\n")


def stdout_console(min_width: int = 120) -> Console:
    """A console on standard output: in a pipe one that never wraps (`terminal`), on a
    terminal one wide enough that tables of titles do not wrap."""
    out = terminal.stdout()
    return out if not out.is_terminal else Console(width=max(out.width, min_width))


def _json_value(value: Any) -> str:
    """What JSON cannot hold, as text: times in ISO 8601 with `T` (the one time format)."""
    if isinstance(value, dt.datetime):
        from bot.db.models import iso_utc  # the models are not every command's to import

        return iso_utc(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)
