"""Run directories built the way a real run leaves them: plan.json plus per-point result files.

Imported by the tests of this folder (a uniquely named module, so it cannot clash with
other areas' helpers); `conftest.py` exposes the `make_run` fixture.

Numbers follow a plausible serving curve (TPOT and TTFT grow with concurrency,
throughput saturates) so the charts and frontier have the shapes real runs have.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from disagg.plan.model import (
    BenchPlan,
    Plan,
    PointPlan,
    RoleKind,
    RolePlan,
    SlurmPlan,
    StagingPlan,
)

CONCS = (1, 4, 16, 64, 256)
# The series names of make_run's default setup (and of a tensor-parallel-only decode).
LEGEND = "DeepSeek-R1 · H200 · sglang · 1P TP8 / 1D TP8·DPA · FP8"
TP8_LEGEND = "DeepSeek-R1 · H200 · sglang · 1P TP8 / 1D TP8 · FP8"
TP8_DECODE = ("--tp-size", "8")
SIM_LEGEND = "DeepSeek-R1 · H200 · sglang (sim engine) · 1P TP8 / 1D TP8·DPA · FP8"
# Invalid points get numbers no valid point has, so a test can search outputs for them.
INVALID_SPEED = 0.0371


def make_plan(
    *,
    selector: str = "recipes/h200/dsr1-1k1k.yaml:override_dep8",
    prefill_gpus: int = 8,
    decode_gpus: int = 8,
    simulated: bool = False,
    isl: int = 1024,
    osl: int = 1024,
    concs: tuple[int, ...] = CONCS,
    model: str = "deepseek-ai/DeepSeek-R1",
    gpu_type: str = "h200",
    framework: str = "sglang",
    precision: str = "fp8",
    decode_args: tuple[str, ...] = ("--tp-size", "8", "--enable-dp-attention"),
) -> Plan:
    file, _, variant = selector.partition(":")
    return Plan(
        name="dsr1-1k1k",
        selector=selector,
        recipe_file=file,
        variant=variant or "base",
        engine="sim" if simulated else "sglang",
        simulated=simulated,
        nodes=(prefill_gpus + decode_gpus) // 8 or 1,
        gpus_per_node=8,
        prefill_gpus=prefill_gpus,
        decode_gpus=decode_gpus,
        disaggregated=True,
        roles=[
            RolePlan(
                name="prefill-0",
                kind=RoleKind.PREFILL,
                node_ranks=[0],
                gpus_per_node=8,
                argv=["python3", "-m", f"{framework}.launch_server", "--tp-size", "8"],
            ),
            RolePlan(
                name="decode-0",
                kind=RoleKind.DECODE,
                node_ranks=[1],
                gpus_per_node=8,
                argv=["python3", "-m", f"{framework}.launch_server", *decode_args],
            ),
            RolePlan(name="router", kind=RoleKind.ROUTER, node_ranks=[0]),
            RolePlan(name="bench", kind=RoleKind.BENCH, node_ranks=[0]),
        ],
        bench=BenchPlan(
            model_name=model,
            isl=isl,
            osl=osl,
            points=[PointPlan(concurrency=c, num_prompts=c * 10) for c in concs],
        ),
        staging=StagingPlan(skip=simulated),
        slurm=SlurmPlan(job_name="dsr1", nodes=2, gpus_per_node=8),
        config={
            "name": "dsr1-1k1k",
            "model": {"path": model, "container": "none", "precision": precision},
            "resources": {"gpu_type": gpu_type},
            "backend": {
                "type": framework,
                "sglang_config": {
                    "prefill": {"tensor-parallel-size": 8, "mem-fraction-static": 0.85},
                    "decode": {"tensor-parallel-size": 8, "enable-dp-attention": True},
                },
            },
            "benchmark": {"isl": isl, "osl": osl, "concurrencies": list(concs)},
        },
    )


def make_result(
    *,
    conc: int,
    prefill_gpus: int = 8,
    decode_gpus: int = 8,
    isl: int = 1024,
    osl: int = 1024,
    speed: float = 1.0,
    run_name: str = "run",
    simulated: bool = False,
    valid: bool = True,
    invalid_reason: str | None = None,
    failed: int = 0,
    model: str = "deepseek-ai/DeepSeek-R1",
) -> dict[str, Any]:
    """A result with vLLM benchmark names plus the InferenceX and disagg fields."""
    tpot = (9.0 + 0.11 * conc) / speed
    ttft = (70.0 + 3.5 * conc) / speed
    e2el = ttft + tpot * (osl - 1)
    completed = conc * 10
    duration = completed / conc * e2el / 1000.0
    output_tput = completed * osl / duration
    input_tput = completed * isl / duration
    total_gpus = prefill_gpus + decode_gpus
    result: dict[str, Any] = {
        "date": "20250101-120000",
        "backend": "openai",
        "model_id": model,
        "num_prompts": completed + failed,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": conc,
        "duration": duration,
        "completed": completed,
        "failed": failed,
        "total_input_tokens": completed * isl,
        "total_output_tokens": completed * osl,
        "request_throughput": completed / duration,
        "output_throughput": output_tput,
        "total_token_throughput": output_tput + input_tput,
        "conc": conc,
        "isl": isl,
        "osl": osl,
        "num_prefill_gpu": prefill_gpus,
        "num_decode_gpu": decode_gpus,
        "tput_per_gpu": (output_tput + input_tput) / total_gpus,
        "output_tput_per_gpu": output_tput / decode_gpus,
        "input_tput_per_gpu": input_tput / prefill_gpus,
        "result_version": 1,
        "point": f"conc{conc}",
        "valid": valid,
        "invalid_reason": invalid_reason,
        "simulated": simulated,
        "run_name": run_name,
    }
    for metric, median in (("ttft", ttft), ("tpot", tpot), ("itl", tpot), ("e2el", e2el)):
        result[f"mean_{metric}_ms"] = median * 1.02
        result[f"median_{metric}_ms"] = median
        result[f"std_{metric}_ms"] = median * 0.1
        result[f"p90_{metric}_ms"] = median * 1.3
        result[f"p95_{metric}_ms"] = median * 1.45
        result[f"p99_{metric}_ms"] = median * 1.8
    for stat in ("mean", "median", "p90", "p99"):
        result[f"{stat}_intvty"] = 1000.0 / result[f"{stat}_tpot_ms"]
    return result


def result_name(run_name: str, conc: int, prefill_gpus: int, decode_gpus: int) -> str:
    total = prefill_gpus + decode_gpus
    return f"{run_name}_conc{conc}_gpus_{total}_ctx_{prefill_gpus}_gen_{decode_gpus}.json"


RunFactory = Callable[..., Path]


@pytest.fixture
def make_run(tmp_path: Path) -> RunFactory:
    """Write a run directory; `invalid` concurrencies get a point the load generator rejected."""

    def factory(
        name: str,
        *,
        parent: Path | None = None,
        selector: str = "recipes/h200/dsr1-1k1k.yaml:override_dep8",
        prefill_gpus: int = 8,
        decode_gpus: int = 8,
        simulated: bool = False,
        speed: float = 1.0,
        concs: tuple[int, ...] = CONCS,
        invalid: tuple[int, ...] = (),
        with_plan: bool = True,
        isl: int = 1024,
        osl: int = 1024,
        **setup: Any,
    ) -> Path:
        """`setup`: make_plan's model, gpu_type, framework, precision, decode_args."""
        run_dir = (parent or tmp_path) / name
        (run_dir / "results").mkdir(parents=True)
        if with_plan:
            make_plan(
                selector=selector,
                prefill_gpus=prefill_gpus,
                decode_gpus=decode_gpus,
                simulated=simulated,
                concs=concs,
                isl=isl,
                osl=osl,
                **setup,
            ).write(run_dir)
        for conc in concs:
            bad = conc in invalid
            result = make_result(
                conc=conc,
                prefill_gpus=prefill_gpus,
                decode_gpus=decode_gpus,
                speed=INVALID_SPEED if bad else speed,
                run_name=name,
                simulated=simulated,
                valid=not bad,
                invalid_reason="37 of 100 requests failed (limit 1%)" if bad else None,
                failed=37 if bad else 0,
                isl=isl,
                osl=osl,
                model=setup.get("model", "deepseek-ai/DeepSeek-R1"),
            )
            path = run_dir / "results" / result_name(name, conc, prefill_gpus, decode_gpus)
            path.write_text(json.dumps(result, indent=2))
        return run_dir

    return factory
