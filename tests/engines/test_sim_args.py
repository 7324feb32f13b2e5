"""The simulated worker takes a real SGLang worker's argv unchanged."""

from __future__ import annotations

import pytest

from disagg.engines.sim.args import parse_args
from disagg.errors import DisaggError


def test_sglang_flags_are_read_and_unknown_ones_ignored() -> None:
    args = parse_args(
        [
            "--model-path", "/models/llama", "--served-model-name", "llama",
            "--disaggregation-mode", "decode", "--tp-size", "4", "--dp-size", "2",
            "--enable-dp-attention", "--max-running-requests", "128",
            "--cuda-graph-bs", "1", "2", "4", "--mem-fraction-static", "0.8",
            "--trust-remote-code", "--sim-decode-base-ms", "3.5",
        ]
    )  # fmt: skip
    assert args.mode == "decode"
    assert args.model_name == "llama"
    assert (args.tp_size, args.dp_size, args.gpus) == (4, 2, 4)
    assert args.running_limit == 128
    assert args.cuda_graph_bs == (1, 2, 4)
    assert args.sim.decode_base_ms == 3.5
    assert "--mem-fraction-static" in args.ignored and "--trust-remote-code" in args.ignored


def test_null_mode_is_aggregated_and_plain_dp_replicates_gpus() -> None:
    args = parse_args(["--disaggregation-mode", "null", "--tp", "2", "--dp", "3"])
    assert args.mode == "aggregated"
    assert args.gpus == 6


def test_speculative_defaults_follow_sglang() -> None:
    args = parse_args(["--speculative-algorithm", "EAGLE"])
    assert args.speculative and args.speculative_num_steps == 3
    assert args.speculative_num_draft_tokens == 4
    assert not parse_args([]).speculative


@pytest.mark.parametrize(
    "argv",
    [["--tp-size", "0"], ["--max-running-requests", "0"], ["--sim-accept-rate", "1.5"]],
)
def test_impossible_values_are_user_errors(argv: list[str]) -> None:
    with pytest.raises(DisaggError):
        parse_args(argv)


def test_every_sglang_spelling_of_the_parallel_sizes_is_read() -> None:
    """A worker written with `tensor-parallel-size: 8` stands for 8 GPUs, not one."""
    args = parse_args(
        ["--tensor-parallel-size", "8", "--data-parallel-size", "2", "--expert-parallel-size", "8"]
    )
    assert (args.tp_size, args.dp_size, args.ep_size, args.gpus) == (8, 2, 8, 16)
