"""A plain-text mail body as blocks: prose wrapped at 72 columns, tables kept as they are.

Kernel developers read replies in mutt and on lore: prose is wrapped at 72 columns, while
tables, commands and quotes are never re-wrapped (a wrapped table is unreadable) and must fit
in 100 columns. Blocks are separated by one blank line; the signature follows "-- ".
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

PROSE_WIDTH = 72
TABLE_WIDTH = 100


@dataclass(frozen=True)
class Prose:
    """One paragraph, wrapped; `hanging` indents its continuation lines (for "Key: value")."""

    text: str
    hanging: str = ""

    def lines(self) -> list[str]:
        lines = textwrap.wrap(
            self.text,
            width=PROSE_WIDTH,
            subsequent_indent=self.hanging,
            break_long_words=False,  # a URL or path longer than a line stays whole
            break_on_hyphens=False,
        )
        return [line.replace(_GLUE, " ") for line in lines] or [""]


# Stands for a space that must not become a line break ("8 cores", "32 KiB"): textwrap only
# breaks at ASCII whitespace, and the mark is turned back into a space after wrapping.
_GLUE = "\x1f"


def glue(text: str) -> str:
    """`text` kept on one line when wrapped as prose."""
    return text.replace(" ", _GLUE)


@dataclass(frozen=True)
class Fields:
    """ "Key: value" lines one under the other, each wrapped with an indented continuation."""

    items: tuple[str, ...]
    hanging: str = "  "

    def lines(self) -> list[str]:
        return [line for item in self.items for line in Prose(item, self.hanging).lines()]


@dataclass(frozen=True)
class Preformatted:
    """Lines printed as given: tables, verdict lines, commands."""

    rows: tuple[str, ...]

    def lines(self) -> list[str]:
        # Tables size themselves to TABLE_WIDTH (tables.py); a command line is never broken,
        # even when a message-id makes it longer.
        return [row.rstrip() for row in self.rows]


@dataclass(frozen=True)
class Quote:
    """Lines of someone else's message, under an attribution, each prefixed with "> "."""

    attribution: str
    rows: tuple[str, ...]

    def lines(self) -> list[str]:
        head = Prose(self.attribution).lines() if self.attribution else []
        return head + [f"> {row}".rstrip() for row in self.rows]


Block = Prose | Fields | Preformatted | Quote


def render_body(blocks: Sequence[Block], signature: Sequence[str]) -> str:
    """The body text: blocks one blank line apart, then the signature; ends with a newline."""
    parts = ["\n".join(block.lines()) for block in blocks]
    text = "\n\n".join(parts)
    if signature:
        text += "\n\n-- \n" + "\n".join(signature)
    return text + "\n"


def indent(rows: Sequence[str], prefix: str = "  ") -> tuple[str, ...]:
    return tuple(prefix + row if row else "" for row in rows)
