"""Settings: one TOML file plus `LORELAB_*` environment variables, and nothing else.

Where the file is: `--config PATH`, else `$LORELAB_CONFIG`, else `config.toml` in the user's config
directory. The embedded default needs no file at all: SQLite in the user's data directory, Celery
eager, replies to an outbox directory.

Environment overrides name a key by its section and name: `LORELAB_DATABASE_URL` sets
`[database] url`, `LORELAB_INGEST_BATCH_SIZE` sets `[ingest] batch_size`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from bot.config.build import BuildSettings, CelerySettings
from bot.config.checks import problems
from bot.config.lab_hosts import LabHostSettings
from bot.config.report import ReportSettings
from bot.config.sections import (
    CommandSettings,
    DatabaseSettings,
    FollowUpSettings,
    IngestSettings,
    ListSettings,
    PlanSettings,
    SourceSettings,
    SuiteSettings,
    TreeSettings,
    WebSettings,
)
from bot.paths import APP_NAME, data_dir, default_config_path

__all__ = [
    "APP_NAME", "BuildSettings", "CelerySettings", "CommandSettings", "ConfigError",
    "DatabaseSettings", "FollowUpSettings", "IngestSettings", "LabHostSettings", "ListSettings",
    "PlanSettings", "ReportSettings", "Settings", "SourceSettings", "SuiteSettings", "TreeSettings",
    "WebSettings", "data_dir", "default_config_path", "load_settings",
]


class ConfigError(ValueError):
    """A configuration file or variable that cannot be used; the text says what to fix."""


@dataclass
class Settings:
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    report: ReportSettings = field(default_factory=ReportSettings)
    lists: list[ListSettings] = field(default_factory=list)
    sources: list[SourceSettings] = field(default_factory=list)  # live archives to follow
    trees: list[TreeSettings] = field(default_factory=list)  # kernel trees to apply to
    build: BuildSettings = field(default_factory=BuildSettings)
    celery: CelerySettings = field(default_factory=CelerySettings)
    lab_hosts: list[LabHostSettings] = field(default_factory=list)  # where benchmarks run
    commands: CommandSettings = field(default_factory=CommandSettings)  # `#lorelab` in replies
    web: WebSettings = field(default_factory=WebSettings)  # `lorelab serve`
    suites: list[SuiteSettings] = field(default_factory=list)  # what to benchmark; empty: reclaim
    plan: PlanSettings = field(default_factory=PlanSettings)
    follow_ups: FollowUpSettings = field(default_factory=FollowUpSettings)
    source: Path | None = None  # the file these settings came from, if any


_SECTIONS = {
    "database": DatabaseSettings,
    "ingest": IngestSettings,
    "report": ReportSettings,
    "build": BuildSettings,
    "celery": CelerySettings,
    "commands": CommandSettings,
    "web": WebSettings,
    "plan": PlanSettings,
    "follow_ups": FollowUpSettings,
}

# Sections written as arrays of tables ([[lists]]), each item one settings object.
_ARRAYS: dict[str, type] = {
    "lists": ListSettings,
    "sources": SourceSettings,
    "trees": TreeSettings,
    "lab_hosts": LabHostSettings,
    "suites": SuiteSettings,
}


def _coerce(value: str, like: Any, key: str) -> Any:  # key: how errors name it
    if isinstance(like, list):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(like, bool):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key} = {value!r}: expected true or false")
    if isinstance(like, int):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"{key} = {value!r}: expected a whole number") from None
    return value


def _apply_section(target: Any, values: dict[str, Any], label: Callable[[str], str]) -> None:
    """Set `values` on a settings dataclass; `label(key)` names a key in error messages."""
    known = {f.name: f for f in fields(target)}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{label(key)}: unknown setting; known: {', '.join(sorted(known))}")
        current = getattr(target, key)
        if isinstance(value, str) and not isinstance(current, str):
            value = _coerce(value, current, label(key))
        elif type(current) is not type(value) and not (
            isinstance(current, int) and isinstance(value, int)
        ):
            raise ConfigError(
                f"{label(key)}: expected {type(current).__name__}, got {type(value).__name__}"
            )
        setattr(target, key, value)


def load_settings(path: str | Path | None = None, env: dict[str, str] | None = None) -> Settings:
    """Read the TOML file (if there is one), apply `LORELAB_*` overrides, and check the result
    (bot.config.checks): ConfigError names the first setting that cannot be used."""
    env = dict(os.environ if env is None else env)
    explicit = path or env.get("LORELAB_CONFIG")
    config_path = Path(explicit) if explicit else default_config_path()
    settings = Settings()
    if config_path.exists():
        try:
            raw = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{config_path}: not valid TOML: {exc}") from None
        settings.source = config_path
        for section, values in raw.items():
            if section in _ARRAYS:
                if not isinstance(values, list):
                    raise ConfigError(f"{config_path}: [[{section}]] must be an array of tables")
                try:
                    items = [_ARRAYS[section](**item) for item in values]
                except (TypeError, ValueError) as exc:
                    raise ConfigError(f"{config_path}: [[{section}]]: {exc}") from None
                setattr(settings, section, items)
            elif section in _SECTIONS:
                _apply_section(
                    getattr(settings, section),
                    values,
                    lambda key, section=section: f"{config_path}: [{section}] {key}",
                )
            else:
                raise ConfigError(
                    f"{config_path}: unknown section [{section}]; "
                    f"known: {', '.join(sorted([*_SECTIONS, *_ARRAYS]))}"
                )
    elif explicit:
        raise ConfigError(
            f"config file {config_path} does not exist; "
            f"create one with `lorelab init {config_path}`"
        )
    from_env: dict[str, str] = {}  # "[section] key" -> the variable that set it
    for section in _SECTIONS:
        prefix = f"LORELAB_{section.upper()}_"
        overrides = {
            name[len(prefix) :].lower(): value
            for name, value in env.items()
            if name.startswith(prefix)
        }
        if overrides:
            _apply_section(
                getattr(settings, section),
                overrides,
                lambda key, prefix=prefix: f"environment variable {prefix}{key.upper()}",
            )
            from_env.update({f"[{section}] {key}": f"{prefix}{key.upper()}" for key in overrides})
    first = next(problems(settings), None)
    if first is not None:
        setting, problem = first
        if setting in from_env:
            raise ConfigError(f"environment variable {from_env[setting]} ({setting}) {problem}")
        where = f"{settings.source}: " if settings.source else ""
        raise ConfigError(f"{where}{setting} {problem}")
    return settings


def starter_config() -> str:
    """The commented starter file `lorelab init` writes (bot/config/starter.toml)."""
    return resources.files("bot.config").joinpath("starter.toml").read_text(encoding="utf-8")
