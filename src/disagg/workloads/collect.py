"""What a custom benchmark command wrote: point files become results, the rest is listed.

A JSON file with vLLM's point fields (`completed`, `total_output_tokens`,
`output_throughput`, ...) is one point: judged by the sa-bench gate
(`disagg.bench.gate.verdict`) and written to `results/` with disagg's fields added, so
`disagg report` shows it. The original stays; every other file is listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from disagg.atomic import write_json
from disagg.bench.gate import is_number, strict_json_value, verdict
from disagg.bench.identity import setup_fields
from disagg.bench.inferencex import intvty_fields, per_gpu_fields
from disagg.bench.results import (
    PointContext,
    existing_valid_result,
    judged,
    read_object,
    read_result,
    result_stem,
)
from disagg.plan.model import Plan, PointPlan

POINT_FIELDS = ("completed", "total_output_tokens", "output_throughput")  # a vLLM point file
MAX_FILES = 10_000


@dataclass(frozen=True)
class CollectedPoint:
    key: str
    source: Path
    result: Path
    valid: bool
    reason: str | None
    headline: dict[str, float]


@dataclass
class Collected:
    points: list[CollectedPoint] = field(default_factory=list)
    other_files: list[Path] = field(default_factory=list)


def _concurrency(data: dict[str, Any]) -> int | None:
    for key in ("max_concurrency", "conc", "concurrency"):
        value = data.get(key)
        if is_number(value) and value >= 1:
            return int(value)
    return None


def normalise(
    data: dict[str, Any], plan: Plan, source: Path, not_serving: str | None = None
) -> dict[str, Any]:
    """The point as a disagg result: the client's fields first, disagg's added after.

    `not_serving` (a role stopped serving while the command ran) makes it invalid.
    """
    conc = _concurrency(data)
    reason = not_serving or verdict(data, plan.bench.max_failure_ratio)
    result: dict[str, Any] = strict_json_value(data)
    defaults = {"conc": conc, "isl": plan.bench.isl or None, "osl": plan.bench.osl or None}
    defaults |= per_gpu_fields(result, plan.prefill_gpus, plan.decode_gpus, plan.disaggregated)
    defaults |= setup_fields(plan) | intvty_fields(result)
    for key, value in defaults.items():
        if result.get(key) is None:
            result[key] = value
    result.update(
        {
            "run_name": plan.name,
            "point": f"conc{conc}" if conc else "concinf",
            "valid": reason is None,
            "invalid_reason": reason,
            "simulated": plan.simulated or bool(result.get("simulated", False)),
            "benchmark_type": plan.bench.type,
            "client_result_file": str(source),
        }
    )
    return result


def _stem(plan: Plan, conc: int | None) -> str:
    ctx = PointContext(
        run_name=plan.name,
        point=PointPlan(concurrency=conc, num_prompts=1),
        prefill_gpus=plan.prefill_gpus,
        decode_gpus=plan.decode_gpus,
        disaggregated=plan.disaggregated,
        simulated=plan.simulated,
    )
    return result_stem(ctx)


def collect(
    results_dir: Path, plan: Plan, out_dir: Path, *, not_serving: str | None = None
) -> Collected:
    """Turn every point file under `results_dir` into a result in `out_dir`; with
    `not_serving` (why a role did not serve throughout) every one of them is invalid."""
    found = Collected()
    if not results_dir.is_dir():
        return found
    files = sorted(p for p in results_dir.rglob("*") if p.is_file() and not p.is_symlink())
    taken: set[str] = set()
    for path in files[:MAX_FILES]:
        data = read_object(path, "point file") if path.suffix == ".json" else None
        if data is None or not all(k in data for k in POINT_FIELDS):
            found.other_files.append(path)
            continue
        result = normalise(data, plan, path, not_serving)
        stem = _stem(plan, _concurrency(data))
        name, copy = stem, 1
        while name in taken:  # several files for one concurrency: keep them all
            copy += 1
            name = f"{stem}_{copy}"
        taken.add(name)
        target = out_dir / f"{name}.json"
        write_json(target, result)
        from disagg.bench.runner import headline

        found.points.append(
            CollectedPoint(
                key=str(result["point"]),
                source=path,
                result=target,
                valid=bool(result["valid"]),
                reason=result["invalid_reason"],
                headline=headline(result),
            )
        )
    found.other_files += files[MAX_FILES:]
    return found


def valid_results(run_dir: Path, plan: Plan) -> list[tuple[str, Path]]:
    """(point key, result file) of every valid point of a run, for `disagg collect`.

    In-process benchmarks: the newest valid result of each planned point. A command
    benchmark plans no points: every valid result its run wrote to `results/`.
    """
    results = run_dir / "results"
    if plan.bench.command is None:
        found = [(p.key, existing_valid_result(results, p)) for p in plan.bench.points]
        candidates = [(key, path) for key, path in found if path is not None]
    else:
        candidates = []
        for path in sorted(results.glob("*.json")) if results.is_dir() else []:
            data = read_result(path)
            if data is not None and data.get("valid") is True:
                candidates.append((str(data["point"]), path))
    listed: list[tuple[str, Path]] = []
    for key, path in candidates:  # whatever a file claims, the gate judges it again
        data = read_result(path)
        if data is not None and judged(data, plan.bench.max_failure_ratio) is None:
            listed.append((key, path))
    return listed
