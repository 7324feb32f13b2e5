"""The frontier keeps exactly the points nobody beats on both axes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from disagg.report.chart import frontier

Point = tuple[float, float]


def _x(p: Point) -> float:
    return p[0]


def _y(p: Point) -> float:
    return p[1]


def _dominates(a: Point, b: Point) -> bool:
    return a[0] >= b[0] and a[1] >= b[1] and a != b


def test_a_typical_throughput_latency_curve() -> None:
    points = [(10.0, 500.0), (20.0, 450.0), (15.0, 300.0), (40.0, 200.0), (30.0, 150.0)]
    assert frontier(points, _x, _y) == [(10.0, 500.0), (20.0, 450.0), (40.0, 200.0)]


def test_points_without_a_value_are_ignored() -> None:
    points: list[tuple[float | None, float | None]] = [(None, 900.0), (5.0, None), (1.0, 1.0)]
    assert frontier(points, lambda p: p[0], lambda p: p[1]) == [(1.0, 1.0)]


def test_ties_on_x_keep_the_higher_y_and_duplicates_once() -> None:
    points = [(10.0, 1.0), (10.0, 3.0), (10.0, 3.0)]
    assert frontier(points, _x, _y) == [(10.0, 3.0)]


coords = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(st.lists(st.tuples(coords, coords), max_size=60))
def test_frontier_is_exactly_the_non_dominated_set(points: list[Point]) -> None:
    kept = frontier(points, _x, _y)

    assert all(not any(_dominates(other, p) for other in points) for p in kept)
    for p in points:
        if p not in kept:
            assert any(_dominates(k, p) or k == p for k in kept)
    assert [p[0] for p in kept] == sorted(p[0] for p in kept)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.integers(1, 4096)),
        min_size=1,
        max_size=30,
    )
)
def test_every_placed_label_is_nearer_its_own_point_than_any_other(
    points: list[tuple[float, float, int]],
) -> None:
    from disagg.report.chart import PLOT_PX
    from disagg.report.labels import box_at, distance, place

    texts = [str(conc) for _, _, conc in points]
    spots = place([(x, y) for x, y, _ in points], texts, PLOT_PX)
    pixels = [(x * PLOT_PX[0], y * PLOT_PX[1]) for x, y, _ in points]
    for own, spot in enumerate(spots):
        if spot is None:
            continue
        box = box_at(spot, *pixels[own], texts[own])
        mine = distance(box, *pixels[own])
        assert all(distance(box, *p) > mine for i, p in enumerate(pixels) if i != own)


def test_two_close_points_at_the_bottom_both_keep_a_label_beside_them() -> None:
    from disagg.report.chart import PLOT_PX
    from disagg.report.labels import place

    # the demo's concurrency 1 and 2: 2 px apart across, 11 px up, near the x axis
    spots = place([(0.978, 0.022), (0.980, 0.044)], ["1", "2"], PLOT_PX)
    assert spots[0] is not None and spots[1] is not None
