"""The live view says how far a sweep is: the running point against its expected time, and
an ETA for the sweep at the pace measured so far."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from disagg.launch.runner import status_line
from disagg.launch.state import PointState, PointStatus, RunState, sweep_eta


def _points() -> list[PointState]:
    return [
        PointState(key="conc1", status=PointStatus.MEASURED, seconds=10.0, requests=5),
        PointState(key="conc4", status=PointStatus.RUNNING, started_at=100.0, requests=20),
        PointState(key="conc16", status=PointStatus.PENDING, requests=80),
    ]


def test_eta_counts_the_rest_of_the_running_point_and_every_pending_one() -> None:
    # 2 s per request: 40 s for conc4 (15 already spent) and 160 s for conc16.
    assert sweep_eta(_points(), now=115.0) == 25.0 + 160.0


def test_no_eta_before_the_first_point_ends() -> None:
    points = _points()
    points[0] = PointState(key="conc1", status=PointStatus.RUNNING, started_at=90.0, requests=5)
    assert sweep_eta(points, now=95.0) is None


def test_the_status_line_shows_progress_and_eta() -> None:
    state = RunState(
        name="sweep",
        selector="r.yaml:base",
        run_dir="/tmp/x",
        simulated=True,
        executor="local",
        orchestrator_pid=1,
        started_at=50.0,
        current_point="conc4",
        points=_points(),
    )
    text = status_line(state, now=115.0).plain
    assert "points 1/3" in text
    assert "measuring conc4 (15.0 s of ~40 s)" in text
    assert "ETA 3m05s" in text


def _sweep(concs: list[int]) -> list[PointState]:
    """Pending points of an sa-bench sweep (10 prompts and 2 warm-ups per stream)."""
    return [
        PointState(key=f"conc{c}", status=PointStatus.PENDING, requests=12 * c, streams=c)
        for c in concs
    ]


@pytest.mark.parametrize(
    "latency",
    [
        lambda c: 0.4,  # a server with room (the simulated engine of the demo)
        lambda c: 0.4 * (1 + c / 64),  # requests slow down as concurrency grows
        lambda c: 0.4 * c**0.3,  # ... and more so
    ],
)
def test_from_the_second_point_on_the_eta_is_within_a_factor_of_two(
    latency: Callable[[int], float],
) -> None:
    concs = [1, 2, 4, 8, 16, 32, 64]
    points = _sweep(concs)
    truth = [p.requests / (p.streams or 1) * latency(p.streams or 1) for p in points]
    for done in range(2, len(points)):
        for point, seconds in zip(points[:done], truth[:done], strict=True):
            point.status, point.seconds = PointStatus.MEASURED, seconds
        eta = sweep_eta(points, now=0.0)
        left = sum(truth[done:])
        assert eta is not None and left / 2 <= eta <= 2 * left, (done, eta, left)


def test_points_with_impossible_numbers_teach_the_eta_nothing_and_raise_nothing() -> None:
    points = [
        PointState(key="c1", status=PointStatus.MEASURED, seconds=-3.0, requests=12, streams=1),
        PointState(key="c2", status=PointStatus.MEASURED, seconds=6.0, requests=-4, streams=2),
        PointState(key="c4", status=PointStatus.MEASURED, seconds=6.0, requests=12, streams=-4),
        PointState(key="c8", status=PointStatus.PENDING, requests=96, streams=8),
    ]
    assert sweep_eta(points, now=0.0) == 48.0  # only c4 counts: 0.5 s a request, no fit
