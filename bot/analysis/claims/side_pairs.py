"""Pairing the blocks a mail gives each kernel: every block is headed by one side's name, and two
blocks in a row of opposite sides are compared, whichever comes first. Several "after" blocks
in a row under one "before" block are the series patch by patch (`After patch 1:` ... `After
patch 4:`, Kairui Song's shmem swap-in series): the last, the whole series, is compared. For
the readers whose blocks are so headed: `side_blocks` (metrics) and `tool_runs` (a tool's
result lines)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from bot.analysis.claims.measurement import Measurement
from bot.analysis.claims.numbers import Budget
from bot.analysis.claims.text import BodyLine

Found = tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, str]]


class Sided(Protocol):
    @property
    def side(self) -> str: ...  # "before" or "after"

    @property
    def label(self) -> str: ...

    @property
    def lines(self) -> tuple[BodyLine, ...]: ...


S = TypeVar("S", bound=Sided)


def scan_sides(
    lines: Sequence[BodyLine],
    budget: Budget,
    read: Callable[[Sequence[BodyLine], int], tuple[S | None, int] | None],
) -> list[S]:
    """The blocks `read` finds: at each line, None when no side's heading is there, else the
    block headed there (None when it holds nothing) and the index after it."""
    sides: list[S] = []
    i = 0
    while i < len(lines):
        budget.charge()
        found = read(lines, i)
        if found is None:
            i += 1
            continue
        side, end = found
        if side is not None:
            sides.append(side)
        i = max(end, i + 1)
    return sides


def pair_sides(
    sides: Sequence[S],
    compare: Callable[[S, S], list[Measurement]],
    near: Callable[[S, S], bool] = lambda first, second: True,
) -> list[Found]:
    """(measurements, lines, (before, after) labels) for each pair of consecutive blocks of
    opposite sides that `near` allows and that `compare(before, after)` finds a metric in."""
    found = []
    k = 0
    while k + 1 < len(sides):
        first, second = sides[k], sides[k + 1]
        if first.side != second.side and near(first, second):
            before, after = (first, second) if first.side == "before" else (second, first)
            measurements = compare(before, after)
            if measurements:
                run = [second]
                while first.side == "before" and k + len(run) + 1 < len(sides):
                    later = sides[k + len(run) + 1]
                    if later.side != "after" or not near(run[-1], later):
                        break
                    if not (further := compare(before, later)):
                        break
                    run.append(later)
                    after, measurements = later, further
                lines = first.lines + tuple(ln for side in run for ln in side.lines)
                spanned = tuple(sorted(lines, key=lambda ln: ln.number))
                found.append((measurements, spanned, (before.label, after.label)))
                k += 1 + len(run)
                continue
        k += 1
    return found
