"""Hand-written inline SVG plots for the HTML report (reports, decisions ring: strings only).

No plotting library, no script: each function returns one ``<svg>`` element with axes, ticks,
a legend and a ``<title>`` per mark (hover text). An empty input gives a short "no data" SVG.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

__all__ = ["PALETTE", "Bar", "bars", "histogram", "lines"]

PALETTE: Final = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_FONT: Final = 'font-family="sans-serif" font-size="11"'


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    low: float
    high: float
    note: str = ""


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="{escape(title)}">'
        f'<text x="{width / 2:.0f}" y="16" text-anchor="middle" font-family="sans-serif" font-size="13" '
        f'font-weight="bold">{escape(title)}</text>' + "".join(body) + "</svg>"
    )


def _empty(title: str, width: int = 600) -> str:
    return _svg(width, 60, [f'<text x="20" y="42" {_FONT} fill="#777">no data</text>'], title)


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def bars(items: Sequence[Bar], title: str, unit: str = "%", width: int = 960) -> str:
    """Horizontal bars (value) with whiskers (low–high), one per item, top to bottom."""
    if not items:
        return _empty(title, width)
    left, right, row = 380, 30, 22
    height = 40 + row * len(items) + 30
    top_v = max(*(b.high for b in items), 1e-9)
    ticks = _nice_ticks(0, top_v)
    scale = (width - left - right) / max(ticks[-1], top_v)
    body = []
    for t in ticks:
        x = left + t * scale
        body.append(f'<line x1="{x:.1f}" y1="30" x2="{x:.1f}" y2="{height - 28}" stroke="#ddd"/>')
        body.append(
            f'<text x="{x:.1f}" y="{height - 14}" text-anchor="middle" {_FONT}>{_fmt(t)}{unit}</text>'
        )
    for i, b in enumerate(items):
        y = 34 + i * row
        label = b.label if len(b.label) <= 60 else "…" + b.label[-59:]
        tip = escape(f"{b.label}: {_fmt(b.value)}{unit} ({_fmt(b.low)}–{_fmt(b.high)}{unit}) {b.note}")
        body += [
            f'<text x="{left - 6}" y="{y + 13}" text-anchor="end" {_FONT}>{escape(label)}</text>',
            f'<rect class="mark" x="{left}" y="{y + 3}" width="{max(b.value * scale, 1):.1f}" '
            f'height="{row - 8}" '
            f'fill="{PALETTE[0]}"><title>{tip}</title></rect>',
            f'<line x1="{left + b.low * scale:.1f}" y1="{y + row / 2:.1f}" x2="{left + b.high * scale:.1f}" '
            f'y2="{y + row / 2:.1f}" stroke="#000" stroke-width="1.5"/>',
        ]
    return _svg(width, height, body, title)


def _axis_y(
    lo: float, hi: float, y_of: Callable[[float], float], x0: int, x1: int, *, log: bool
) -> list[str]:
    out = []
    ticks = [10.0**e for e in range(math.floor(lo), math.ceil(hi) + 1)] if log else _nice_ticks(lo, hi)
    for t in ticks:
        y = y_of(math.log10(t) if log else t)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end" {_FONT}>{_fmt(t)}</text>')
    return out


def lines(
    *,
    series: dict[str, list[tuple[float, float]]],
    title: str,
    x_label: Callable[[float], str],
    y_unit: str = "",
    log_y: bool = False,
    y_min_top: float = 0.0,
    width: int = 960,
    height: int = 300,
) -> str:
    """One polyline (with dots) per series; ``x_label`` formats x ticks (e.g. day ordinals). A
    linear y axis runs from 0 to at least ``y_min_top`` (and to 1 when every value is 0), so
    all-zero series sit on a readable scale instead of one of 1e-9."""
    pts = [(x, y) for s in series.values() for x, y in s if not log_y or y > 0]
    if not pts:
        return _empty(title, width)
    left, right, top, bottom = 60, 230, 28, 36
    fy: Callable[[float], float] = math.log10 if log_y else float
    xs, ys = [p[0] for p in pts], [fy(p[1]) for p in pts]
    x_lo, x_hi = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y_lo, y_hi = (min(ys), max(ys)) if log_y else (0.0, max(max(ys) * 1.05, y_min_top) or 1.0)
    y_hi = y_hi if y_hi > y_lo else y_lo + 1

    def px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * (width - left - right)

    def py(y: float) -> float:
        return height - bottom - (y - y_lo) / (y_hi - y_lo) * (height - top - bottom)

    body = _axis_y(y_lo, y_hi, py, left, width - right, log=log_y)
    for t in _nice_ticks(x_lo, x_hi, 6):
        body.append(
            f'<text x="{px(t):.1f}" y="{height - 18}" text-anchor="middle" {_FONT}>'
            f"{escape(x_label(t))}</text>"
        )
    body.append(f'<text x="8" y="{top + 4}" {_FONT}>{escape(y_unit)}</text>')
    for i, (name, s) in enumerate(sorted(series.items())):
        color = PALETTE[i % len(PALETTE)]
        kept = sorted((x, y) for x, y in s if not log_y or y > 0)
        path = " ".join(f"{px(x):.1f},{py(fy(y)):.1f}" for x, y in kept)
        body.append(
            f'<polyline class="mark" fill="none" stroke="{color}" stroke-width="1.8" points="{path}"/>'
        )
        body += [
            f'<circle cx="{px(x):.1f}" cy="{py(fy(y)):.1f}" r="2.2" fill="{color}">'
            f"<title>{escape(f'{name} {x_label(x)}: {_fmt(y)} {y_unit}')}</title></circle>"
            for x, y in kept
        ]
        ly = top + 14 * i
        body.append(f'<rect x="{width - right + 10}" y="{ly}" width="10" height="10" fill="{color}"/>')
        body.append(f'<text x="{width - right + 24}" y="{ly + 9}" {_FONT}>{escape(name[:34])}</text>')
    return _svg(width, height, body, title)


def histogram(*, bins: Sequence[tuple[float, float, int]], title: str, unit: str, width: int = 460) -> str:
    """Counts over logarithmic bins ``(low, high, count)``; a bin with low = 0 holds values ≤ 0."""
    if not bins:
        return _empty(title, width)
    height, left, bottom, top = 220, 50, 34, 26
    positive = [(lo, hi, c) for lo, hi, c in bins if lo > 0]
    lo_e = math.log10(min(b[0] for b in positive)) if positive else 0.0
    hi_e = math.log10(max(b[1] for b in positive)) if positive else 1.0
    peak = max(c for _, _, c in bins)

    def px(e: float) -> float:
        return left + (e - lo_e) / max(hi_e - lo_e, 1e-9) * (width - left - 12)

    def py(c: float) -> float:
        return height - bottom - c / peak * (height - top - bottom)

    body = _axis_y(0, peak, py, left, width - 12, log=False)
    for e in range(math.ceil(lo_e), math.floor(hi_e) + 1):
        body.append(
            f'<text x="{px(e):.1f}" y="{height - 18}" text-anchor="middle" {_FONT}>{_fmt(10.0**e)}</text>'
        )
    body.append(
        f'<text x="{width / 2:.0f}" y="{height - 4}" text-anchor="middle" {_FONT}>'
        f"{escape(unit)} (log scale)</text>"
    )
    for lo, hi, c in positive:
        x0, x1 = px(math.log10(lo)), px(math.log10(hi))
        body.append(
            f'<rect class="mark" x="{x0:.1f}" y="{py(c):.1f}" width="{max(x1 - x0 - 0.5, 0.8):.1f}" '
            f'height="{height - bottom - py(c):.1f}" fill="{PALETTE[0]}">'
            f"<title>{_fmt(lo)}–{_fmt(hi)} {escape(unit)}: "
            f"{c}</title></rect>"
        )
    return _svg(width, height, body, title)
