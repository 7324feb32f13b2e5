"""The `vllm-router` frontend's plan: the router argv srtctl's `VLLMRouterFrontend` renders
(worker URLs, PD mode with each prefill's NIXL side-channel port, the flags it derives,
`frontend.args` as written), its health gate, and clear errors for what srtctl rejects."""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.frontends.vllm_router import render_args
from disagg.plan.model import Plan, RoleKind
from engines.engine_support import SA_BENCH, TINY_HEAD, plan_text

PD = (
    TINY_HEAD.format(name="vllm-router-pd")
    + """\
frontend:
  type: vllm-router
  enable_multiple_frontends: false
  args:
    policy: consistent_hash
engine:
  type: vllm
  connector: nixl
roles:
  prefill:
    nodes: 1
    workers: 1
    gpus: 1
    args:
      served-model-name: org/tiny
  decode:
    nodes: 0
    workers: 1
    gpus: 1
    args:
      served-model-name: org/tiny
"""
    + SA_BENCH
)
AGG = (
    TINY_HEAD.format(name="vllm-router-agg")
    + """\
frontend:
  type: vllm-router
  enable_multiple_frontends: false
FRONTEND_ARGS
engine: vllm
roles:
  agg:
    nodes: 1
    workers: 2
    gpus: 4
    args:
      served-model-name: org/tiny
AGG_ARGS
"""
    + SA_BENCH
)


def _agg(tmp_path: Path, *, frontend_args: str = "", agg_args: str = "") -> Plan:
    text = AGG.replace("FRONTEND_ARGS\n", frontend_args).replace("AGG_ARGS\n", agg_args)
    return plan_text(tmp_path, text)


def _after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_pd_mode_names_each_prefill_with_its_nixl_side_channel(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, PD)
    assert plan.frontend == "vllm-router" and plan.serving_role == "router"
    assert plan.stages == [["prefill-0", "decode-0"], ["router"]]
    router = plan.role("router")
    argv = router.argv
    assert argv[:2] == ["vllm-router", "--vllm-pd-disaggregation"]
    at = argv.index("--prefill")
    assert argv[at : at + 3] == ["--prefill", "${prefill-0.url}", "${prefill-0.nixl_port}"]
    assert "nixl" in plan.role("prefill-0").ports
    assert _after(argv, "--decode") == "${decode-0.url}"
    assert _after(argv, "--port") == "${self.http_port}"
    # srtctl: health_check.max_attempts x interval_seconds (180 x 10 by default)
    assert _after(argv, "--worker-startup-timeout-secs") == "1800"
    assert argv[-2:] == ["--policy", "consistent_hash"]  # frontend.args, last
    assert _after(argv, "--prometheus-port") == "${self.metrics_port}"
    assert router.kind is RoleKind.ROUTER and router.ports == ["http", "metrics"]
    assert router.health is not None and router.health.path == "/readiness"
    assert "vllm-router-metrics" in [row["id"] for row in plan.differs]
    # the workers are plain `vllm serve` with the NIXL connector
    worker = plan.role("decode-0").argv
    assert worker[:2] == ["vllm", "serve"] and "NixlConnector" in _after(
        worker, "--kv-transfer-config"
    )


def test_aggregated_workers_are_listed_and_the_startup_timeout_follows_health_check(
    tmp_path: Path,
) -> None:
    text = AGG.replace("FRONTEND_ARGS\n", "").replace("AGG_ARGS\n", "")
    text += "health_check:\n  max_attempts: 30\n  interval_seconds: 2\n"
    argv = plan_text(tmp_path, text).role("router").argv
    at = argv.index("--worker-urls")
    assert argv[at : at + 3] == ["--worker-urls", "${aggregated-0.url}", "${aggregated-1.url}"]
    assert "--vllm-pd-disaggregation" not in argv
    assert _after(argv, "--worker-startup-timeout-secs") == "60"
    assert "--intra-node-data-parallel-size" not in argv  # no data parallelism


def test_node_local_data_parallel_ranks_are_told_to_the_router(tmp_path: Path) -> None:
    """srtctl derives --intra-node-data-parallel-size: DP ranks behind each worker URL."""
    dp = "      data-parallel-size: 4\n"
    argv = _agg(tmp_path, agg_args=dp).role("router").argv
    assert _after(argv, "--intra-node-data-parallel-size") == "4"
    agreeing = "  args:\n    intra-node-data-parallel-size: 4\n"
    argv = _agg(tmp_path, frontend_args=agreeing, agg_args=dp).role("router").argv
    assert argv.count("--intra-node-data-parallel-size") == 1
    with pytest.raises(DisaggError) as caught:
        _agg(tmp_path, frontend_args=agreeing.replace("4", "2"), agg_args=dp)
    assert "conflicts with the workers' layout (derived 4)" in caught.value.message


def test_frontend_args_render_as_srtctl_and_managed_ones_are_refused(tmp_path: Path) -> None:
    assert render_args({"a": True, "b": False, "c": None, "d": [1, 2], "e": 3}) == [
        "--a",
        "--d",
        "1",
        "--d",
        "2",
        "--e",
        "3",
    ]
    with pytest.raises(DisaggError) as caught:
        _agg(tmp_path, frontend_args="  args:\n    port: 9000\n")
    assert "frontend.args.port is set by disagg" in caught.value.message


def test_what_srtctl_rejects_is_bad_input_with_the_reason(tmp_path: Path) -> None:
    sglang = PD.replace("engine:\n  type: vllm\n  connector: nixl\n", "engine: sglang\n")
    sglang = sglang.replace("served-model-name: org/tiny", "tp-size: 1")
    with pytest.raises(DisaggError) as engine:
        plan_text(tmp_path, sglang)
    assert "vllm-router fronts vLLM workers, but the engine is sglang" in engine.value.message
    spanning = PD.replace(
        "    nodes: 1\n    workers: 1\n    gpus: 1\n",
        "    nodes: 2\n    workers: 1\n    gpus: 16\n",
    ).replace("    nodes: 0\n", "    nodes: 1\n")
    with pytest.raises(DisaggError) as nodes:
        plan_text(tmp_path, spanning)
    assert "each prefill/decode worker on one node" in nodes.value.message


def test_moriio_discovery_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedRecipe) as caught:
        plan_text(tmp_path, PD.replace("connector: nixl", "connector: moriio"))
    assert "unsupported: connector moriio behind vllm-router" in caught.value.message
