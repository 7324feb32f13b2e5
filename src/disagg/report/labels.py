"""Point labels that do not collide: each label takes the first free spot around its point.

Placed blindly, neighbouring labels of two series overprint ("128128"). Each label is a
box of estimated size in plot pixels; the first spot around its point that overlaps no
marker or placed label, stays inside the plot and is nearer its own point than any other
(so no reader pairs it with a neighbour) wins; with none free it is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# (position name as plotly spells it, box offset from the point: left, bottom in px
# with y up, as multiples of the box width/height plus a fixed gap)
_GAP = 6.0  # > the marker radius, so a label never touches its own marker
_SPOTS: tuple[tuple[str, float, float], ...] = (
    ("top right", 0.0, 0.0),
    ("bottom right", 0.0, -1.0),
    ("top left", -1.0, 0.0),
    ("bottom left", -1.0, -1.0),
    ("top center", -0.5, 0.0),
    ("bottom center", -0.5, -1.0),
    ("middle right", 0.0, -0.5),
    ("middle left", -1.0, -0.5),
)
MARKER_RADIUS_PX = 4.5


@dataclass(frozen=True)
class Box:
    left: float
    bottom: float
    right: float
    top: float

    def overlaps(self, other: Box) -> bool:
        return not (
            self.right <= other.left
            or other.right <= self.left
            or self.top <= other.bottom
            or other.top <= self.bottom
        )


def _box(name: str, x: float, y: float, width: float, height: float) -> Box:
    _, fx, fy = next(spot for spot in _SPOTS if spot[0] == name)
    (gap_x, gap_y), _, _ = mpl_offset(name)
    left = x + fx * width + gap_x
    bottom = y + fy * height + gap_y
    return Box(left, bottom, left + width, bottom + height)


def distance(box: Box, x: float, y: float) -> float:
    """Pixels from a point to the nearest edge of a box (0 inside it)."""
    dx = max(box.left - x, 0.0, x - box.right)
    dy = max(box.bottom - y, 0.0, y - box.top)
    return float((dx * dx + dy * dy) ** 0.5)


def box_at(name: str, x: float, y: float, text: str, font_px: float = 10.0) -> Box:
    """The box a label of `text` at spot `name` of the point (x, y) in pixels takes."""
    return _box(name, x, y, 0.62 * font_px * len(text), 1.15 * font_px)


def place(
    points: Sequence[tuple[float, float]],
    texts: Sequence[str],
    size_px: tuple[float, float],
) -> list[str | None]:
    """A position name per label (None: left out). `points` are axes fractions (0..1)."""
    width_px, height_px = size_px
    pixels = [(x * width_px, y * height_px) for x, y in points]
    radius = MARKER_RADIUS_PX
    markers = [Box(px - radius, py - radius, px + radius, py + radius) for px, py in pixels]
    placed: list[Box] = []
    out: list[str | None] = []
    for own, ((px, py), text) in enumerate(zip(pixels, texts, strict=True)):
        choice = None
        if text:
            for name, _, _ in _SPOTS:
                box = box_at(name, px, py, text)
                inside = box.left >= 0 and box.bottom >= 0
                inside = inside and box.right <= width_px and box.top <= height_px
                if (
                    inside
                    and not any(box.overlaps(other) for other in (*markers, *placed))
                    and _nearest_is_own(box, own, pixels)
                ):
                    choice = name
                    placed.append(box)
                    break
        out.append(choice)
    return out


def _nearest_is_own(box: Box, own: int, pixels: Sequence[tuple[float, float]]) -> bool:
    """The label's own point is strictly the nearest to it: it reads as that point's."""
    mine = distance(box, *pixels[own])
    return all(distance(box, x, y) > mine for i, (x, y) in enumerate(pixels) if i != own)


def mpl_offset(name: str) -> tuple[tuple[float, float], str, str]:
    """matplotlib's `xytext` offset (points) and alignment for a position name."""
    vertical, horizontal = name.split(" ")
    dx = {"right": _GAP, "left": -_GAP, "center": 0.0}[horizontal]
    dy = {"top": _GAP, "bottom": -_GAP, "middle": 0.0}[vertical]
    ha = {"right": "left", "left": "right", "center": "center"}[horizontal]
    va = {"top": "bottom", "bottom": "top", "middle": "center"}[vertical]
    return (dx, dy), ha, va
