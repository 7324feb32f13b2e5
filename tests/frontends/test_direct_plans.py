"""Direct frontends (schema 2 `frontend.type: vllm`, `sglang`): the one aggregated worker
serves the load, with no router process, and its command is what srt-slurm's direct
frontend renders (`vllm serve` owning the API port; vLLM's own multi-node serve)."""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.plan.model import Plan, RoleKind
from engines.engine_support import SA_BENCH, TINY_HEAD, plan_text

VLLM_DIRECT = (
    TINY_HEAD.format(name="direct")
    + """\
engine: vllm
frontend:
  type: vllm
  enable_multiple_frontends: false
roles:
  agg:
    nodes: NODES
    workers: 1
    args:
      served-model-name: org/tiny
ARGS
"""
    + SA_BENCH
)


def _direct(tmp_path: Path, *, nodes: int = 1, args: str = "", extra: str = "") -> Plan:
    text = VLLM_DIRECT.replace("NODES", str(nodes)).replace("ARGS\n", args) + extra
    return plan_text(tmp_path, text)


def test_schema2_vllm_runs_the_one_vllm_serve_worker_as_the_endpoint(tmp_path: Path) -> None:
    plan = _direct(tmp_path, args="      tensor-parallel-size: 8\n")
    assert plan.frontend == "vllm (direct)"
    assert [role.name for role in plan.roles if role.kind is not RoleKind.BENCH] == ["aggregated-0"]
    assert plan.serving_role == "aggregated-0" and plan.stages[0] == ["aggregated-0"]
    argv = plan.role("aggregated-0").argv
    assert argv[:3] == ["vllm", "serve", "${model.path}"]
    at = argv.index("--port")
    assert argv[at + 1] == "${self.http_port}" and "--tensor-parallel-size" in argv
    # srtctl's VLLMFrontend health endpoint: the worker's own /health
    health = plan.role("aggregated-0").health
    assert health is not None and health.path == "/health"
    assert "direct-frontend" in [row["id"] for row in plan.differs]
    assert plan.bench.prompt_format == "text"


def test_a_multi_node_direct_vllm_worker_is_vllms_own_multi_node_serve(tmp_path: Path) -> None:
    """srtctl: the head node serves the API with --master-addr/--nnodes/--node-rank, the others
    run --headless; data parallelism is left to vLLM (no per-node DP flags), no
    --master-port, and --api-server-count only where the API server runs."""
    args = (
        "      tensor-parallel-size: 8\n      data-parallel-size: 2\n"
        "      enable-expert-parallel: true\n      api-server-count: 2\n"
    )
    role = _direct(tmp_path, nodes=2, args=args).role("aggregated-0")
    head, other = role.argv_on(0), role.argv_on(1)
    for rank, argv in enumerate((head, other)):
        at = argv.index("--master-addr")
        assert argv[at : at + 6] == [
            "--master-addr",
            "${self.host}",
            "--nnodes",
            "2",
            "--node-rank",
            str(rank),
        ]
        assert "--data-parallel-size-local" not in argv and "--master-port" not in argv
        assert argv[argv.index("--data-parallel-size") + 1] == "2"
    assert "--headless" not in head and "--port" in head and "--api-server-count" in head
    assert "--headless" in other and "--port" not in other and "--api-server-count" not in other


def test_data_parallel_ranks_need_not_divide_a_direct_workers_nodes(tmp_path: Path) -> None:
    """srtctl passes TP16 x DP2 over four 8-GPU nodes to `vllm serve` as written, with
    --nnodes 4 and each node's --node-rank: vLLM's multi-node serve places the ranks."""
    args = "      tensor-parallel-size: 16\n      data-parallel-size: 2\n"
    role = _direct(tmp_path, nodes=4, args=args).role("aggregated-0")
    assert [argv[argv.index("--node-rank") + 1] for argv in role.node_argv] == list("0123")
    assert all("--data-parallel-size-local" not in argv for argv in role.node_argv)


def test_a_direct_vllm_worker_takes_no_connector_from_its_role(tmp_path: Path) -> None:
    """srtctl pops `connector` from a direct worker's settings: no KV transfer is set up."""
    argv = _direct(tmp_path, args="      connector: nixl\n").role("aggregated-0").argv
    assert "--kv-transfer-config" not in argv and "--connector" not in argv


def test_direct_vllm_needs_a_single_endpoint_as_srtctl_validates(tmp_path: Path) -> None:
    text = VLLM_DIRECT.replace("NODES", "1").replace("ARGS\n", "")
    with pytest.raises(DisaggError) as caught:
        plan_text(
            tmp_path,
            text.replace("enable_multiple_frontends: false", "num_additional_frontends: 1"),
        )
    assert "binds vllm serve to the public port" in caught.value.message
    assert caught.value.hint == "set frontend.enable_multiple_frontends: false"
    with pytest.raises(DisaggError) as two:
        plan_text(tmp_path, text.replace("workers: 1", "workers: 2"))
    assert "needs exactly one aggregated worker, the recipe has 2" in two.value.message


def test_direct_vllm_over_another_engine_is_bad_input(tmp_path: Path) -> None:
    text = VLLM_DIRECT.replace("NODES", "1").replace("ARGS\n", "")
    text = text.replace("engine: vllm", "engine: sglang").replace("served-model-name", "tp-size")
    with pytest.raises(DisaggError) as caught:
        plan_text(tmp_path, text.replace("org/tiny\nbenchmark", "1\nbenchmark"))
    assert "serves a vllm worker directly, but the engine is sglang" in caught.value.message


V1_VLLM_DIRECT = (
    """\
name: direct
model: {path: hf:org/tiny, container: vllm, precision: bf16}
resources: {gpu_type: h100, gpus_per_node: 8, agg_nodes: 2, agg_workers: 1}
frontend: {type: vllm, enable_multiple_frontends: false}
backend:
  type: vllm
  connector: nixl
  vllm_config:
    aggregated:
      served-model-name: org/tiny
      tensor-parallel-size: 8
      pipeline-parallel-size: 2
      api-server-count: 2
"""
    + SA_BENCH
)


def test_v1_vllm_is_the_same_direct_worker_as_schema2s(tmp_path: Path) -> None:
    """srt-slurm v1.0.68's `frontend.type: vllm` (srtctl/frontends/vllm.py `VLLMFrontend`,
    `build_worker_command` for `frontend_type == "vllm"` in backends/vllm.py): no router, the
    one aggregated `vllm serve` worker owns the API port, vLLM's own multi-node serve over
    its nodes, no KV connector (popped), and no etcd/NATS (`do_sweep` skips them)."""
    v1 = plan_text(tmp_path, V1_VLLM_DIRECT)
    args = "      tensor-parallel-size: 8\n      pipeline-parallel-size: 2\n"
    schema2 = _direct(tmp_path, nodes=2, args=args + "      api-server-count: 2\n")
    assert v1.frontend == schema2.frontend == "vllm (direct)"
    assert [r.name for r in v1.roles] == [r.name for r in schema2.roles]
    head = v1.role("aggregated-0")
    assert head.node_argv == schema2.role("aggregated-0").node_argv
    assert head.argv[:3] == ["vllm", "serve", "${model.path}"] and v1.nodes == 2
    assert "--kv-transfer-config" not in head.argv and "--api-server-count" in head.argv
    assert "--headless" in head.argv_on(1) and "--api-server-count" not in head.argv_on(1)
    assert "direct-frontend" in [row["id"] for row in v1.differs]


def test_v1_vllm_keeps_srtctls_checks_and_its_internal_name_is_no_spelling(
    tmp_path: Path,
) -> None:
    """`SrtConfig._validate_vllm_frontend` (srtctl core/schema.py): one public endpoint, a
    vLLM backend, one aggregated worker."""
    with pytest.raises(DisaggError) as caught:
        plan_text(
            tmp_path,
            V1_VLLM_DIRECT.replace(
                "enable_multiple_frontends: false", "num_additional_frontends: 1"
            ),
        )
    assert caught.value.hint == "set frontend.enable_multiple_frontends: false"
    with pytest.raises(DisaggError) as two:
        plan_text(tmp_path, V1_VLLM_DIRECT.replace("agg_workers: 1", "agg_workers: 2"))
    assert "needs exactly one aggregated worker, the recipe has 2" in two.value.message
    with pytest.raises(DisaggError) as internal:
        plan_text(tmp_path, V1_VLLM_DIRECT.replace("type: vllm,", "type: vllm-direct,"))
    assert internal.value.hint == "v1 spells the directly serving vllm worker `vllm`"


def test_a_v1_frontend_type_that_is_not_text_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(DisaggError, match=r"frontend\.type"):
        plan_text(tmp_path, V1_VLLM_DIRECT.replace("type: vllm,", "type: [vllm],"))
