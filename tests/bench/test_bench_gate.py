"""The one validity gate: whatever `valid` a result file claims, its numbers are judged."""

from __future__ import annotations

import math
from typing import Any

import pytest

from disagg.bench.gate import finite_numbers, verdict


def good_point(**changes: Any) -> dict[str, Any]:
    point: dict[str, Any] = {
        "valid": True,
        "num_prompts": 10,
        "completed": 10,
        "failed": 0,
        "duration": 2.0,
        "total_input_tokens": 640,
        "total_output_tokens": 160,
        "request_throughput": 5.0,
        "output_throughput": 80.0,
        "total_token_throughput": 400.0,
        "median_ttft_ms": 12.5,
        "itls": [[0.01, 0.02]],
    }
    point.update(changes)
    return point


def test_a_sound_point_passes() -> None:
    assert verdict(good_point(), 0.01) is None


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"output_throughput": math.nan}, "output_throughput is NaN"),
        ({"total_token_throughput": math.inf}, "total_token_throughput is Infinity"),
        ({"itls": [[0.01, -math.inf]]}, "itls[0][1] is -Infinity"),
        ({"request_throughput": -3}, "request_throughput is -3"),
        ({"median_ttft_ms": -420.5}, "median_ttft_ms is -420.5"),
        ({"duration": 0}, "duration is 0"),
        ({"total_token_throughput": 10.0}, "below output_throughput"),
        ({"duration": None}, "duration is None"),
        ({"completed": 9.5, "failed": 0.5}, "completed is 9.5"),
        ({"completed": 10, "failed": 3}, "exceed the 10 prompts asked"),
        ({"completed": 0}, "no completed requests"),
        ({"completed": 4}, "6 of 10 requests failed"),  # asked for 10, counted 4
        ({"total_output_tokens": 0}, "no output tokens"),
        ({"output_throughput": 0.0}, "no output tokens"),
        ({"output_throughput": None}, "output_throughput is None"),
    ],
)
def test_a_point_claiming_valid_with_impossible_numbers_is_invalid(
    changes: dict[str, Any], named: str
) -> None:
    reason = verdict(good_point(**changes), 0.01)
    assert reason is not None and named in reason


def test_a_point_marked_invalid_stays_invalid_with_its_reason() -> None:
    assert verdict(good_point(valid=False, invalid_reason="stopped"), 0.01) == "stopped"


def test_a_vllm_file_without_failed_counts_the_missing_requests_as_failed() -> None:
    point = good_point(completed=9)
    del point["failed"], point["valid"]
    assert "1 of 10 requests failed" in (verdict(point, 0.01) or "")
    assert verdict(point, 0.2) is None


def test_progress_numbers_keep_only_finite_values() -> None:
    assert finite_numbers({"a": 1, "b": math.nan, "c": math.inf, "d": True, "e": "x"}) == {"a": 1.0}
