"""The sglang-router / smg command as srtctl renders it, and the router a TRT-LLM
prefill/decode variant gets.

srt-slurm sources (v1.0.68):
- `SGLangFrontend.start_frontends` (srtctl/frontends/sglang.py): the router's argv is the
  worker URLs, `--host`/`--port` and the recipe's `frontend.args`; no `--policy` of its
  own, so the router's default applies unless `frontend.args.policy` names one. A worker
  whose mode sets `grpc-mode` (`SGLangProtocol.is_grpc_mode`, backends/sglang.py) is given
  as `grpc://host:port`.
- `TRTLLMProtocol.build_worker_command` (srtctl/backends/trtllm.py): unless
  `frontend.type: trtllm_serve`, TRT-LLM workers run as `python3 -m dynamo.trtllm`, which
  serves no HTTP; only `trtllm_serve` runs `trtllm-serve disaggregated` in front of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.errors import UnsupportedRecipe
from disagg.frontends.smg import router_argv
from engines.engine_support import plan_text, recipe
from recipes.recipe_helpers import MINIMAL

PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n  decode_nodes: 1\n"
    "  decode_workers: 1\n  gpus_per_prefill: 8\n  gpus_per_decode: 8\n"
)
TRTLLM_ROLES = (
    "    prefill: {tensor_parallel_size: 8, cache_transceiver_config: {backend: NIXL}}\n"
    "    decode: {tensor_parallel_size: 8, cache_transceiver_config: {backend: NIXL}}\n"
)


def test_no_policy_in_the_recipe_passes_none() -> None:
    argv = router_argv(prefill=["prefill-0"], decode=["decode-0"])
    assert "--policy" not in argv
    chosen = router_argv(aggregated=["aggregated-0"], extra={"policy": "cache_aware"})
    assert chosen[chosen.index("--policy") + 1] == "cache_aware"
    assert chosen.count("--policy") == 1


def test_a_planned_router_without_policy_leaves_the_routers_default(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, MINIMAL)
    assert "--policy" not in plan.role("router").argv


def test_grpc_mode_workers_are_given_as_grpc_urls(tmp_path: Path) -> None:
    grpc = MINIMAL.replace(
        "    decode:\n      tp-size: 8\n", "    decode:\n      tp-size: 8\n      grpc-mode: true\n"
    )
    argv = plan_text(tmp_path, grpc).role("router").argv
    assert argv[argv.index("--decode") + 1] == "grpc://${decode-0.host}:${decode-0.http_port}"
    assert argv[argv.index("--prefill") + 1] == "${prefill-0.url}"  # HTTP: no grpc-mode


@pytest.mark.parametrize("kind", ["sglang", "smg", "sglang-router"])
def test_a_router_over_trtllm_prefill_decode_workers_is_refused(tmp_path: Path, kind: str) -> None:
    text = recipe("trtllm", TRTLLM_ROLES, resources=PD, frontend=kind)
    with pytest.raises(UnsupportedRecipe, match=r"TRT-LLM prefill workers behind") as caught:
        plan_text(tmp_path, text)
    assert "trtllm_serve" in caught.value.message and "dynamo" in caught.value.message
    assert caught.value.location is not None


def test_trtllm_serve_runs_its_orchestrator_where_the_recipe_places_it(tmp_path: Path) -> None:
    frontend = (
        "frontend: {type: trtllm_serve, enable_multiple_frontends: false, "
        "orchestrator_placement: first_decode}\n"
    )
    text = recipe("trtllm", TRTLLM_ROLES, resources=PD, frontend="trtllm_serve").replace(
        "frontend: {type: trtllm_serve}\n", frontend
    )
    plan = plan_text(tmp_path, text)
    assert plan.role("router").argv[:2] == ["trtllm-serve", "disaggregated"]
    assert plan.role("router").node_ranks == plan.role("decode-0").node_ranks == [1]


def test_grpc_vllm_workers_are_registered_by_their_grpc_urls(tmp_path: Path) -> None:
    """srtctl 2.x (docs/smg.md): vLLM workers with `grpc: true` are given as `grpc://`."""
    roles = (
        "    prefill: {tensor-parallel-size: 8, grpc: true}\n"
        "    decode: {tensor-parallel-size: 8, grpc: true}\n"
    )
    text = recipe("vllm", roles, resources=PD, backend="  connector: nixl\n", frontend="smg")
    argv = plan_text(tmp_path, text).role("router").argv
    workers = [argv[i + 1] for i, word in enumerate(argv) if word == "--worker"]
    assert workers == [
        "grpc://${prefill-0.host}:${prefill-0.http_port}",
        "grpc://${decode-0.host}:${decode-0.http_port}",
    ]
