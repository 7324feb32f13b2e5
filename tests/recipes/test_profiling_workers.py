"""A recipe's `profiling:` on the workers, as srtctl v1.0.68 renders it.

srt-slurm v1.0.68: `cli/mixins/worker_stage.py` (`start_worker`, `start_endpoint_worker`)
makes `<log dir>/profiles/<mode>` and sets `ProfilingConfig.get_env_vars(mode, ...)` over
the mode's and the recipe's environment; `core/schema.py` `get_nsys_prefix` /
`_get_nsys_prefix_trtllm` put `nsys profile ... -o /logs/profiles/<mode>/<node>_<mode>_
w<index>_profile_gpu<ids>` (an MPI step: `_profile_rank%q{SLURM_PROCID}`) before the
engine, with `--trace-fork-before-exec=true` under Dynamo for every engine but TRT-LLM;
`backends/vllm.py` `build_worker_command` adds `--profiler-config` for nsys; and
`SrtConfig._validate_profiling` refuses the settings tested at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.model import Plan, RolePlan
from engines.engine_support import plan_text, recipe, worker_tasks

PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n"
    "  decode_nodes: 1\n  decode_workers: 1\n"
)
AGG = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n"
SGLANG_PD = "    prefill:\n      tp-size: 8\n    decode:\n      tp-size: 8\n"
PD_STEPS = "  prefill: {start_step: 5, stop_step: 15}\n  decode: {start_step: 50, stop_step: 70}\n"
# srtctl's non-TRT-LLM nsys prefix up to its output (`get_nsys_prefix`)
NSYS = [
    "nsys",
    "profile",
    "-t",
    "cuda,nvtx",
    "--cuda-graph-trace=node",
    "-c",
    "cudaProfilerApi",
    "--capture-range-end",
    "stop",
    "--force-overwrite",
    "true",
]


def profiled(kind: str, steps: str = PD_STEPS, extra: str = "") -> str:
    return f"profiling:\n  type: {kind}\n{steps}{extra}"


def sglang(tmp_path: Path, profiling: str, frontend: str = "sglang", more: str = "") -> Plan:
    text = recipe("sglang", SGLANG_PD, resources=PD, frontend=frontend) + profiling + more
    return plan_text(tmp_path, text)


def program_at(argv: list[str]) -> int:
    return argv.index("python3")


def program(role: RolePlan, name: str) -> list[str]:
    """The worker's argv from its engine program `name` on (past every wrapper and prefix)."""
    return role.argv[role.argv.index(name) :]


def test_torch_profiling_gives_each_worker_srtctls_variables(tmp_path: Path) -> None:
    plan = sglang(tmp_path, profiled("torch"))
    prefill, decode = plan.role("prefill-0").env, plan.role("decode-0").env
    assert {k: v for k, v in prefill.items() if "PROFIL" in k} == {
        "PROFILING_MODE": "prefill",
        "PROFILE_TYPE": "torch",
        "PROFILE_PREFILL_START_STEP": "5",
        "PROFILE_PREFILL_STOP_STEP": "15",
        "SGLANG_TORCH_PROFILER_DIR": "${run.dir}/profiles/prefill",
    }
    assert (
        decode["PROFILE_DECODE_START_STEP"] == "50" and "PROFILE_PREFILL_START_STEP" not in decode
    )
    assert "TLLM_PROFILE_START_STOP" not in prefill  # nsys only
    # no nsys for torch: the engine is the worker's program
    assert plan.role("prefill-0").argv[:3] == ["python3", "-m", "sglang.launch_server"]
    # the run directory holds profiles/<mode> before the workers start
    assert plan.profile_dirs == ["profiles/prefill", "profiles/decode"]
    assert "torch-profiler-dir" in [row["id"] for row in plan.differs]
    tasks = {role.name: env for role, _rank, _argv, env in worker_tasks(plan)}
    assert tasks["decode-0"]["SGLANG_TORCH_PROFILER_DIR"] == "/runs/r/profiles/decode"


def test_nsys_under_dynamo_wraps_the_engine_inside_the_dynamo_install(tmp_path: Path) -> None:
    plan = sglang(tmp_path, profiled("nsys"), frontend="dynamo")
    prefill = plan.role("prefill-0")
    # the install runs first and execs its arguments: nsys, then the engine under it
    assert prefill.argv[3] == "dynamo-install"
    assert program(prefill, "nsys") == [
        *NSYS,
        "--trace-fork-before-exec=true",
        "-o",
        "${run.dir}/profiles/prefill/${self.node}_prefill_w0_profile_gpu0-1-2-3-4-5-6-7",
        "python3",
        "-m",
        "dynamo.sglang",
        *program(prefill, "dynamo.sglang")[1:],
    ]
    env = prefill.env
    assert env["TLLM_PROFILE_START_STOP"] == "5-15" and env["TLLM_LLMAPI_ENABLE_NVTX"] == "1"
    # bound per node: the report is named after the node the worker runs on
    argv = {role.name: argv for role, _rank, argv, _env in worker_tasks(plan)}
    assert (
        "/runs/r/profiles/decode/10.0.0.2_decode_w0_profile_gpu0-1-2-3-4-5-6-7" in argv["decode-0"]
    )


def test_nsys_behind_the_router_has_no_fork_tracing(tmp_path: Path) -> None:
    extra = "  extra_nsys_args: ['--sample=cpu', '--stats=false']\n"
    plan = sglang(tmp_path, profiled("nsys", extra=extra))
    argv = plan.role("decode-0").argv
    # extra_nsys_args go before `-o` (get_nsys_prefix), the binary is `nsys` by default
    assert argv[: program_at(argv)] == [
        *NSYS,
        "--sample=cpu",
        "--stats=false",
        "-o",
        "${run.dir}/profiles/decode/${self.node}_decode_w0_profile_gpu0-1-2-3-4-5-6-7",
    ]
    assert argv[program_at(argv) : program_at(argv) + 3] == [
        "python3",
        "-m",
        "sglang.launch_server",
    ]


def test_srtctl_nsys_bin_names_the_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SRTCTL_NSYS_BIN", "/opt/nsight/bin/nsys")
    plan = sglang(tmp_path, profiled("nsys"))
    assert plan.role("prefill-0").argv[:2] == ["/opt/nsight/bin/nsys", "profile"]


def test_nsys_time_uses_the_time_window_and_no_steps(tmp_path: Path) -> None:
    window = "  delay_secs: 120\n  duration_secs: 30\n  benchmark_duration_secs: 600\n"
    plan = sglang(tmp_path, profiled("nsys-time", steps=window), frontend="dynamo")
    prefill = plan.role("prefill-0")
    assert program(prefill, "nsys")[:15] == [
        "nsys",
        "profile",
        "-t",
        "cuda,nvtx",
        "--cuda-graph-trace=node",
        "--force-overwrite",
        "true",
        "--delay",
        "120",
        "--duration",
        "30",
        "--trace-fork-before-exec=true",
        "-o",
        "${run.dir}/profiles/prefill/${self.node}_prefill_w0_profile_gpu0-1-2-3-4-5-6-7",
        "python3",
    ]
    assert prefill.env["PROFILE_BENCHMARK_DURATION_SECS"] == "600"
    assert "TLLM_PROFILE_START_STOP" not in prefill.env


def test_the_setup_script_runs_before_the_install_and_nsys(tmp_path: Path) -> None:
    plan = sglang(tmp_path, profiled("nsys"), frontend="dynamo", more="setup_script: fix.sh\n")
    argv = plan.role("prefill-0").argv
    assert argv[3] == "setup-script" and argv[7] == "dynamo-install" and argv[8] == "nsys"


def test_profiling_variables_win_over_the_recipes_environment(tmp_path: Path) -> None:
    """srtctl sets them after the mode's and the recipe's environment."""
    more = "environment: {PROFILE_TYPE: none, KEEP: me}\n"
    env = sglang(tmp_path, profiled("torch"), more=more).role("prefill-0").env
    assert env["PROFILE_TYPE"] == "torch" and env["KEEP"] == "me"


def test_trtllm_mpi_step_gets_trtllms_flags_and_a_report_per_rank(tmp_path: Path) -> None:
    roles = "    aggregated:\n      tensor_parallel_size: 8\n"
    resources = "  gpus_per_node: 4\n  agg_nodes: 2\n  agg_workers: 1\n"
    steps = "  aggregated: {start_step: 5, stop_step: 15}\n"
    text = recipe("trtllm", roles, resources=resources, frontend="dynamo") + profiled("nsys", steps)
    worker = plan_text(tmp_path, text).role("aggregated-0")
    assert worker.mpi is not None
    # nsys before the launch wrapper; no fork tracing for TRT-LLM (_get_nsys_prefix_trtllm)
    assert program(worker, "nsys") == [
        "nsys",
        "profile",
        "-t",
        "cuda,nvtx,ucx",
        "--sample=none",
        "--cuda-graph-trace=node",
        "-c",
        "cudaProfilerApi",
        "--capture-range-end",
        "stop",
        "--kill",
        "none",
        "--wait",
        "all",
        "--force-overwrite",
        "true",
        "-o",
        "${run.dir}/profiles/agg/${self.node}_agg_w0_profile_rank%q{SLURM_PROCID}",
        "trtllm-llmapi-launch",
        *program(worker, "trtllm-llmapi-launch")[1:],
    ]
    assert worker.env["TLLM_PROFILE_START_STOP"] == "5-15"
    assert worker.env["PROFILING_MODE"] == "agg" and worker.env["PROFILE_AGG_STOP_STEP"] == "15"


def test_vllm_nsys_passes_the_profiler_config(tmp_path: Path) -> None:
    roles = (
        "    prefill:\n      tensor-parallel-size: 8\n    decode:\n      tensor-parallel-size: 8\n"
    )
    text = recipe("vllm", roles, resources=PD, frontend="dynamo") + profiled("nsys")
    plan = plan_text(tmp_path, text)
    decode = plan.role("decode-0").argv
    config = json.loads(decode[decode.index("--profiler-config") + 1])
    assert config == {"profiler": "cuda", "delay_iterations": 50, "max_iterations": 20}
    assert "dynamo.vllm" in program(plan.role("decode-0"), "nsys")


def test_a_simulated_run_profiles_nothing_and_says_so(tmp_path: Path) -> None:
    text = recipe("sglang", SGLANG_PD, resources=PD, frontend="sglang") + profiled("nsys")
    text = text.replace("  type: sglang\n", "  type: sglang\n  engine: sim\n", 1)
    plan = plan_text(tmp_path, text)
    assert plan.simulated
    for name in ("prefill-0", "decode-0"):
        role = plan.role(name)
        assert "nsys" not in role.argv and "PROFILING_MODE" not in role.env
    ignored = {item["field"]: item["why"] for item in plan.ignored}
    assert "simulated workers run no profiler" in ignored["profiling.type"]


@pytest.mark.parametrize(
    ("profiling", "engine", "message"),
    [
        (profiled("torch", "  aggregated: {start_step: 1, stop_step: 2}\n"), "trtllm", "torch"),
        (profiled("nsys-time", "  delay_secs: 10\n"), "sglang", "duration_secs"),
        (profiled("nsys", "  prefill: {start_step: 1, stop_step: 2}\n"), "sglang", "both"),
        (
            profiled("torch", "  aggregated: {start_step: 1, stop_step: 2}\n"),
            "sglang",
            "aggregated",
        ),
    ],
    ids=["torch-trtllm", "nsys-time-window", "one-phase", "agg-phase-disaggregated"],
)
def test_what_srtctl_refuses_is_refused_first(
    tmp_path: Path, profiling: str, engine: str, message: str
) -> None:
    if engine == "trtllm":
        roles, resources = "    aggregated:\n      tensor_parallel_size: 8\n", AGG
        text = recipe("trtllm", roles, resources=resources, frontend="dynamo")
    else:
        text = recipe("sglang", SGLANG_PD, resources=PD, frontend="sglang")
    with pytest.raises(DisaggError, match=message) as caught:
        plan_text(tmp_path, text + profiling)
    assert not isinstance(caught.value, UnsupportedRecipe)
    assert caught.value.location is not None  # at the recipe's field


def test_an_aggregated_job_takes_the_aggregated_phase_only(tmp_path: Path) -> None:
    roles = "    aggregated:\n      tp-size: 8\n"
    text = recipe("sglang", roles, resources=AGG, frontend="sglang")
    with pytest.raises(DisaggError, match=r"profiling\.aggregated only"):
        plan_text(tmp_path, text + profiled("torch"))
    plan = plan_text(
        tmp_path, text + profiled("torch", "  aggregated: {start_step: 1, stop_step: 9}\n")
    )
    assert plan.role("aggregated-0").env["PROFILE_AGG_START_STEP"] == "1"
    assert plan.profile_dirs == ["profiles/agg"]


def test_vllms_own_profiler_config_is_refused_with_nsys(tmp_path: Path) -> None:
    roles = (
        "    prefill:\n      tensor-parallel-size: 8\n      profiler-config: '{}'\n"
        "    decode:\n      tensor-parallel-size: 8\n"
    )
    text = recipe("vllm", roles, resources=PD, frontend="dynamo")
    with pytest.raises(DisaggError, match="profiler-config"):
        plan_text(tmp_path, text + profiled("nsys"))


def test_a_2x_profiling_field_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedRecipe, match=r"profiling\.nsys_library_paths"):
        sglang(tmp_path, profiled("nsys", extra="  nsys_library_paths: [/opt/cuda/lib]\n"))
    steps = "  prefill: {start_step: 5, stop_step: 15, capture_scope: selected}\n"
    steps += "  decode: {start_step: 5, stop_step: 15}\n"
    with pytest.raises(UnsupportedRecipe, match=r"profiling\.prefill\.capture_scope"):
        sglang(tmp_path, profiled("nsys", steps))
    # written with v1.0.68's own behaviour, it plans
    same = sglang(tmp_path, profiled("nsys", extra="  nsys_trace: cuda,nvtx\n"))
    assert same.role("prefill-0").argv[:4] == NSYS[:4]
