"""A recipe's `profiling:` on the benchmark side: the profile start and stop POSTs.

srt-slurm v1.0.68: `cli/mixins/benchmark_stage.py` `_get_benchmark_profiling_env` gives
the benchmark each worker leader's `host:port` (Dynamo: its system port; else its HTTP
port) and the phases' steps; `benchmarks/scripts/lib/profiling.sh` `start_all_profiling`
POSTs `{"output_dir", "start_step", "num_steps", "activities"}` to `/start_profile`
(SGLang's router) or `/engine/start_profile` (Dynamo) on each, prefill first, for nsys
and torch only, and `stop_all_profiling` POSTs `/stop_profile`; sa-bench's `bench.sh`
calls them once around its whole concurrency loop (trace-replay's does too, but not for
TRT-LLM, whose capture its environment drives).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from disagg.engines.sim.testing import Proc, start_worker, wait_ready
from disagg.errors import DisaggError
from disagg.launch.state import RunStatus, RunSummary
from disagg.plan.from_recipe import plans_for
from disagg.plan.model import ProfileTarget, ProfilingPlan
from disagg.workloads.profiling import Profiles
from engines.engine_support import plan_text, recipe

from .workload_support import disagg

RECIPE = Path(__file__).parent / "data" / "sim-profile.yaml"
PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n"
    "  decode_nodes: 1\n  decode_workers: 2\n"
)
SGLANG_PD = "    prefill:\n      tp-size: 8\n    decode:\n      tp-size: 8\n"
STEPS = "  prefill: {start_step: 5, stop_step: 15}\n  decode: {start_step: 20}\n"


def profiled(kind: str, steps: str = STEPS) -> str:
    return f"profiling:\n  type: {kind}\n{steps}"


def _ids(plan: Any) -> list[str]:
    return [row["id"] for row in plan.differs]


def test_behind_the_router_each_leader_gets_its_http_ports_start_profile(tmp_path: Path) -> None:
    plan = plan_text(
        tmp_path, recipe("sglang", SGLANG_PD, resources=PD, frontend="sglang") + profiled("torch")
    )
    posts = plan.bench.profiling
    assert posts is not None and posts.type == "torch" and posts.activities == ["CPU", "GPU"]
    assert [(t.role, t.start_url, t.stop_url) for t in posts.targets] == [
        ("prefill-0", "${prefill-0.url}/start_profile", "${prefill-0.url}/stop_profile"),
        ("decode-0", "${decode-0.url}/start_profile", "${decode-0.url}/stop_profile"),
        ("decode-1", "${decode-1.url}/start_profile", "${decode-1.url}/stop_profile"),
    ]
    # start 5, stop 15: 10 steps; decode's unset stop_step is profiling.sh's default, 50
    assert [(t.start_step, t.num_steps) for t in posts.targets] == [(5, 10), (20, 30), (20, 30)]
    assert [t.output_dir for t in posts.targets][:2] == [
        "${run.dir}/profiles/prefill",
        "${run.dir}/profiles/decode",
    ]
    assert "profiling-failure" in _ids(plan) and "profiling-dynamo-route" not in _ids(plan)


def test_an_empty_step_range_is_refused_at_plan_time(tmp_path: Path) -> None:
    steps = "  prefill: {start_step: 5, stop_step: 15}\n  decode: {start_step: 60}\n"
    text = recipe("sglang", SGLANG_PD, resources=PD, frontend="sglang") + profiled("nsys", steps)
    with pytest.raises(
        Exception, match=r"profiling\.decode: stop_step 50 is not after start_step 60"
    ):
        plan_text(tmp_path, text)


def test_under_dynamo_the_system_ports_engine_route_is_posted(tmp_path: Path) -> None:
    plan = plan_text(
        tmp_path,
        recipe("sglang", SGLANG_PD, resources=PD, frontend="dynamo")
        + profiled(
            "nsys",
            "  prefill: {start_step: 5, stop_step: 15}\n  decode: {start_step: 1, stop_step: 9}\n",
        ),
    )
    posts = plan.bench.profiling
    assert posts is not None and posts.activities == ["CUDA_PROFILER"]
    first = posts.targets[0]
    assert (
        first.start_url == "http://${prefill-0.host}:${prefill-0.system_port}/engine/start_profile"
    )
    assert first.stop_url == "http://${prefill-0.host}:${prefill-0.system_port}/engine/stop_profile"
    assert {"profiling-failure", "profiling-dynamo-route"} <= set(_ids(plan))


@pytest.mark.parametrize(
    ("kind", "steps", "bench", "why"),
    [
        ("nsys-time", "  delay_secs: 5\n  duration_secs: 5\n", "sa-bench", "nsys-time"),
        (
            "torch",
            STEPS,
            "custom",
            "custom",
        ),
    ],
    ids=["nsys-time", "custom-benchmark"],
)
def test_where_srtctls_benchmark_posts_nothing_nothing_is_posted(
    tmp_path: Path, kind: str, steps: str, bench: str, why: str
) -> None:
    text = recipe("sglang", SGLANG_PD, resources=PD, frontend="sglang") + profiled(kind, steps)
    if bench == "custom":
        text = text.replace(
            "benchmark: {type: sa-bench,", "benchmark: {type: custom, command: 'true',"
        )
    plan = plan_text(tmp_path, text)
    assert plan.bench.profiling is None, why
    assert "profiling-failure" not in _ids(plan)
    assert plan.profile_dirs  # the workers are profiled all the same


def test_a_benchmark_command_gets_srtctls_profiling_variables(tmp_path: Path) -> None:
    """`_get_benchmark_profiling_env`, which every srtctl benchmark script gets."""
    text = recipe("sglang", SGLANG_PD, resources=PD, frontend="dynamo") + profiled("torch")
    text = text.replace("benchmark: {type: sa-bench,", "benchmark: {type: custom, command: 'true',")
    plan = plan_text(tmp_path, text)
    env = plan.role("bench").env
    assert {k: v for k, v in env.items() if "PROFIL" in k} == {
        "PROFILE_TYPE": "torch",
        "PROFILE_PREFILL_START_STEP": "5",
        "PROFILE_PREFILL_STOP_STEP": "15",
        "PROFILE_DECODE_START_STEP": "20",
        "SGLANG_TORCH_PROFILER_DIR": "${run.dir}/profiles",
        "PROFILE_PREFILL_IPS": "${prefill-0.host}",
        "PROFILE_PREFILL_ENDPOINTS": "${prefill-0.host}:${prefill-0.system_port}",
        "PROFILE_DECODE_IPS": "${decode-0.host},${decode-1.host}",
        "PROFILE_DECODE_ENDPOINTS": (
            "${decode-0.host}:${decode-0.system_port},${decode-1.host}:${decode-1.system_port}"
        ),
    }


def test_trtllm_workers_get_no_post(tmp_path: Path) -> None:
    roles = "    aggregated:\n      tensor_parallel_size: 8\n"
    resources = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n"
    steps = "  aggregated: {start_step: 5, stop_step: 15}\n"
    text = recipe("trtllm", roles, resources=resources, frontend="dynamo") + profiled("nsys", steps)
    plan = plan_text(tmp_path, text)
    assert plan.bench.profiling is None
    assert "profiling-trtllm" in _ids(plan)
    text = text.replace("benchmark: {type: sa-bench,", "benchmark: {type: custom, command: 'true',")
    env = plan_text(tmp_path, text).role("bench").env
    assert env["PROFILING_BACKEND"] == "trtllm" and env["PROFILE_AGG_STOP_STEP"] == "15"


def test_another_frontend_is_refused_as_srtctls_script_stops_there(tmp_path: Path) -> None:
    roles = "    aggregated:\n      tensor-parallel-size: 8\n"
    resources = "  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n"
    steps = "  aggregated: {start_step: 5, stop_step: 15}\n"
    text = recipe("vllm", roles, resources=resources, frontend="vllm-router") + profiled(
        "torch", steps
    )
    with pytest.raises(DisaggError, match="frontend type vllm-router"):
        plan_text(tmp_path, text)


# -- POSTs against a real simulated worker ---------------------------------------------


@pytest.fixture
def worker(tmp_path: Path) -> Any:
    proc = start_worker("aggregated-0", "aggregated", tmp_path)
    try:
        wait_ready(proc, "/health")
        yield proc
    finally:
        proc.stop()


def _profiles(proc: Proc, start: str = "/start_profile", stop: str = "/stop_profile") -> Profiles:
    target = ProfileTarget(
        role="aggregated-0",
        mode="agg",
        start_url=proc.url + start,
        stop_url=proc.url + stop,
        output_dir="/logs/profiles/agg",
        start_step=100,
        num_steps=5,
    )
    return Profiles(ProfilingPlan(type="torch", activities=["CPU", "GPU"], targets=[target]))


def test_a_start_and_stop_reach_the_worker_and_are_recorded(worker: Proc) -> None:
    profiles = _profiles(worker)
    assert profiles.start() is None
    assert profiles.stop() == []
    assert [(p["url"].rsplit("/", 1)[1], p["status"], p["ok"]) for p in profiles.posts] == [
        ("start_profile", 200, True),
        ("stop_profile", 200, True),
    ]
    assert profiles.posts[0]["body"] == {
        "output_dir": "/logs/profiles/agg",
        "start_step": 100,
        "num_steps": 5,
        "activities": ["CPU", "GPU"],
    }
    assert profiles.start_posts == profiles.posts[:1]


def test_a_refused_start_is_reported_with_the_workers_answer(worker: Proc) -> None:
    assert _profiles(worker).start() is None
    failed = _profiles(worker).start()  # one already runs: SGLang answers 500
    assert failed is not None
    target, why = failed
    assert target.role == "aggregated-0"
    assert "HTTP 500" in why and "already in progress" in why


def test_a_404_at_dynamos_route_is_tried_again_where_dynamo_1x_serves_it(worker: Proc) -> None:
    profiles = _profiles(worker, "/engine/start_profile", "/engine/stop_profile")
    failed = profiles.start()
    # the simulated worker serves neither route: both tries recorded, the start failed
    assert [p["url"].split(worker.url)[1] for p in profiles.posts] == [
        "/engine/start_profile",
        "/engine/control/start_profile",
    ]
    assert failed is not None and "HTTP 404" in failed[1] and profiles.started == []


# -- simulated runs ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_simulated_run_starts_the_profiles_before_its_points_and_stops_them_after(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", RECIPE, "--local", "--out", run_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.COMPLETED
    posts = summary.profile_posts
    assert [(p["url"].rsplit("/", 1)[1], p["body"].get("start_step")) for p in posts] == [
        ("start_profile", 2),
        ("start_profile", 100000),
        ("stop_profile", None),
        ("stop_profile", None),
    ]
    # the prefill profile took its 2 steps and ended itself: SGLang answers its stop with
    # 500; the decode one had not begun, and is stopped
    assert [p["status"] for p in posts[2:]] == [500, 200]
    assert posts[0]["body"]["output_dir"] == str(run_dir / "profiles" / "prefill")
    assert (run_dir / "profiles" / "prefill").is_dir() and (
        run_dir / "profiles" / "decode"
    ).is_dir()
    # every point was measured with both profiles started, and says so
    for point in summary.points:
        assert point.result is not None
        result = json.loads(Path(point.result).read_text())
        assert result["profile_posts"] == posts[:2]
    # the simulated workers were asked, in that order: start before any request
    for name, first in (("prefill-0", 2), ("decode-0", 100000)):
        log = (run_dir / "logs" / f"{name}.log").read_text()
        assert f'"start_step": {first}' in log and "stop_profile: HTTP" in log
        assert log.index("start_profile:") < log.index("stop_profile:")


@pytest.mark.slow
def test_a_start_that_fails_fails_the_run_before_any_point(tmp_path: Path) -> None:
    """The recipe's plan, its decode profile start pointed at a route the worker lacks."""
    (plan,) = plans_for([str(RECIPE)], None)
    assert plan.bench.profiling is not None
    target = plan.bench.profiling.targets[1]
    assert target.role == "decode-0"
    target.start_url = "${decode-0.url}/no_profile_here"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    plan.write(run_dir)
    proc = subprocess.run(
        [sys.executable, "-m", "disagg.job", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    assert summary.failure is not None and summary.failure.role == "decode-0"
    reason = summary.reason or ""
    assert "profiling" in reason and "no_profile_here -> HTTP 404" in reason
    assert summary.points_measured == 0
    # the prefill profile that did start was stopped again
    assert [p["url"].rsplit("/", 1)[1] for p in summary.profile_posts] == [
        "start_profile",
        "no_profile_here",
        "stop_profile",
    ]
