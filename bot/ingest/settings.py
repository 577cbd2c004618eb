"""The live sources lorelab follows: one `[[sources]]` table each in the TOML settings."""

from __future__ import annotations

from dataclasses import dataclass

SOURCE_KINDS = ("lore", "pi-git")


@dataclass
class SourceSettings:
    kind: str  # "lore" (HTTP feed) or "pi-git" (public-inbox git mirror)
    url: str  # the list's URL (lore, or pi-git over HTTP) or a local v2 archive's path
    list: str = ""  # the list name messages are filed under; empty: from List-Id
    interval: int = 300  # seconds between polls

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"kind = {self.kind!r}: expected one of {', '.join(SOURCE_KINDS)}")
        if not self.url:
            raise ValueError("url is required")
        if not isinstance(self.interval, int) or self.interval < 1:
            raise ValueError(f"interval = {self.interval!r}: expected whole seconds, at least 1")
