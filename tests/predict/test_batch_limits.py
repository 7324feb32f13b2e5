"""Batch limits that bound each rank of a worker, not the worker.

TensorRT-LLM runs one scheduler per attention-DP rank, each with the YAML's
`max_batch_size` and `max_num_tokens` (its DeepSeek-R1 guide: "--max_batch_size: Max batch
size in each rank"; the H200 max-throughput point runs 1024 requests as DEP8 with
`max_batch_size: 128`). vLLM runs each data-parallel rank as its own engine core with its
own scheduler (its data-parallel deployment guide: 'each DP rank is deployed as a separate
"core engine" process'; `EngineCore` builds a `Scheduler` from the shared
`max_num_seqs` / `max_num_batched_tokens`). The simulated worker stands for the whole
worker, so it is told the limits times the ranks; without them they are the worker's own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from disagg.engines.sim.args import EngineArgs, parse_args
from disagg.engines.sim.command import SIM_PREFIX
from disagg.engines.sim.scheduler import Scheduler, SimRequest, Stream
from disagg.engines.sim.timing import TimingModel
from disagg.plan.model import RoleKind
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

RECIPE = """\
name: "dep8"
model: {{path: "deepseek-ai/DeepSeek-R1", container: "none", precision: "fp8"}}
resources: {{gpu_type: "h200", gpus_per_node: 8, agg_nodes: 1, agg_workers: 1}}
backend:
  type: trtllm
  engine: sim
  trtllm_config:
    aggregated:
      tensor_parallel_size: 8
      moe_expert_parallel_size: 8
      enable_attention_dp: {adp}
      max_batch_size: 128
      max_num_tokens: 1151
      cuda_graph_config: {{batch_sizes: [128]}}
frontend: {{type: "trtllm_serve"}}
benchmark: {{type: "sa-bench", isl: 1024, osl: 2048, concurrencies: "1024"}}
"""


VLLM_RECIPE = """\
name: "vllm-dp"
model: {{path: "openai/gpt-oss-120b", container: "none", precision: "mxfp4"}}
resources: {{gpu_type: "h100", gpus_per_node: 8, agg_nodes: 1, agg_workers: 1, gpus_per_agg: {dp}}}
backend:
  type: vllm
  engine: sim
  vllm_config:
    aggregated:
      data-parallel-size: {dp}
      max-num-seqs: 64
      max-num-batched-tokens: 2048
      max-cudagraph-capture-size: 32
frontend: {{type: "vllm-router"}}
benchmark: {{type: "sa-bench", isl: 1024, osl: 1024, concurrencies: "256"}}
"""


def _worker_argv(tmp_path: Path, adp: bool, recipe: str = RECIPE) -> list[str]:
    path = tmp_path / "r.yaml"
    path.write_text(recipe.format(adp="true" if adp else "false", dp=4 if adp else 1))
    [variant] = load_variants(path)
    [worker] = [r for r in place(variant).roles if r.kind is RoleKind.AGGREGATED]
    assert tuple(worker.argv[:4]) == SIM_PREFIX
    return [w if not w.startswith("${") else "1" for w in worker.argv[4:]]


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _running_at_once(args: EngineArgs, requests: int, max_tokens: int) -> int:
    """How many of `requests` prefilled 1024-token requests the worker admits at once."""

    async def running() -> int:
        scheduler = Scheduler(TimingModel(args))
        stream = Stream()
        for i in range(requests):
            scheduler.submit_prefilled(SimRequest(i, 1024, max_tokens, max_tokens, stream))
        scheduler._admit_ready()
        return len(scheduler.running)

    return asyncio.run(running())


@pytest.mark.parametrize(("adp", "ranks"), [(True, 8), (False, 1)])
def test_trtllm_batch_limits_are_per_attention_dp_rank(
    tmp_path: Path, adp: bool, ranks: int
) -> None:
    argv = _worker_argv(tmp_path, adp)
    assert _value(argv, "--max-running-requests") == str(128 * ranks)
    assert _value(argv, "--chunked-prefill-size") == str(1151 * ranks)
    assert _value(argv, "--max-prefill-tokens") == str(1151 * ranks)
    assert _value(argv, "--cuda-graph-max-bs") == str(128 * ranks)


def test_a_dep8_worker_runs_128_requests_on_each_of_its_8_ranks(tmp_path: Path) -> None:
    """The H200 max-throughput shape: 1024 requests in flight, all running at once."""
    args = parse_args([*_worker_argv(tmp_path, True), "--disaggregation-mode", "decode"])
    assert _running_at_once(args, 1500, 2048) == 1024


@pytest.mark.parametrize(("dp", "ranks"), [(True, 4), (False, 1)])
def test_vllm_batch_limits_are_per_data_parallel_rank(tmp_path: Path, dp: bool, ranks: int) -> None:
    argv = _worker_argv(tmp_path, dp, VLLM_RECIPE)
    assert _value(argv, "--dp-size") == str(ranks)
    assert _value(argv, "--max-running-requests") == str(64 * ranks)
    assert _value(argv, "--chunked-prefill-size") == str(2048 * ranks)
    assert _value(argv, "--max-prefill-tokens") == str(2048 * ranks)
    assert _value(argv, "--cuda-graph-max-bs") == str(32 * ranks)


def test_a_vllm_dp4_worker_runs_64_requests_on_each_of_its_4_engines(tmp_path: Path) -> None:
    args = parse_args(_worker_argv(tmp_path, True, VLLM_RECIPE))
    assert _running_at_once(args, 300, 1024) == 256
