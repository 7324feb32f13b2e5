"""`backend.kv_events_config`: each worker's ZMQ KV-cache event publisher, which Dynamo's
frontend routes on with `router-mode: kv`.

srt-slurm v1.0.68, `get_kv_events_config_for_mode` and `build_worker_command` of
`SGLangProtocol` (srtctl/backends/sglang.py) and `VLLMProtocol` (srtctl/backends/vllm.py):
`true` enables prefill and decode with `{"publisher": "zmq", "topic": "kv-events"}`, a
per-mode map (`aggregated` for aggregated workers) the modes it names, a map value merged
over the defaults; vLLM adds `"enable_kv_cache_events": true` and is told the port in
`DYN_VLLM_KV_EVENT_PORT`; the worker gets `--kv-events-config` with the endpoint
`tcp://*:<its own port>`, under every frontend.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from disagg.plan.model import Plan, RolePlan
from disagg.recipe.lint import lint_paths
from engines.engine_support import plan_text, recipe
from recipes.recipe_helpers import MINIMAL

WITHOUT_FRONTEND = MINIMAL[: MINIMAL.index("frontend:")]
DYNAMO_KV = "frontend:\n  type: dynamo\n  args:\n    router-mode: kv\n"
ENDPOINT = "tcp://*:${self.kv_events_port}"


def with_events(setting: str, frontend: str = DYNAMO_KV) -> str:
    return WITHOUT_FRONTEND.replace("backend:\n", f"backend:\n  kv_events_config: {setting}\n") + (
        frontend
    )


def published(role: RolePlan) -> dict[str, Any] | None:
    if "--kv-events-config" not in role.argv:
        return None
    config = json.loads(role.argv[role.argv.index("--kv-events-config") + 1])
    assert isinstance(config, dict)
    return config


def ignored_fields(plan: Plan) -> list[str]:
    return [item["field"] for item in plan.ignored]


def test_true_publishes_from_prefill_and_decode_for_the_kv_router(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, with_events("true"))
    for name in ("prefill-0", "decode-0"):
        role = plan.role(name)
        assert published(role) == {"publisher": "zmq", "topic": "kv-events", "endpoint": ENDPOINT}
        assert "kv_events" in role.ports
    assert "backend.kv_events_config" not in ignored_fields(plan)


def test_a_per_mode_map_enables_the_modes_it_names(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, with_events("{prefill: {topic: mine}}"))
    assert published(plan.role("prefill-0")) == {
        "publisher": "zmq",
        "topic": "mine",
        "endpoint": ENDPOINT,
    }
    assert published(plan.role("decode-0")) is None
    assert "kv_events" not in plan.role("decode-0").ports


def test_published_under_a_router_frontend_too(tmp_path: Path) -> None:
    smg = "frontend:\n  type: sglang\n  enable_multiple_frontends: false\n"
    plan = plan_text(tmp_path, with_events("{decode: true}", smg))
    assert published(plan.role("decode-0")) is not None
    assert published(plan.role("router")) is None


def test_vllm_workers_enable_cache_events_and_learn_their_port(tmp_path: Path) -> None:
    resources = (
        "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n  decode_nodes: 1\n"
        "  decode_workers: 1\n  gpus_per_prefill: 8\n  gpus_per_decode: 8\n"
    )
    roles = "    prefill: {tensor-parallel-size: 8}\n    decode: {tensor-parallel-size: 8}\n"
    text = recipe(
        "vllm",
        roles,
        resources=resources,
        backend="  connector: nixl\n  kv_events_config: true\n",
        frontend="dynamo",
    )
    plan = plan_text(tmp_path, text)
    decode = plan.role("decode-0")
    assert published(decode) == {
        "publisher": "zmq",
        "topic": "kv-events",
        "enable_kv_cache_events": True,
        "endpoint": ENDPOINT,
    }
    assert decode.env["DYN_VLLM_KV_EVENT_PORT"] == "${self.kv_events_port}"


def test_an_engine_that_does_not_read_it_still_says_so(tmp_path: Path) -> None:
    roles = "    aggregated: {tensor_parallel_size: 1}\n"
    resources = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n  gpus_per_agg: 1\n"
    text = recipe("trtllm", roles, resources=resources, backend="  kv_events_config: true\n")
    plan = plan_text(tmp_path, text)
    assert "backend.kv_events_config" in ignored_fields(plan)


SCHEMA2 = """\
schema: 2
name: tiny
model: {path: "hf:org/tiny", container: sglang, precision: bf16}
resources: {gpu_type: h100, gpus_per_node: 8}
engine: sglang
roles:
  prefill: {nodes: 1, workers: 1, args: {tp-size: 8}}
  decode: {nodes: 1, workers: 1, kv_events: true, args: {tp-size: 8}}
benchmark: {type: sa-bench, isl: 1024, osl: 128, concurrencies: "1x4"}
frontend: {type: dynamo, args: {router-mode: kv}}
"""


def test_schema2_role_kv_events_publish_and_neither_plan_nor_lint_call_them_ignored(
    tmp_path: Path,
) -> None:
    plan = plan_text(tmp_path, SCHEMA2)
    assert published(plan.role("decode-0")) is not None
    assert published(plan.role("prefill-0")) is None
    assert not [f for f in ignored_fields(plan) if "kv_events" in f]
    report = lint_paths([tmp_path / "recipe.yaml"])
    assert not [f.message for f in report.findings if "kv_events" in f.message]
