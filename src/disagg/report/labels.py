"""Point labels that do not collide: each label takes the first free spot around its point.

Both renderers label points with their concurrency. Placed blindly ("top right"),
neighbouring labels of two series overprint ("128128"). Here every label is a box
of estimated size in plot pixels; the candidate spots around its point are tried in
order and the first that overlaps no marker, no placed label and stays inside the
plot wins; a label with no free spot is left out (the hover still says it).
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
    gap_x = _GAP if fx == 0.0 else (-_GAP if fx == -1.0 else 0.0)
    gap_y = _GAP if fy == 0.0 else -_GAP
    left = x + fx * width + gap_x
    bottom = y + fy * height + gap_y
    return Box(left, bottom, left + width, bottom + height)


def place(
    points: Sequence[tuple[float, float]],
    texts: Sequence[str],
    size_px: tuple[float, float],
    font_px: float = 10.0,
) -> list[str | None]:
    """A position name per label (None: left out). `points` are axes fractions (0..1)."""
    width_px, height_px = size_px
    pixels = [(x * width_px, y * height_px) for x, y in points]
    markers = [
        Box(
            px - MARKER_RADIUS_PX,
            py - MARKER_RADIUS_PX,
            px + MARKER_RADIUS_PX,
            py + MARKER_RADIUS_PX,
        )
        for px, py in pixels
    ]
    placed: list[Box] = []
    out: list[str | None] = []
    for (px, py), text in zip(pixels, texts, strict=True):
        choice = None
        if text:
            width, height = 0.62 * font_px * len(text), 1.15 * font_px
            for name, _, _ in _SPOTS:
                box = _box(name, px, py, width, height)
                inside = box.left >= 0 and box.bottom >= 0
                inside = inside and box.right <= width_px and box.top <= height_px
                if inside and not any(box.overlaps(other) for other in (*markers, *placed)):
                    choice = name
                    placed.append(box)
                    break
        out.append(choice)
    return out


def mpl_offset(name: str) -> tuple[tuple[float, float], str, str]:
    """matplotlib's `xytext` offset (points) and alignment for a position name."""
    vertical, horizontal = name.split(" ")
    dx = {"right": _GAP, "left": -_GAP, "center": 0.0}[horizontal]
    dy = _GAP if vertical == "top" else -_GAP
    ha = {"right": "left", "left": "right", "center": "center"}[horizontal]
    va = "bottom" if vertical == "top" else "top"
    return (dx, dy), ha, va
