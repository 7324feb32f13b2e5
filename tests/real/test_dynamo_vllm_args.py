"""The `python3 -m dynamo.vllm` commands disagg renders, read by Dynamo's own argument parser.

Real dynamo.vllm cannot start on this machine: ai-dynamo 1.6.1's vLLM worker imports
transformers' Qwen2-VL image processor, which imports torchvision, and torchvision's wheels
for torch 2.13 link CUDA (`operator torchvision::nms does not exist` beside the CPU torch).
Its argument parser (`dynamo.vllm.args`) imports none of that: it runs here with the engine
environment's vLLM 0.32 and the project's pinned ai-dynamo 1.6.1 on the path, and splits
each rendered command into Dynamo's settings and vLLM's engine arguments exactly as the
worker would at start-up. A flag either does not know fails the test.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from disagg.plan.model import RoleKind
from engines.engine_support import plan_text, worker_tasks
from frontends.test_dynamo_workers import ONE, PD, dynamo_recipe

pytestmark = [pytest.mark.real_engine, pytest.mark.slow]

# Read by the engine environment's Python: one JSON line per argv given on stdin.
PARSE = """
import json, sys
from dynamo.vllm.args import _parse_cli_args
for line in sys.stdin:
    dynamo, engine = _parse_cli_args(json.loads(line))
    transfer = engine.kv_transfer_config
    print(json.dumps({
        "mode": dynamo.disaggregation_mode and str(getattr(dynamo.disaggregation_mode,
                                                           "value", dynamo.disaggregation_mode)),
        "discovery": dynamo.discovery_backend,
        "plane": dynamo.request_plane,
        "headless": dynamo.headless,
        "model": engine.model,
        "served": engine.served_model_name,
        "connector": transfer.kv_connector if transfer else None,
        "max_model_len": engine.max_model_len,
        "dp": engine.data_parallel_size,
        "dp_local": engine.data_parallel_size_local,
        "dp_start": engine.data_parallel_start_rank,
        "hybrid_lb": engine.data_parallel_hybrid_lb,
        "dp_address": engine.data_parallel_address,
        "nnodes": engine.nnodes,
        "node_rank": engine.node_rank,
        "tp": engine.tensor_parallel_size,
    }))
"""


def dynamo_on_path(tmp_path: Path) -> Path:
    """A directory holding only the project's pinned `dynamo` package (ai-dynamo and its
    runtime), to put on the engine environment's PYTHONPATH."""
    import dynamo

    overlay = tmp_path / "dynamo-overlay"
    overlay.mkdir()
    (overlay / "dynamo").symlink_to(Path(next(iter(dynamo.__path__))))
    return overlay


def parsed(vllm_env: Path, tmp_path: Path, argvs: list[list[str]]) -> list[dict[str, Any]]:
    for argv in argvs:
        assert argv[:3] == ["python3", "-m", "dynamo.vllm"], argv
    stdin = "".join(json.dumps(argv[3:]) + "\n" for argv in argvs)
    done = subprocess.run(
        [str(vllm_env / "bin" / "python"), "-c", PARSE],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PYTHONPATH": str(dynamo_on_path(tmp_path)), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def worker_argvs(tmp_path: Path, roles: str, resources: str) -> list[list[str]]:
    plan = plan_text(tmp_path, dynamo_recipe("vllm", roles, resources=resources))
    return [argv for role, _, argv, _ in worker_tasks(plan) if role.kind is not RoleKind.ROUTER]


def test_aggregated_and_prefill_decode_commands_parse_as_dynamo_reads_them(
    vllm_env: Path, tmp_path: Path
) -> None:
    agg = worker_argvs(tmp_path, "    aggregated:\n      max-model-len: 4096\n", ONE)
    roles = "    prefill:\n      max-model-len: 2048\n    decode:\n      max-model-len: 2048\n"
    pd = worker_argvs(tmp_path, roles, PD)
    aggregated, prefill, decode = parsed(vllm_env, tmp_path, [*agg, *pd])
    assert aggregated["mode"] in (None, "agg")
    # srt-slurm gives aggregated dynamo.vllm workers `backend.connector` (nixl by default)
    assert aggregated["connector"] == "NixlConnector"
    assert aggregated["max_model_len"] == 4096
    assert (prefill["mode"], decode["mode"]) == ("prefill", "decode")
    for worker in (aggregated, prefill, decode):
        # srtctl serves the basename of the resolved model path
        assert worker["model"] == "/models/org--model" and worker["served"] == ["model"]
        assert (worker["discovery"], worker["plane"]) == ("etcd", "tcp")
    assert prefill["connector"] == decode["connector"] == "NixlConnector"


def test_multi_node_data_parallel_ranks_parse_per_node(vllm_env: Path, tmp_path: Path) -> None:
    """srt-slurm's per-node layout: each node its local ranks, hybrid-lb, none headless."""
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    roles = "    aggregated:\n      data-parallel-size: 8\n      enable-expert-parallel: true\n"
    head, other = parsed(vllm_env, tmp_path, worker_argvs(tmp_path, roles, resources))
    assert (head["dp"], head["dp_local"], head["dp_start"], head["headless"]) == (8, 4, 0, False)
    assert (other["dp"], other["dp_local"], other["dp_start"], other["headless"]) == (
        8,
        4,
        4,
        False,
    )
    assert head["hybrid_lb"] is True and other["hybrid_lb"] is True
    assert head["dp_address"] == other["dp_address"] == "10.0.0.1"


def test_a_replica_spanning_nodes_parses_as_one_rendezvous(vllm_env: Path, tmp_path: Path) -> None:
    """DP2 x TP8 on 4-GPU nodes: one rendezvous over the nodes, headless off the head node
    (srt-slurm `test_dp_per_node_uses_multinode_rendezvous_for_dp2_tp8`)."""
    resources = "  gpus_per_node: 4\n  agg_nodes: 4\n  agg_workers: 1\n"
    roles = "    aggregated:\n      data-parallel-size: 2\n      tensor-parallel-size: 8\n"
    found = parsed(vllm_env, tmp_path, worker_argvs(tmp_path, roles, resources))
    assert [(w["dp"], w["tp"], w["nnodes"]) for w in found] == [(2, 8, 4)] * 4
    assert [w["node_rank"] for w in found] == [0, 1, 2, 3]
    assert [w["headless"] for w in found] == [False, True, True, True]
