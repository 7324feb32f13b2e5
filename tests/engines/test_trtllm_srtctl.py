"""TRT-LLM workers and router as srt-slurm v1.0.68 starts them.

References: `srtctl/backends/trtllm.py` (`TRTLLMProtocol.get_srun_config`,
`build_worker_command`), `srtctl/cli/mixins/worker_stage.py` (`start_endpoint_worker`:
one srun of `ntasks = total GPUs` per worker), `srtctl/frontends/trtllm_serve.py`
(`_build_ser`), and srt-slurm's own tests (`tests/test_configs.py`
`test_trtllm_numa_memory_bind_*`, `tests/test_trtllm_serve_ser.py`), whose concrete
assertions are restated here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from disagg.errors import UnsupportedRecipe
from disagg.launch.bindings import build_bindings, write_role_files
from disagg.launch.srun import srun_argv
from disagg.plan.model import MpiPlan, Plan

from .engine_support import plan_text, recipe, worker_tasks

PD = (
    "  gpus_per_node: 4\n  prefill_nodes: 1\n  prefill_workers: 1\n"
    "  decode_nodes: 2\n  decode_workers: 2\n"
)
ROLES = "    prefill:\n      tensor_parallel_size: 4\n    decode:\n      tensor_parallel_size: 4\n"


def pd_plan(tmp_path: Path, gpu_type: str = "h100", backend: str = "", frontend: str = "") -> Plan:
    text = recipe("trtllm", ROLES, resources=PD, backend=backend, frontend="trtllm_serve")
    text = text.replace("gpu_type: h100", f"gpu_type: {gpu_type}")
    if frontend:
        text = text.replace("frontend: {type: trtllm_serve}\n", frontend)
    return plan_text(tmp_path, text)


@pytest.mark.parametrize(
    ("gpu_type", "backend", "bound"),
    [
        ("h100", "", False),  # default: only gb200/gb300 bind
        ("gb200", "", True),
        ("gb300", "", True),
        ("h100", "  numa_memory_bind: true\n", True),  # forced on
        ("gb300", "  numa_memory_bind: false\n", False),  # forced off
    ],
)
def test_prefill_decode_ranks_run_under_numactl_as_srtctl_decides(
    tmp_path: Path, gpu_type: str, backend: str, bound: bool
) -> None:
    """srt-slurm `test_trtllm_numa_memory_bind_{none_follows_gpu_type_default,
    true_forces_numactl,false_disables_numactl}`: `cmd[:3] == numactl -m 0,1`."""
    plan = pd_plan(tmp_path, gpu_type, backend)
    for name in ("prefill-0", "decode-0", "decode-1"):
        argv = plan.role(name).argv
        if bound:
            assert argv[:4] == ["numactl", "-m", "0,1", "trtllm-llmapi-launch"]
        else:
            assert "numactl" not in argv and argv[0] == "trtllm-llmapi-launch"
    assert not [i for i in plan.ignored if i["field"] == "backend.numa_memory_bind"]


def test_aggregated_workers_are_not_bound_by_default_on_gb200(tmp_path: Path) -> None:
    """The default and `true` bind prefill and decode workers only (v1.0.68)."""
    resources = "  gpus_per_node: 4\n  agg_nodes: 1\n  agg_workers: 1\n"
    roles = "    aggregated:\n      tensor_parallel_size: 4\n"
    for backend in ("", "  numa_memory_bind: true\n"):
        text = recipe("trtllm", roles, resources=resources, backend=backend)
        argv = (
            plan_text(tmp_path, text.replace("gpu_type: h100", "gpu_type: gb200"))
            .role("aggregated-0")
            .argv
        )
        assert argv[0] == "trtllm-llmapi-launch" and "numactl" not in argv


def test_schema2_numa_memory_bind_true_binds_aggregated_workers_too(tmp_path: Path) -> None:
    """srt-slurm 2.x (docs/schema-reference.md, TRTLLMBackend): `numa_memory_bind: true`
    uses nodes 0,1 "for any GPU type or mode"."""
    text = (
        "schema: 2\nname: t\n"
        "model: {path: hf:org/model, container: img, precision: bf16}\n"
        "resources: {gpu_type: h100, gpus_per_node: 4}\n"
        "frontend: {type: trtllm_serve, enable_multiple_frontends: false}\n"
        "engine: {type: trtllm, numa_memory_bind: true}\n"
        "roles:\n  agg: {nodes: 1, workers: 1, gpus: 4, args: {tensor_parallel_size: 4}}\n"
        "benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: '1'}\n"
    )
    argv = plan_text(tmp_path, text).role("aggregated-0").argv
    assert argv[:4] == ["numactl", "-m", "0,1", "trtllm-llmapi-launch"]


def test_numa_memory_bind_local_is_refused_with_what_it_needs(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedRecipe, match="numa_memory_bind local"):
        pd_plan(tmp_path, "gb200", "  numa_memory_bind: local\n")


def test_a_one_node_worker_is_one_mpi_task_per_gpu(tmp_path: Path) -> None:
    """`start_endpoint_worker`: one srun of `nodes x GPUs` tasks for every worker, one node
    included, each task `trtllm-llmapi-launch trtllm-serve ...`."""
    plan = pd_plan(tmp_path)
    for name in ("prefill-0", "decode-0"):
        worker = plan.role(name)
        assert worker.nnodes == 1 and worker.mpi is not None
        assert (worker.mpi.tasks_per_node, worker.mpi.mpi) == (4, "pmix")
        assert worker.launch_ranks == worker.node_ranks
        assert worker.argv[:2] == ["trtllm-llmapi-launch", "trtllm-serve"]


def test_the_workers_mpi_step_keeps_trtllms_own_cpu_affinity(tmp_path: Path) -> None:
    """`TRTLLMProtocol.get_srun_config`: `mpi=pmix, oversubscribe=True,
    cpu_bind="verbose,none"`, rendered by `start_srun_process` as `--oversubscribe` and
    `--cpu-bind=verbose,none`."""
    plan = pd_plan(tmp_path)
    worker = plan.role("decode-0")
    assert worker.mpi is not None
    argv = srun_argv(
        job_id="7",
        node="n2",
        name="disagg.decode-0.1",
        argv=worker.argv,
        env={},
        slurm=plan.slurm,
        mpi=worker.mpi,
        mpi_nodes=["n2"],
    )
    assert "--mpi=pmix" in argv and "--ntasks=4" in argv
    assert "--oversubscribe" in argv and "--cpu-bind=verbose,none" in argv
    router = plan.role("router")  # one rank, no binding options (start_frontends)
    assert router.mpi is not None and router.mpi.srun_options == {}


def test_worker_flags_are_srtctls_spellings(tmp_path: Path) -> None:
    """`build_worker_command`'s trtllm_serve branch: the sizes the role writes under their
    long names, the role's YAML as `--config`, no served-name flag."""
    roles = (
        "    aggregated:\n      tensor_parallel_size: 4\n      moe_expert_parallel_size: 4\n"
        "      pipeline_parallel_size: 1\n"
    )
    resources = "  gpus_per_node: 4\n  agg_nodes: 1\n  agg_workers: 1\n"
    argv = (
        plan_text(tmp_path, recipe("trtllm", roles, resources=resources)).role("aggregated-0").argv
    )
    assert argv[argv.index("--tensor_parallel_size") + 1] == "4"
    assert argv[argv.index("--moe_expert_parallel_size") + 1] == "4"
    assert argv[argv.index("--pipeline_parallel_size") + 1] == "1"
    assert argv[argv.index("--config") + 1] == "${run.dir}/trtllm/aggregated.yaml"
    for old in ("--tp_size", "--ep_size", "--pp_size", "--extra_llm_api_options"):
        assert old not in argv
    assert "--served_model_name" not in argv


def written_router_config(plan: Plan, tmp_path: Path) -> dict[str, object]:
    router = plan.role("router")
    ports = {r.name: {f"{p}_port": 40000 + 10 * i + j for j, p in enumerate(r.ports)}
             for i, r in enumerate(plan.roles)}  # fmt: skip
    bindings = build_bindings(
        plan,
        addresses=["10.0.0.1", "10.0.0.2", "10.0.0.3"],
        ports=ports,
        model_path="/m",
        draft_path="",
        run_dir=tmp_path,
    )
    [path] = write_role_files(plan, router, bindings, tmp_path)
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_router_config_without_routers_is_the_server_lists(tmp_path: Path) -> None:
    """srt-slurm `test_ser_minimal_no_router`."""
    ser = written_router_config(pd_plan(tmp_path), tmp_path)
    assert ser["context_servers"] == {"num_instances": 1, "urls": ["10.0.0.1:40000"]}
    assert ser["generation_servers"] == {
        "num_instances": 2,
        "urls": ["10.0.0.2:40010", "10.0.0.3:40020"],
    }
    assert "backend" not in ser  # srt-slurm's file has no backend key


def test_ctx_router_and_server_config_extra_reach_the_router_config(tmp_path: Path) -> None:
    """srt-slurm `test_ser_conversation_router_and_extra`."""
    frontend = (
        "frontend:\n  type: trtllm_serve\n  ctx_router: {type: conversation}\n"
        "  server_config_extra: {gen_strip_message_history: true, gen_tokids_ctxbytes: true}\n"
    )
    ser = written_router_config(pd_plan(tmp_path, frontend=frontend), tmp_path)
    context = ser["context_servers"]
    generation = ser["generation_servers"]
    assert isinstance(context, dict) and isinstance(generation, dict)
    assert context["router"] == {"type": "conversation"}
    assert "router" not in generation
    assert ser["gen_strip_message_history"] is True and ser["gen_tokids_ctxbytes"] is True


def test_gen_router_reaches_the_generation_servers(tmp_path: Path) -> None:
    """srt-slurm `test_ser_gen_router`."""
    frontend = "frontend:\n  type: trtllm_serve\n  gen_router: {type: default}\n"
    ser = written_router_config(pd_plan(tmp_path, frontend=frontend), tmp_path)
    generation = ser["generation_servers"]
    assert isinstance(generation, dict) and generation["router"] == {"type": "default"}
    assert "router" not in ser["context_servers"]  # type: ignore[operator]


def test_router_command_takes_frontend_args_and_env(tmp_path: Path) -> None:
    """`TRTLLMServeFrontend.start_frontends`: `--config`, then `frontend.args` as
    `--key value` (true: bare, false: left out); `frontend.env` in its environment."""
    frontend = (
        "frontend:\n  type: trtllm_serve\n"
        "  args: {request_timeout: 600, log_level: debug, verbose: true, quiet: false}\n"
        "  env: {TRTLLM_DISAGG_SERVER_DISABLE_GC: '0'}\n"
    )
    router = pd_plan(tmp_path, frontend=frontend).role("router")
    assert router.argv == [
        "trtllm-serve", "disaggregated", "--config", "${run.dir}/trtllm/disagg.yaml",
        "--request_timeout", "600", "--log_level", "debug", "--verbose",
    ]  # fmt: skip
    assert router.env == {"TRTLLM_DISAGG_SERVER_DISABLE_GC": "0"}
    # one MPI rank, as srt-slurm starts it (tensorrt_llm wants an MPI launcher)
    assert router.mpi == MpiPlan(tasks_per_node=1) and router.launch_ranks == [0]


def test_every_worker_has_an_expert_balancer_segment_of_its_own(tmp_path: Path) -> None:
    """`TRTLLMProtocol.get_environment_for_mode`: `TRTLLM_EPLB_SHM_NAME=moe_shared_<uuid>`
    for each worker, over the recipe's own value, so workers sharing a node never share
    the segment."""
    backend = "  decode_environment: {TRTLLM_EPLB_SHM_NAME: mine}\n"
    roles = ROLES.replace(
        "    decode:\n      tensor_parallel_size: 4", "    decode:\n      tensor_parallel_size: 2"
    )
    resources = PD.replace("decode_nodes: 2", "decode_nodes: 1")
    plan = plan_text(
        tmp_path,
        recipe("trtllm", roles, resources=resources, backend=backend, frontend="trtllm_serve"),
    )
    assert plan.role("decode-0").node_ranks == plan.role("decode-1").node_ranks
    names = []
    for _, _, _, env in worker_tasks(plan):
        if "TRTLLM_EPLB_SHM_NAME" in env:
            names.append(env["TRTLLM_EPLB_SHM_NAME"])
    assert len(names) == 3 and len(set(names)) == 3  # two decode workers share a node
    assert all(name.startswith("moe_shared_") and "${" not in name for name in names)
