"""The author's arithmetic, checked: every stated percentage recomputed from the stated numbers.

A stated change is compared with the change the numbers give, within the rounding of the
printed figures: half a unit of the stated percentage's last digit, plus 0.05 points, widened by
the rounding of the values themselves (lkp prints `0.23` and `0.26` for means whose change it
computed as +11.7%: the printed values give anything from +8.5% to +17.8%). When they disagree
the check says which slip explains it, if one does:

- the new value used as the denominator: 100 (new - old) / new;
- a speed-up stated for a time: "40% faster" for a time that fell 29% (40% is old/new - 1, the
  rate; the time itself fell 1 - new/old);
- points confused with percent: a metric that is itself a percentage (CPU %, hit ratio) moving
  from 2.0 to 2.5 changed by 0.5 points, which is +25%.

What each kind of stated figure means: "relative" a signed relative change, "magnitude" a
relative change whose sign the words do not give, "points" a difference (lkp on % metrics),
"gain" mmtests' signed gain (positive is better), "speed-up" old/new - 1 of a time or new/old - 1
of a rate.
"""

from __future__ import annotations

from bot.analysis.claims.measurement import Measurement


def _tolerance(stated: float) -> float:
    """Rounding slack in percentage points: half a unit of the stated figure's last digit, plus
    0.05 points."""
    text = f"{abs(stated):.6f}".rstrip("0").rstrip(".")
    decimals = len(text.partition(".")[2])
    return 0.5 * 10.0**-decimals + 0.05


def _half_unit(value: float) -> float:
    """Half a unit of the last digit the value was printed with, as far as the float shows it
    (`0.23` -> 0.005, `103991` -> 0.5); 0 for a float too long or too small to tell."""
    text = repr(abs(value))
    if "e" in text or len(text) > 12:
        return 0.0
    decimals = len(text.partition(".")[2])
    return 0.5 * 10.0**-decimals


def _relative_range(base: float, new: float) -> tuple[float, float]:
    """The least and greatest relative change (percent) that values printed as `base` and `new`
    can have had."""
    hb, hn = _half_unit(base), _half_unit(new)
    if abs(base) <= hb:
        return (-float("inf"), float("inf"))
    ends = [100.0 * (n / b - 1.0) for b in (base - hb, base + hb) for n in (new - hn, new + hn)]
    return min(ends), max(ends)


def _within(stated: float, ends: tuple[float, float], tol: float) -> bool:
    return ends[0] - tol <= stated <= ends[1] + tol


def _fmt(value: float) -> str:
    return f"{value:+.1f}%" if abs(value) >= 0.1 else f"{value:+.2f}%"


def arithmetic_checks(m: Measurement) -> list[str]:
    """Sentences on a stated figure that the numbers beside it do not give; [] when it agrees or
    nothing was stated."""
    if m.stated_pct is None or m.base is None or m.patched is None or m.base == 0:
        return []
    stated, base, new = m.stated_pct, m.base, m.patched
    relative = 100.0 * (new / base - 1.0)
    tol = _tolerance(stated)
    kind = m.stated_kind or "relative"
    ends = _relative_range(base, new)
    if kind == "points":
        spread = _half_unit(base) + _half_unit(new)
        if abs(stated - (new - base)) <= tol + spread:
            return []
        return [f"Stated {stated:+g} points; the numbers differ by {new - base:+.2f} points."]
    if kind == "gain":
        # mmtests signs the gain so that positive is better: +change for a rate, -change for a
        # time; a case of unknown direction may be either. Its `pdiff` prints 0 for a new value
        # of 0 (bin/lib/MMTests/Stat.pm): `392438.00 (0.00%)  0.00 (0.00%)` is no slip.
        if (new == 0 and stated == 0) or _within(-stated, ends, tol) or (
            m.higher_is_better is not False and _within(stated, ends, tol)
        ):
            return []
        return [f"mmtests' gain {stated:+g}% does not follow from the values ({_fmt(relative)})."]
    if kind == "speed-up":
        return _speed_up(stated, base, new, tol, m.higher_is_better)
    if _within(stated, ends, tol) or (kind == "magnitude" and _within(-stated, ends, tol)):
        return []
    wrong = [f"Stated {stated:g}%; the numbers give {_fmt(relative)}."]
    if new and abs(abs(stated) - abs(100.0 * (new - base) / new)) <= tol:
        wrong.append("The stated figure divides by the new value, not the old one.")
    elif (m.unit == "%" or m.metric.endswith("%")) and abs(abs(stated) - abs(new - base)) <= tol:
        wrong.append(
            f"The metric is itself a percentage: it moved {new - base:+.2f} points, which is "
            f"{_fmt(relative)}; the stated figure is the points, written as percent."
        )
    return wrong


def _speed_up(stated: float, base: float, new: float, tol: float, higher: bool | None) -> list[str]:
    rate_gain = (
        100.0 * (base / new - 1.0) if higher is False and new else 100.0 * (new / base - 1.0)
    )
    if abs(abs(stated) - abs(rate_gain)) <= tol:
        if higher is False:
            fell = 100.0 * (1.0 - new / base)
            return [
                f"{abs(stated):g}% faster is the rate (old/new - 1); the time itself fell "
                f"{fell:.1f}%."
            ]
        return []
    fell = 100.0 * (1.0 - new / base)
    if higher is False and abs(abs(stated) - abs(fell)) <= tol:
        return []  # "29% faster" read as "29% less time": the common, loose, wording
    return [f"Stated {abs(stated):g}% faster; the numbers give {_fmt(rate_gain)} as a rate."]
