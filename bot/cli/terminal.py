"""How command output is laid out: fitted to a terminal, never wrapped in a pipe.

On a terminal rich wraps text and fits tables to its width. Into a pipe or a file every line
goes whole, however long, and a table takes the width its cells need: a script that greps
"updated 0" finds it on the line it was printed on, whatever COLUMNS says. Every command's
tables follow these rules (`stdout`); numbers are printed in plain notation (`number`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

# A pipe's "width": wider than any line a command prints, so rich neither wraps nor folds.
PIPE_WIDTH = 100_000


def stdout() -> Console:
    """A console on standard output, made now (for the stream and terminal of this call)."""
    return _console(stderr=False)


def stderr() -> Console:
    """A console on standard error, under the same rules."""
    return _console(stderr=True)


def _console(stderr: bool) -> Console:
    from rich.console import Console

    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=PIPE_WIDTH, soft_wrap=True)


def number(value: float | None, significant: int = 6) -> str:
    """`value` to `significant` digits in plain notation: 15208800, 0.000123, never 1.52e+07."""
    if value is None or not math.isfinite(value):
        return "?" if value is None else str(value)
    if value == 0:
        return "0"
    decimals = max(0, significant - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def p_value(p: float | None) -> str:
    """A p-value in plain notation, tiny ones as a bound ("<0.0001")."""
    if p is not None and 0 <= p < 0.0001:
        return "<0.0001"
    return number(p, 3)
