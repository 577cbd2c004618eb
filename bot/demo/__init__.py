"""Generated but real list traffic (git trees, patch series, replies) for tests and the demo,
and the three real list messages the project started from (`SEED_DIR`)."""

from pathlib import Path

SEED_DIR = Path(__file__).parent / "seeds"
