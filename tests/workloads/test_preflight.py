"""`submit`'s pre-flight refuses a plan whose benchmark the job would refuse (a plan.json
re-submitted with `--resume`, or written by another version), before `sbatch`."""

from __future__ import annotations

from pathlib import Path

from disagg.launch.slurm_preflight import check_benchmark
from disagg.plan.model import TracePlan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

DATA = Path(__file__).parent / "data"


def test_a_plan_that_plans_passes_the_benchmark_check() -> None:
    for name in ("sim-custom.yaml", "sim-trace.yaml"):
        for variant in load_variants(DATA / name):
            assert check_benchmark(place(variant)).errors == []


def test_an_unknown_type_or_a_vanished_trace_is_refused(tmp_path: Path) -> None:
    plan = place(load_variants(DATA / "sim-trace.yaml")[0])
    plan.bench.trace = TracePlan(path=str(tmp_path / "gone.jsonl"))
    errors = check_benchmark(plan).errors
    assert len(errors) == 1 and "gone.jsonl" in errors[0] and plan.selector in errors[0]

    plan.bench.type = "lm-eval"
    errors = check_benchmark(plan).errors
    assert errors == [f"{plan.selector}: unsupported: {_reason('lm-eval')}"]


def _reason(kind: str) -> str:
    from disagg.workloads.registry import refusal

    reason = refusal(kind)
    assert reason is not None and reason.startswith(f"benchmark type {kind} (")
    return reason


def test_a_trace_left_to_the_job_is_not_read_before_submitting(tmp_path: Path) -> None:
    """Its host side is on the cluster, not here: the job reads and checks it."""
    plan = place(load_variants(DATA / "sim-trace.yaml")[0])
    gone = str(tmp_path / "cluster" / "gone.jsonl")
    plan.bench.trace = TracePlan(path=gone, written="/traces/gone.jsonl", at_run_time=True)
    assert check_benchmark(plan).errors == []
