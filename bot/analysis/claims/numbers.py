"""Numbers as kernel developers type them, and the work bound every reading of a message keeps.

A number in a mail may carry thousands separators ("1,234,567", "1 234 567", "1.234.567,5"), a
typographic minus (U+2212, an en dash) or an exponent ("1.145e+08", as lkp prints). `to_float`
reads one such token, or says it is not a number. `normalize_text` turns the minus signs and
non-breaking spaces of a line into ASCII before any pattern looks at it.

`Budget` counts the work spent on one message (lines and cells visited, patterns tried) and
stops the reading with `TooMuchWork` when a mail would cost more than a fixed number of units:
the bound is on work, not on a clock, so it holds on a loaded machine and is tested as such.
"""

from __future__ import annotations

import re

# U+2212 minus, U+2013 en dash, U+2012 figure dash, U+FE63 small minus, U+FF0D fullwidth minus.
_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2012": "-", "\ufe63": "-", "\uff0d": "-",
                        "\u00a0": " ", "\u202f": " ", "\u2009": " "})  # fmt: skip

# One numeric token: plain, with "," thousands groups, "." thousands groups with a "," decimal,
# or an exponent.
NUMBER = (
    r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:\.\d{3})+,\d+|\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
)
_NUMBER_RE = re.compile(rf"^{NUMBER}$", re.IGNORECASE)
# A magnitude written after a number: fio's `IOPS=45.2k`, a table's `263k`, `1.2M`.
SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
# "1 234 567": groups of three digits after a space, read as one number only where asked.
_SPACED = re.compile(r"^[-+]?\d{1,3}(?: \d{3})+(?:[.,]\d+)?$")


def normalize_text(text: str) -> str:
    """The line with typographic minus signs and non-breaking spaces made ASCII."""
    return text.translate(_MINUS)


_MINUTES_SECONDS = re.compile(r"(\d+)m(\d+(?:\.\d+)?)s")


def minutes_seconds(token: str) -> float | None:
    """Seconds of a time `time` prints in minutes and seconds (`1m10.442s`), or None."""
    match = _MINUTES_SECONDS.fullmatch(token.strip())
    return 60 * int(match.group(1)) + float(match.group(2)) if match else None


def to_float(token: str) -> float | None:
    """The value of one numeric token as written in a mail, or None if it is not one."""
    token = normalize_text(token).strip()
    if _SPACED.match(token):
        token = token.replace(" ", "").replace(",", ".")
    elif not _NUMBER_RE.match(token):
        return None
    if re.match(r"^[-+]?\d{1,3}(?:\.\d{3})+,\d+$", token):
        token = token.replace(".", "").replace(",", ".")
    else:
        token = token.replace(",", "")
    try:
        value = float(token)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def join_spaced_thousands(text: str) -> str:
    """ "1 234 567 ops/s" -> "1234567 ops/s": digit groups of three after a space are one number
    only when a group of 1-3 digits leads them and nothing else numeric follows on the line."""
    return re.sub(
        r"(?<![\d.,])(\d{1,3})((?: \d{3}){1,4})(?![\d.,]?\d)(?=[.,]\d+|\s|$)",
        lambda m: m.group(1) + m.group(2).replace(" ", ""),
        text,
    )


class TooMuchWork(Exception):
    """Reading the message would cost more than its budget."""


class Budget:
    """Work units one message may cost. Every reader charges the lines and cells it visits."""

    # A typical claims mail costs a few hundred units, one of a few thousand lines some ten
    # thousand; a body of 10 MB costs a million before any line is read, and is refused.
    DEFAULT_UNITS = 1_000_000

    def __init__(self, units: int = DEFAULT_UNITS) -> None:
        self.limit = units
        self.spent = 0

    def charge(self, units: int = 1) -> None:
        self.spent += units
        if self.spent > self.limit:
            raise TooMuchWork(f"reading it would take more than {self.limit:,} work units")
