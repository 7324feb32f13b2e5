"""TRT-LLM workers: `trtllm-serve` with the role's YAML config, and its disaggregated router."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.launch.bindings import build_bindings, write_role_files
from disagg.launch.executor import Task
from disagg.launch.local import LocalLauncher
from disagg.launch.srun import srun_argv

from .engine_support import plan_text, recipe

ONE_NODE = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n"
PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n"
    "  decode_nodes: 0\n  decode_workers: 1\n  gpus_per_prefill: 4\n  gpus_per_decode: 4\n"
)
ROLE = (
    "      tensor_parallel_size: 4\n      moe_expert_parallel_size: 4\n"
    "      enable_attention_dp: true\n      max_batch_size: 32\n      max_num_tokens: 4096\n"
    "      kv_cache_config: {free_gpu_memory_fraction: 0.8}\n"
)


def test_aggregated_worker_reads_its_role_map_as_yaml_from_the_run_directory(
    tmp_path: Path,
) -> None:
    roles = "    aggregated:\n" + ROLE.replace("4\n", "8\n", 2)
    plan = plan_text(tmp_path, recipe("trtllm", roles, resources=ONE_NODE))
    assert (plan.engine, plan.backend) == ("trtllm", "trtllm")
    worker = plan.role("aggregated-0")
    # srt-slurm v1.0.68's trtllm-serve worker (TRTLLMProtocol.build_worker_command): every
    # rank under trtllm-llmapi-launch, the sizes as written in its spellings, `--config`,
    # and no served-name flag (v1 has none)
    assert worker.argv == [
        "trtllm-llmapi-launch", "trtllm-serve", "${model.path}",
        "--host", "${self.bind_host}", "--port", "${self.http_port}",
        "--tensor_parallel_size", "8", "--moe_expert_parallel_size", "8",
        "--config", "${run.dir}/trtllm/aggregated.yaml",
    ]  # fmt: skip
    assert worker.mpi is not None and worker.mpi.tasks_per_node == 8  # a rank per GPU, one node
    config = yaml.safe_load(worker.files["trtllm/aggregated.yaml"])
    assert config == {
        "tensor_parallel_size": 8,
        "moe_expert_parallel_size": 8,
        "enable_attention_dp": True,
        "max_batch_size": 32,
        "max_num_tokens": 4096,
        "kv_cache_config": {"free_gpu_memory_fraction": 0.8},
    }
    assert worker.parallel is not None
    assert (worker.parallel.tp, worker.parallel.dp, worker.parallel.gpus) == (8, 8, 8)


def test_prefill_decode_behind_trtllm_serve_disaggregated(tmp_path: Path) -> None:
    roles = (
        f"    prefill:\n{ROLE}    decode:\n{ROLE}      cache_transceiver_config: {{backend: UCX}}\n"
    )
    text = recipe("trtllm", roles, resources=PD, frontend="trtllm_serve")
    plan = plan_text(tmp_path, text)
    prefill = yaml.safe_load(plan.role("prefill-0").files["trtllm/prefill.yaml"])
    assert prefill["cache_transceiver_config"] == {"backend": "DEFAULT"}  # TRT-LLM needs one
    decode = yaml.safe_load(plan.role("decode-0").files["trtllm/decode.yaml"])
    assert decode["cache_transceiver_config"] == {"backend": "UCX"}
    router = plan.role("router")
    assert router.argv == [
        "trtllm-serve", "disaggregated", "--config", "${run.dir}/trtllm/disagg.yaml",
    ]  # fmt: skip
    # The server list is bound when the orchestrator writes it into the run directory.
    ports = {r.name: {f"{p}_port": 40000 + 10 * i + j for j, p in enumerate(r.ports)}
             for i, r in enumerate(plan.roles)}  # fmt: skip
    bindings = build_bindings(
        plan, addresses=["10.0.0.1"], ports=ports, model_path="/m", draft_path="", run_dir=tmp_path
    )
    [path] = write_role_files(plan, router, bindings, tmp_path)
    written = yaml.safe_load(path.read_text())
    assert written["context_servers"] == {"num_instances": 1, "urls": ["10.0.0.1:40000"]}
    assert written["generation_servers"] == {"num_instances": 1, "urls": ["10.0.0.1:40010"]}
    assert (written["hostname"], written["port"]) == ("10.0.0.1", ports["router"]["http_port"])


def test_prefill_decode_behind_another_frontend_is_refused(tmp_path: Path) -> None:
    roles = f"    prefill:\n{ROLE}    decode:\n{ROLE}"
    text = recipe("trtllm", roles, resources=PD, frontend="smg")
    with pytest.raises(UnsupportedRecipe, match="TRT-LLM prefill workers behind frontend smg"):
        plan_text(tmp_path, text)


def test_a_worker_over_nodes_is_one_mpi_step_of_a_rank_per_gpu(tmp_path: Path) -> None:
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    roles = "    aggregated:\n      tensor_parallel_size: 8\n"
    plan = plan_text(tmp_path, recipe("trtllm", roles, resources=resources))
    worker = plan.role("aggregated-0")
    assert worker.argv[:2] == ["trtllm-llmapi-launch", "trtllm-serve"]
    assert worker.mpi is not None and worker.mpi.tasks_per_node == 4
    assert worker.launch_ranks == [0]
    argv = srun_argv(
        job_id="7",
        node="n1",
        name="disagg.aggregated-0.0",
        argv=["trtllm-llmapi-launch", "trtllm-serve"],
        env={},
        slurm=plan.slurm,
        mpi=worker.mpi,
        mpi_nodes=["n1", "n2"],
    )
    assert argv[3:8] == [
        "--nodes=2", "--ntasks=8", "--ntasks-per-node=4", "--nodelist=n1,n2", "--mpi=pmix",
    ]  # fmt: skip
    with pytest.raises(DisaggError, match="local executor"):
        LocalLauncher().launch(
            Task(
                role="aggregated-0",
                node_rank=0,
                argv=["true"],
                env={},
                log_path=tmp_path / "log",
                mpi=worker.mpi,
                mpi_nodes=[0, 1],
            )
        )


def test_simulated_trtllm_worker_counts_attention_dp_ranks_inside_tp(tmp_path: Path) -> None:
    from disagg.engines.sim.args import parse_args

    spec_map = "      speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 3}\n"
    roles = f"    prefill:\n{ROLE}    decode:\n{ROLE}{spec_map}"
    text = recipe("trtllm", roles, resources=PD, backend="  engine: sim\n")
    plan = plan_text(tmp_path, text)  # any frontend: the simulator speaks the router's protocol
    decode = plan.role("decode-0")
    args = parse_args(["1" if "${" in a else a for a in decode.argv[4:]])
    assert (args.tp_size, args.dp_size, args.ep_size, args.gpus) == (4, 4, 4, 4)
    # max_batch_size 32 bounds each of the 4 attention-DP ranks (tests/predict/test_batch_limits)
    assert args.enable_dp_attention and args.running_limit == 4 * 32
    assert args.speculative_algorithm == "MTP" and args.speculative_num_steps == 3
    assert decode.speculative == "MTP"


@pytest.mark.parametrize(
    ("sizes", "expected"), [([1, 2, 64, 8], 64), ([[1, 2, 4, 8]], None), ([], None)]
)
def test_cuda_graph_sizes_bound_the_simulated_batch_only_when_whole(
    sizes: list[object], expected: int | None
) -> None:
    """A nested or empty `batch_sizes` list (a typo) is no limit, not a traceback."""
    from disagg.engines.trtllm import ADAPTER

    reading = ADAPTER.sim_reading({"cuda_graph_config": {"batch_sizes": sizes}})
    assert reading.cuda_graph_max_bs == expected


def test_a_draft_model_repo_is_staged_and_bound_in_the_yaml(tmp_path: Path) -> None:
    spec_map = (
        "      speculative_config: {decoding_type: Eagle, max_draft_len: 3,"
        " speculative_model_dir: org/eagle}\n"
    )
    plan = plan_text(tmp_path, recipe("trtllm", "    aggregated:\n" + spec_map, resources=ONE_NODE))
    assert [m.repo_id for m in plan.staging.models if m.purpose == "draft"] == ["org/eagle"]
    config = yaml.safe_load(plan.role("aggregated-0").files["trtllm/aggregated.yaml"])
    assert config["speculative_config"]["speculative_model_dir"] == "${model.draft}"


def test_engine_wide_knobs_are_carried_out_or_said_to_be_ignored(tmp_path: Path) -> None:
    backend = (
        "  served_model_name: my/name\n"
        "  aggregated_extra_args: [--tool_parser, glm47]\n"
        "  numa_cpu_bind: true\n"
    )
    roles = "    aggregated:\n      tensor_parallel_size: 8\n"
    plan = plan_text(tmp_path, recipe("trtllm", roles, resources=ONE_NODE, backend=backend))
    argv = plan.role("aggregated-0").argv
    assert argv[argv.index("--served_model_name") + 1] == "my/name" == plan.bench.model_name
    assert argv[-2:] == ["--tool_parser", "glm47"]
    [numa] = [i for i in plan.ignored if i["field"] == "backend.numa_cpu_bind"]
    assert numa["action"] == "ignored" and "taskset" in numa["why"]


def test_plan_output_says_which_config_files_the_run_directory_gets(tmp_path: Path) -> None:
    from recipes.recipe_helpers import invoke

    path = tmp_path / "recipe.yaml"
    path.write_text(recipe("trtllm", "    aggregated:\n" + ROLE, resources=ONE_NODE))
    code, out, _ = invoke("plan", str(path))
    flat = "".join(ch for ch in out if ch.isalnum() or ch in "/._")
    assert code == 0 and "writesRUN_DIR/trtllm/aggregated.yaml" in flat


def test_config_text_follows_the_config_it_is_given_each_time() -> None:
    """Config texts are kept per process by content: a config changed after it was
    written, or one that only differs in a value's type or key order, gets its own text."""
    from disagg.engines.trtllm import yaml_text

    config = {"tensor_parallel_size": 8, "kv_cache_config": {"dtype": "fp8"}}
    first = yaml_text(config)
    config["kv_cache_config"]["dtype"] = "auto"
    assert yaml.safe_load(yaml_text(config)) == config and yaml_text(config) != first
    assert yaml.safe_load(yaml_text({"a": 1})) == {"a": 1}
    assert yaml.safe_load(yaml_text({"a": "1"})) == {"a": "1"}
    assert list(yaml.safe_load(yaml_text({"b": 1, "a": 2}))) == ["b", "a"]
