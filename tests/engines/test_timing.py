"""The timing model's shape: what makes simulated Pareto charts look like real ones."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from disagg.engines.sim.args import parse_args
from disagg.engines.sim.testing import post_json, start_worker, wait_ready
from disagg.engines.sim.timing import TimingModel


def test_tensor_parallel_speeds_up_steps_but_costs_per_gpu_throughput() -> None:
    tp1 = TimingModel(parse_args([]))
    tp4 = TimingModel(parse_args(["--tp-size", "4"]))
    assert tp4.decode_step_time(8, 8000) < tp1.decode_step_time(8, 8000) / 2
    assert tp4.prefill_time(4096) < tp1.prefill_time(4096) / 2


def test_decode_steps_grow_with_batch_and_pad_to_cuda_graph_sizes() -> None:
    model = TimingModel(parse_args(["--cuda-graph-bs", "1", "2", "4", "8"]))
    assert model.padded_batch(5) == 8 and model.padded_batch(9) == 9
    assert model.decode_step_time(5, 0) == model.decode_step_time(8, 0)
    # above the largest graph the batch runs eagerly: slower than the trend
    eager = model.decode_step_time(9, 0)
    assert eager > model.decode_step_time(8, 0) * 1.2


def test_speculative_decoding_emits_several_tokens_per_costlier_step() -> None:
    plain = TimingModel(parse_args([]))
    spec = TimingModel(
        parse_args(["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
                    "--sim-accept-rate", "0.8"])
    )  # fmt: skip
    rng = random.Random(1)
    draws = [spec.tokens_this_step(rng) for _ in range(4000)]
    assert max(draws) == 4 and min(draws) == 1
    mean = sum(draws) / len(draws)
    assert abs(mean - spec.expected_tokens_per_step()) < 0.1
    assert spec.decode_step_time(8, 0) > plain.decode_step_time(8, 0)


def test_a_real_worker_follows_the_shape_end_to_end(tmp_path: Path) -> None:
    """Measured over HTTP: batching 16 users raises throughput and slows each user down."""
    proc = start_worker(
        "aggregated-0",
        "aggregated",
        tmp_path,
        args=["--sim-decode-base-ms", "4", "--sim-decode-ms-per-seq", "0.5"],
    )
    try:
        wait_ready(proc, "/health")

        def one(_: int) -> float:
            start = time.monotonic()
            status, _raw = post_json(
                proc.url + "/v1/completions",
                {"prompt": "x", "max_tokens": 30, "ignore_eos": True},
            )
            assert status == 200
            return time.monotonic() - start

        def measure(concurrency: int, requests: int) -> tuple[float, float]:
            start = time.monotonic()
            with ThreadPoolExecutor(concurrency) as pool:
                latencies = list(pool.map(one, range(requests)))
            wall = time.monotonic() - start
            return requests * 30 / wall, 30 / (sum(latencies) / len(latencies))

        tput_1, user_1 = measure(1, 4)
        tput_16, user_16 = measure(16, 16)
        assert tput_16 > 2 * tput_1
        assert user_1 > 1.5 * user_16
    finally:
        proc.stop()
