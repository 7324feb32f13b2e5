"""vLLM and TRT-LLM workers under `frontend.type: dynamo`, as srt-slurm runs them on clusters:
`python3 -m dynamo.vllm` / `python3 -m dynamo.trtllm` with the engine's own settings, found
by the Dynamo frontend through etcd, and no other frontend in their place."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from disagg.plan.model import Plan, RoleKind
from engines.engine_support import plan_text

ONE = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n  gpus_per_agg: 1\n"
PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n  decode_nodes: 1\n"
    "  decode_workers: 1\n  gpus_per_prefill: 8\n  gpus_per_decode: 8\n"
)
# srtctl v1.0.68 passes every Dynamo engine worker `--request-plane` and no
# `--discovery-backend` (etcd is Dynamo's default): `build_worker_command` in
# srtctl/backends/{sglang,vllm,trtllm}.py.
RUNTIME = ["--request-plane", "tcp"]
# dynamo.vllm dumps its resolved config into the run directory (srtctl: `--dump-config-to
# <log dir>/<node>_config.json`, VLLMProtocol.build_worker_command).
DUMP = ["--dump-config-to", "${run.dir}/${self.node}_config.json"]


def dynamo_recipe(engine: str, roles: str, *, resources: str, extra: str = "") -> str:
    """A real (not simulated) recipe of `engine` behind Dynamo, installing no Dynamo of its
    own (the container's runs), so the worker commands are exactly what the nodes start."""
    return (
        "name: t\n"
        "model: {path: hf:org/model, container: img, precision: bf16}\n"
        f"resources:\n  gpu_type: h100\n{resources}"
        f"backend:\n  type: {engine}\n  {engine}_config:\n{roles}"
        "frontend: {type: dynamo, enable_multiple_frontends: false}\n"
        f"dynamo: {{install: false}}\n{extra}"
        "benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: '1'}\n"
    )


def assert_dynamo_fronts_them(plan: Plan) -> None:
    """Dynamo's frontend is what runs, after etcd/NATS and the workers, and says nothing
    else runs in its place."""
    assert plan.frontend == "dynamo" and plan.simulator is None
    assert not [i for i in plan.ignored if i["field"] == "frontend.type"]
    workers = [r.name for r in plan.roles if r.kind in (RoleKind.PREFILL, RoleKind.DECODE)] or [
        r.name for r in plan.roles if r.kind is RoleKind.AGGREGATED
    ]
    assert plan.stages == [["etcd", "nats"], workers, ["frontend"]]
    assert plan.role("frontend").argv[:3] == ["python3", "-m", "dynamo.frontend"]
    assert plan.serving_role == "frontend"


def test_aggregated_vllm_worker_is_dynamo_vllm_with_the_engines_flags(tmp_path: Path) -> None:
    roles = "    aggregated:\n      max-model-len: 4096\n      enforce-eager: true\n"
    plan = plan_text(tmp_path, dynamo_recipe("vllm", roles, resources=ONE))
    assert_dynamo_fronts_them(plan)
    worker = plan.role("aggregated-0")
    # srt-slurm's dynamo.vllm workers take `backend.connector` (nixl unless set) even when
    # aggregated (`VLLMProtocol.build_worker_command`; its tests' `test_connector_*`).
    nixl = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"})
    assert worker.argv == [
        "python3", "-m", "dynamo.vllm", "--model", "${model.path}",
        "--max-model-len", "4096", "--enforce-eager", "--served-model-name", "model",
        "--kv-transfer-config", nixl, *RUNTIME, *DUMP,
    ]  # fmt: skip
    # No HTTP API of its own: Dynamo's system port (a port of its own, as srtctl's
    # `sys_port`) lists its `generate` endpoint as ready once it serves; srtctl sets no
    # DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS, so the gate reads the list whatever the status.
    health = worker.health
    assert health is not None and health.path == "/health" and health.port == "system"
    assert health.expect == '"generate":"ready"' and health.any_status
    assert worker.env["DYN_SYSTEM_PORT"] == "${self.system_port}" and "system" in worker.ports
    assert "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS" not in worker.env
    assert worker.env["ETCD_ENDPOINTS"] == "${etcd.url}"


def test_vllm_prefill_and_decode_run_in_their_disaggregation_mode_with_nixl(
    tmp_path: Path,
) -> None:
    roles = "    prefill:\n      max-model-len: 4096\n    decode:\n      max-model-len: 4096\n"
    plan = plan_text(tmp_path, dynamo_recipe("vllm", roles, resources=PD))
    assert_dynamo_fronts_them(plan)
    assert not [r for r in plan.roles if r.name == "router"]  # no smg: Dynamo routes P -> D
    for name, mode in (("prefill-0", "prefill"), ("decode-0", "decode")):
        worker = plan.role(name)
        argv = worker.argv
        assert argv[:5] == ["python3", "-m", "dynamo.vllm", "--model", "${model.path}"]
        assert argv[argv.index("--disaggregation-mode") + 1] == mode
        transfer = json.loads(argv[argv.index("--kv-transfer-config") + 1])
        assert transfer == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        assert "--connector" not in argv  # Dynamo 1.x removed it
        assert "--host" not in argv and "--port" not in argv
        assert "nixl" in worker.ports  # a NIXL side channel of its own per worker
        assert worker.env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "${self.nixl_port}"
        assert argv[-4:] == [*RUNTIME, *DUMP]


def test_multi_node_vllm_runs_srtctls_per_node_data_parallel_layout(tmp_path: Path) -> None:
    """srt-slurm v1.0.68 (`dp_launch_mode: per_node`): every node runs its local ranks with
    hybrid load balancing so that each registers with the frontend; none is headless."""
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    roles = "    aggregated:\n      data-parallel-size: 8\n      enable-expert-parallel: true\n"
    plan = plan_text(tmp_path, dynamo_recipe("vllm", roles, resources=resources))
    worker = plan.role("aggregated-0")
    head, other = worker.node_argv
    assert worker.argv == head and head[2] == other[2] == "dynamo.vllm"
    for rank, argv in enumerate((head, other)):
        assert "--headless" not in argv and "--data-parallel-hybrid-lb" in argv
        assert argv[argv.index("--data-parallel-start-rank") + 1] == str(4 * rank)
        assert argv[argv.index("--data-parallel-size-local") + 1] == "4"
        assert argv[argv.index("--data-parallel-address") + 1] == "${self.host}"


def test_vllm_serve_only_settings_are_said_to_be_ignored(tmp_path: Path) -> None:
    roles = "    aggregated:\n      max-model-len: 4096\n      host: 0.0.0.0\n"
    text = dynamo_recipe("vllm", roles, resources=ONE).replace(
        "  type: vllm\n", "  type: vllm\n  vllm_serve_binary: vllm-rs\n"
    )
    plan = plan_text(tmp_path, text)
    [note] = [i for i in plan.ignored if i["field"] == "backend.vllm_serve_binary"]
    assert "dynamo.vllm" in note["why"]
    [host] = [i for i in plan.ignored if i["field"] == "backend.vllm_config.aggregated.host"]
    assert "no HTTP API" in host["why"]
    argv = plan.role("aggregated-0").argv
    assert "vllm-rs" not in argv and "0.0.0.0" not in argv


def test_aggregated_trtllm_worker_is_dynamo_trtllm_reading_the_roles_yaml(tmp_path: Path) -> None:
    roles = "    aggregated:\n      tensor_parallel_size: 1\n      max_batch_size: 64\n"
    plan = plan_text(tmp_path, dynamo_recipe("trtllm", roles, resources=ONE))
    assert_dynamo_fronts_them(plan)
    worker = plan.role("aggregated-0")
    # one MPI rank per GPU under trtllm-llmapi-launch, one node included, as srt-slurm
    # starts every TRT-LLM worker (TRTLLMProtocol.get_srun_config, build_worker_command)
    assert worker.argv == [
        "trtllm-llmapi-launch", "python3", "-m", "dynamo.trtllm", "--model-path", "${model.path}",
        "--served-model-name", "model",
        "--extra-engine-args", "${run.dir}/trtllm/aggregated.yaml", *RUNTIME,
    ]  # fmt: skip
    assert worker.mpi is not None and worker.mpi.tasks_per_node == 1
    config = yaml.safe_load(worker.files["trtllm/aggregated.yaml"])
    assert config == {"tensor_parallel_size": 1, "max_batch_size": 64}


def test_trtllm_prefill_and_decode_plan_behind_dynamo_with_a_cache_transceiver(
    tmp_path: Path,
) -> None:
    role = "      tensor_parallel_size: 8\n"
    roles = f"    prefill:\n{role}    decode:\n{role}"
    plan = plan_text(tmp_path, dynamo_recipe("trtllm", roles, resources=PD))
    assert_dynamo_fronts_them(plan)
    assert not [r for r in plan.roles if r.name == "router"]  # no trtllm-serve disaggregated
    for name, mode in (("prefill-0", "prefill"), ("decode-0", "decode")):
        worker = plan.role(name)
        assert worker.argv[:4] == ["trtllm-llmapi-launch", "python3", "-m", "dynamo.trtllm"]
        assert worker.mpi is not None and worker.mpi.tasks_per_node == 8
        assert worker.argv[worker.argv.index("--disaggregation-mode") + 1] == mode
        assert worker.argv[worker.argv.index("--extra-engine-args") + 1] == (
            f"${{run.dir}}/trtllm/{mode}.yaml"
        )
        config = yaml.safe_load(worker.files[f"trtllm/{mode}.yaml"])
        assert config["cache_transceiver_config"] == {"backend": "DEFAULT"}


def test_trtllm_over_nodes_stays_one_mpi_step_of_launched_ranks(tmp_path: Path) -> None:
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    roles = "    aggregated:\n      tensor_parallel_size: 8\n"
    plan = plan_text(tmp_path, dynamo_recipe("trtllm", roles, resources=resources))
    worker = plan.role("aggregated-0")
    assert worker.argv[:4] == ["trtllm-llmapi-launch", "python3", "-m", "dynamo.trtllm"]
    assert worker.mpi is not None and worker.mpi.tasks_per_node == 4


def test_trtllm_serve_command_words_are_said_to_be_ignored(tmp_path: Path) -> None:
    roles = "    aggregated:\n      tensor_parallel_size: 1\n"
    text = dynamo_recipe("trtllm", roles, resources=ONE).replace(
        "  type: trtllm\n", "  type: trtllm\n  aggregated_extra_args: ['--log_level', 'info']\n"
    )
    plan = plan_text(tmp_path, text)
    [note] = [i for i in plan.ignored if i["field"] == "backend.aggregated_extra_args"]
    assert "dynamo.trtllm" in note["why"]
    assert "--log_level" not in plan.role("aggregated-0").argv


def test_dynamo_installed_once_per_job_wraps_dynamo_vllm_workers(tmp_path: Path) -> None:
    roles = "    aggregated:\n      max-model-len: 4096\n"
    text = dynamo_recipe("vllm", roles, resources=ONE).replace(
        "dynamo: {install: false}", "dynamo: {version: 1.6.1}"
    )
    worker = plan_text(tmp_path, text).role("aggregated-0")
    assert worker.argv[:2] == ["bash", "-c"] and "ai-dynamo==1.6.1" in worker.argv[2]
    assert worker.argv[4:7] == ["python3", "-m", "dynamo.vllm"]


def test_simulated_vllm_and_trtllm_under_dynamo_run_the_mocker_in_their_modes(
    tmp_path: Path,
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    for engine, role in (("vllm", "      max-model-len: 4096\n"), ("trtllm", "      x: 1\n")):
        roles = f"    prefill:\n{role}    decode:\n{role}"
        text = dynamo_recipe(engine, roles, resources=PD).replace(
            "path: hf:org/model", f"path: {model}"
        )
        text = text.replace(f"  type: {engine}\n", f"  type: {engine}\n  engine: sim\n")
        plan = plan_text(tmp_path, text)
        assert plan.frontend == "dynamo" and plan.simulator == "dynamo.mocker", engine
        prefill, decode = plan.role("prefill-0"), plan.role("decode-0")
        assert prefill.argv[1:3] == decode.argv[1:3] == ["-m", "dynamo.mocker"]
        assert "prefill" in prefill.argv and "decode" in decode.argv
        assert plan.stages == [["prefill-0", "decode-0"], ["frontend"]]  # file discovery
