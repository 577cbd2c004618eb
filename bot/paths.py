"""Where lorelab keeps its files: the data directory and the default settings file."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "lorelab"


def data_dir() -> Path:
    return Path(os.environ.get("LORELAB_DATA_DIR") or platformdirs.user_data_dir(APP_NAME))


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"
