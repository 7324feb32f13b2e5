"""The Pareto frontier: points no other point beats on both interactivity and throughput per GPU.

Both axes are "higher is better". A point is on the frontier when no other point has
at least its x and at least its y with one of them strictly greater.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def frontier(
    items: Sequence[T],
    x: Callable[[T], float | None],
    y: Callable[[T], float | None],
) -> list[T]:
    """The non-dominated items, in increasing x (so decreasing y); items lacking x or y are ignored.

    O(n log n): sweep from the highest x down, keeping each item whose y beats every
    y seen so far. Ties in x keep only the highest y; exact duplicates keep the first.
    """
    scored = [
        (xv, yv, index)
        for index, item in enumerate(items)
        if (xv := x(item)) is not None and (yv := y(item)) is not None
    ]
    scored.sort(key=lambda entry: (-entry[0], -entry[1], entry[2]))
    kept: list[T] = []
    best_y = float("-inf")
    for _, yv, index in scored:
        if yv > best_y:
            kept.append(items[index])
            best_y = yv
    kept.reverse()
    return kept
