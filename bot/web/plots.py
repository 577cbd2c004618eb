"""Small SVG plots of a campaign's raw samples, written by hand: pure functions, text out.

Two plots per metric: every run's value in the order the runs happened (drift, warm-up effects
and outliers show there, and whether A and B interleave), and each kernel's distribution (a box
from the lower to the upper quartile with the median, whiskers to the extremes, every value as
a point). Base (A), patched (B) and a compare follow-up's alternative (C) differ in colour and
in marker shape (circle, triangle, square), so
that the plots read in grey and for colour-blind readers; each plot has a title and a
description for screen readers, and labelled axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from bot.report.compose.tables import fmt_value

WIDTH = 640
# Blue, orange and dark grey: apart for every colour vision, and apart in shape too.
COLORS = {"A": "#1f5fa8", "B": "#c2540a", "C": "#444444"}
NAMES = {"A": "A (base)", "B": "B (patched)", "C": "C (alternative)"}
_DESCRIBED = {"A": "the base kernel A (blue circles)", "B": "the patched kernel B (orange "
              "triangles)", "C": "the alternative kernel C (grey squares)"}
_LEFT, _RIGHT, _TOP, _BOTTOM = 76, 16, 34, 46
_FONT = 'font-family="sans-serif" font-size="12"'


@dataclass(frozen=True)
class Point:
    slot: int  # the run's place in the run order
    kernel: str  # "A", "B" or "C"
    value: float
    warmup: bool = False


@dataclass(frozen=True)
class Scale:
    """A linear map from data to pixels over [low, high], with the ticks to label."""

    low: float
    high: float
    start: float  # pixel of `low`
    end: float  # pixel of `high`
    ticks: tuple[float, ...]

    def __call__(self, value: float) -> float:
        if self.high == self.low:
            return (self.start + self.end) / 2
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)


def nice_ticks(low: float, high: float, count: int = 5) -> tuple[float, ...]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError("ticks need finite bounds")
    if high < low:
        low, high = high, low
    if high == low:
        pad = abs(low) * 0.05 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step + 1e-9) * step
    last = math.ceil(high / step - 1e-9) * step
    steps = max(round((last - first) / step), 1)
    return tuple(round(first + i * step, 12) for i in range(steps + 1))


def value_scale(values: Sequence[float], start: float, end: float) -> Scale:
    ticks = nice_ticks(min(values), max(values))
    return Scale(ticks[0], ticks[-1], start, end, ticks)


def _label(metric: str, unit: str) -> str:
    return f"{metric} ({unit})" if unit else metric


def _marker(kernel: str, x: float, y: float, hollow: bool, tip: str) -> str:
    color = COLORS[kernel]
    fill = "none" if hollow else color
    paint = f'fill="{fill}" stroke="{color}" stroke-width="1.5"'
    if kernel == "A":
        shape = f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" {paint}>'
        end = "</circle>"
    elif kernel == "C":
        shape = f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" {paint}>'
        end = "</rect>"
    else:
        shape = (f'<path d="M{x:.1f},{y - 5.5:.1f} L{x + 5:.1f},{y + 3.5:.1f} '
                 f'L{x - 5:.1f},{y + 3.5:.1f} Z" {paint}>')
        end = "</path>"
    return f"{shape}<title>{escape(tip)}</title>{end}"


def _svg(ident: str, height: int, title: str, desc: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" id="{escape(ident)}" '
        f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{escape(ident)}-title {escape(ident)}-desc">'
        f'<title id="{escape(ident)}-title">{escape(title)}</title>'
        f'<desc id="{escape(ident)}-desc">{escape(desc)}</desc>'
        f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>'
        + "".join(body) + "</svg>"
    )


def _legend(warmups: bool, kernels: str = "AB") -> list[str]:
    items = [(k, False, NAMES[k]) for k in kernels]
    if warmups:
        items.append(("A", True, "warm-up (hollow, not judged)"))
    out, x = [], _LEFT
    for kernel, hollow, text in items:
        out.append(_marker(kernel, x + 5, 16, hollow, text))
        out.append(f'<text x="{x + 14}" y="20" {_FONT}>{escape(text)}</text>')
        x += 30 + 7 * len(text)
    return out


def _value_axis_y(scale: Scale, label: str, height: int) -> list[str]:
    """A vertical value axis on the left, with grid lines across the plot."""
    out = [f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{height - _BOTTOM}" '
           'stroke="#333"/>']
    for tick in scale.ticks:
        y = scale(tick)
        out.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{WIDTH - _RIGHT}" y2="{y:.1f}" '
                   'stroke="#e3e3e3"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" {_FONT}>'
                   f'{escape(fmt_value(tick, compact=True))}</text>')
    middle = (_TOP + height - _BOTTOM) / 2
    out.append(f'<text x="14" y="{middle:.1f}" transform="rotate(-90 14 {middle:.1f})" '
               f'text-anchor="middle" {_FONT}>{escape(label)}</text>')
    return out


def run_order_svg(points: Sequence[Point], *, metric: str, unit: str, ident: str,
                  height: int = 260) -> str:
    """Every run's value against its place in the run order, A and B apart."""
    if not points:
        raise ValueError("nothing to plot")
    bottom = height - _BOTTOM
    y = value_scale([p.value for p in points], bottom, _TOP)
    first, last = min(p.slot for p in points), max(p.slot for p in points)
    x_ticks = nice_ticks(first, max(last, first + 1), count=8)
    x_ticks = tuple(t for t in x_ticks if t == int(t) and first - 0.5 <= t <= last + 0.5)
    x = Scale(first - 0.5, last + 0.5, _LEFT + 4, WIDTH - _RIGHT - 4, x_ticks)
    body = _value_axis_y(y, _label(metric, unit), height)
    body.append(f'<line x1="{_LEFT}" y1="{bottom}" x2="{WIDTH - _RIGHT}" y2="{bottom}" '
                'stroke="#333"/>')
    for tick in x.ticks:
        px = x(tick)
        body.append(f'<line x1="{px:.1f}" y1="{bottom}" x2="{px:.1f}" y2="{bottom + 4}" '
                    'stroke="#333"/>')
        body.append(f'<text x="{px:.1f}" y="{bottom + 17}" text-anchor="middle" {_FONT}>'
                    f'{int(tick)}</text>')
    body.append(f'<text x="{(_LEFT + WIDTH - _RIGHT) / 2:.1f}" y="{height - 8}" '
                f'text-anchor="middle" {_FONT}>run order (0 = first run)</text>')
    warmups = any(p.warmup for p in points)
    kernels = "".join(k for k in "ABC" if any(p.kernel == k for p in points))
    body += _legend(warmups, kernels)
    for p in sorted(points, key=lambda p: p.slot):
        tip = (f"run {p.slot}: {NAMES[p.kernel]}, {fmt_value(p.value)}"
               f"{' ' + unit if unit else ''}{', warm-up' if p.warmup else ''}")
        body.append(_marker(p.kernel, x(p.slot), y(p.value), p.warmup, tip))
    measured = [p for p in points if not p.warmup]
    counts = [f"{sum(p.kernel == k for p in measured)} runs of {_DESCRIBED[k]}" for k in kernels]
    listed = ", ".join(counts[:-1]) + " and " + counts[-1] if len(counts) > 1 else counts[0]
    desc = (f"{metric}: {listed}, plotted in the order they ran"
            + (", warm-up runs hollow." if warmups else "."))
    return _svg(ident, height, f"{metric}: every run, in run order", desc, body)


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """Lower quartile, median and upper quartile (linear interpolation between ranks)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)

    def at(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return at(0.25), at(0.5), at(0.75)


def distribution_svg(points: Sequence[Point], *, metric: str, unit: str, ident: str) -> str:
    """Each kernel's measured values (warm-ups left out): box, whiskers and every point."""
    by_kernel = {k: [p.value for p in points if p.kernel == k and not p.warmup] for k in "ABC"}
    kernels = [k for k in "ABC" if by_kernel[k]]
    if not kernels:
        raise ValueError("nothing to plot")
    row_height = 56
    height = _TOP + row_height * len(kernels) + _BOTTOM
    bottom = height - _BOTTOM
    x = value_scale([v for k in kernels for v in by_kernel[k]], _LEFT + 70, WIDTH - _RIGHT - 6)
    body = [f'<line x1="{x.start}" y1="{bottom}" x2="{x.end}" y2="{bottom}" stroke="#333"/>']
    for tick in x.ticks:
        px = x(tick)
        body.append(f'<line x1="{px:.1f}" y1="{_TOP}" x2="{px:.1f}" y2="{bottom}" '
                    'stroke="#e3e3e3"/>')
        body.append(f'<text x="{px:.1f}" y="{bottom + 17}" text-anchor="middle" {_FONT}>'
                    f'{escape(fmt_value(tick, compact=True))}</text>')
    body.append(f'<text x="{(x.start + x.end) / 2:.1f}" y="{height - 8}" text-anchor="middle" '
                f'{_FONT}>{escape(_label(metric, unit))}</text>')
    body += _legend(False, "".join(kernels))
    for row, kernel in enumerate(kernels):
        values = by_kernel[kernel]
        middle = _TOP + row_height * row + row_height / 2
        color = COLORS[kernel]
        q1, median, q3 = quartiles(values)
        body.append(f'<text x="8" y="{middle + 4:.1f}" {_FONT}>{escape(NAMES[kernel])}</text>')
        body.append(f'<text x="8" y="{middle + 18:.1f}" {_FONT} fill="#555">n={len(values)}'
                    '</text>')
        body.append(f'<line x1="{x(min(values)):.1f}" y1="{middle:.1f}" '
                    f'x2="{x(max(values)):.1f}" y2="{middle:.1f}" stroke="{color}"/>')
        body.append(f'<rect x="{x(q1):.1f}" y="{middle - 14:.1f}" '
                    f'width="{max(x(q3) - x(q1), 1):.1f}" height="28" fill="{color}" '
                    f'fill-opacity="0.12" stroke="{color}"/>')
        body.append(f'<line x1="{x(median):.1f}" y1="{middle - 14:.1f}" x2="{x(median):.1f}" '
                    f'y2="{middle + 14:.1f}" stroke="{color}" stroke-width="3">'
                    f'<title>median {escape(fmt_value(median))}</title></line>')
        for i, value in enumerate(values):
            jitter = ((i * 7) % 5 - 2) * 4  # spread equal values apart, the same every time
            tip = f"{NAMES[kernel]}: {fmt_value(value)}{' ' + unit if unit else ''}"
            body.append(_marker(kernel, x(value), middle + jitter, False, tip))
    desc = "; ".join(
        f"{NAMES[k]}: {len(by_kernel[k])} runs, median {fmt_value(quartiles(by_kernel[k])[1])}, "
        f"from {fmt_value(min(by_kernel[k]))} to {fmt_value(max(by_kernel[k]))}"
        for k in kernels)
    return _svg(ident, height, f"{metric}: distribution of the values of each kernel",
                f"{desc}{' ' + unit if unit else ''}.", body)
