"""SGLang flag rendering exactly as DESIGN.md states it, and the helpers the linter uses."""

from __future__ import annotations

from disagg.engines.sglang import ADAPTER, render_args, worker_args
from disagg.engines.worker import Parallelism


def test_render_rules() -> None:
    args = {
        "tp-size": 4,
        "trust-remote-code": True,
        "disable-radix-cache": False,
        "chunked-prefill-size": None,
        "cuda-graph-bs": [1, 2, 4],
        "empty-list": [],
        "json-model-override-args": {"rope": {"factor": 4.0}},
        "mem_fraction_static": 0.85,
        "served-model-name": "org/name",
    }
    assert render_args(args) == [
        "--tp-size", "4",
        "--trust-remote-code",
        "--cuda-graph-bs", "1", "2", "4",
        "--json-model-override-args", '{"rope": {"factor": 4.0}}',
        "--mem-fraction-static", "0.85",
        "--served-model-name", "org/name",
    ]  # fmt: skip


def test_parallelism_accepts_every_spelling() -> None:
    assert ADAPTER.parallelism({"tensor-parallel-size": 8, "dp-size": 2}) == Parallelism(
        tp=8, dp=2, ep=1, pp=1
    )
    assert ADAPTER.parallelism({"ep_size": 4}).ep == 4
    assert ADAPTER.parallelism({"tp": 4, "dp": 4, "enable_dp_attention": True}).gpus == 4


def test_worker_args_replace_placement_flags_and_keep_local_drafts() -> None:
    argv = worker_args(
        {
            "model": "/x",
            "nnodes": 9,
            "speculative-draft-model-path": "/local/draft",
            "served-model-name": "mine",
        },
        disaggregation_mode="decode",
        served_name="ignored",
        multi_node=False,
    )
    # the node's own address, never every interface unless the recipe asks
    assert argv.count("--host") == 1 and argv[argv.index("--host") + 1] == "${self.bind_host}"
    assert "--nnodes" not in argv and "/x" not in argv
    assert argv[argv.index("--speculative-draft-model-path") + 1] == "/local/draft"
    assert argv[argv.index("--served-model-name") + 1] == "mine"
    assert "--disaggregation-bootstrap-port" not in argv


def test_a_host_the_recipe_sets_is_the_one_the_worker_binds() -> None:
    argv = worker_args(
        {"host": "0.0.0.0"}, disaggregation_mode=None, served_name="m", multi_node=False
    )
    assert argv.count("--host") == 1 and argv[argv.index("--host") + 1] == "0.0.0.0"
