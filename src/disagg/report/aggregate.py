"""Find run directories and load their valid points; everything else is skipped with a reason.

A run directory holds `plan.json` and `results/*.json` (one file per point); a path
given may also be a parent of runs at any depth. Every point read goes through the
load generator's own gate (`disagg.bench.results.judged`), whatever `valid` it claims,
so a hand-edited or older file cannot slip through.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from disagg.bench.identity import SETUP_FIELDS, setup_fields
from disagg.bench.results import judged, read_result
from disagg.errors import DisaggError
from disagg.plan.model import PLAN_FILE, Plan
from disagg.probe import probe, shortened
from disagg.redact import redact
from disagg.report.model import ResultPoint, RunResults, SkippedResult

RESULTS_DIR = "results"
DEFAULT_MAX_FAILURE_RATIO = 0.01
_MAX_SEARCH_DEPTH = 6
_CONC_IN_NAME = re.compile(r"_conc(\d+)(?:_|\.json$)")


def is_run_dir(path: Path) -> bool:
    return (path / PLAN_FILE).is_file() or (path / RESULTS_DIR).is_dir()


def find_run_dirs(paths: Iterable[Path]) -> list[Path]:
    """Each path as a run directory, or the run directories below it (sorted, no duplicates)."""
    found: dict[Path, Path] = {}  # resolved -> as given, the first of each
    hint = "pass a run directory (it holds plan.json and results/) or a parent of runs"
    for path in paths:
        if not probe(path).exists:
            raise DisaggError(f"{shortened(path)}: no such directory", hint=hint)
        if not path.is_dir():
            raise DisaggError(f"{path}: not a directory", hint=hint)
        runs = [path] if is_run_dir(path) else list(_runs_below(path, _MAX_SEARCH_DEPTH))
        if not runs:
            raise DisaggError(
                f"{path}: no run directory found (no plan.json or results/ at any depth)",
                hint="`disagg run` writes a run directory; pass it or the directory holding runs",
            )
        for run in runs:
            found.setdefault(run.resolve(), run)
    return list(found.values())


def _runs_below(path: Path, depth: int) -> Iterator[Path]:
    if depth <= 0:
        return
    try:
        children = sorted(c for c in path.iterdir() if c.is_dir() and not c.name.startswith("."))
    except OSError:
        return
    for child in children:
        if is_run_dir(child):
            yield child
        else:
            yield from _runs_below(child, depth - 1)


def load_run(run_dir: Path) -> RunResults:
    """The run's identity from plan.json and its valid points from results/*.json.

    A run without plan.json has no plan; a broken one is a user error.
    """
    plan_file = run_dir / PLAN_FILE
    plan = Plan.read_file(plan_file) if plan_file.is_file() else None
    run = RunResults(
        run_dir=run_dir,
        name=run_dir.resolve().name,
        selector=plan.selector if plan else None,
        simulated=plan.simulated if plan else False,
        config=redact(plan.config) if plan else None,  # reports never show secrets
        setup=setup_fields(plan) if plan else {},
        worker_flags=worker_flags(plan) if plan else {},
    )
    results = run_dir / RESULTS_DIR
    files = sorted(results.glob("*.json")) if results.is_dir() else []
    for path in files:
        outcome = load_point(path, plan)
        if isinstance(outcome, SkippedResult):
            run.skipped.append(outcome)
        else:
            run.points.append(outcome)
            run.simulated = run.simulated or outcome.simulated
    run.points.sort(key=lambda point: point.sort_key)
    if run.points:  # what the results say they ran with (e.g. the router's version) wins
        run.setup |= dict(run.points[0].setup)
    return run


_PLACEMENT_FLAGS = frozenset({"--host", "--port", "--model-path", "--served-model-name"})


def worker_flags(plan: Plan) -> dict[str, str]:
    """One worker's engine flags per kind, without placement and run-time placeholders."""
    flags: dict[str, str] = {}
    for role in plan.roles:
        kind = role.kind.value
        if kind not in ("prefill", "decode", "aggregated") or kind in flags:
            continue
        argv = redact(role.argv_on(0))  # the hover never shows a secret flag value
        start = next((i for i, item in enumerate(argv) if item.startswith("--")), len(argv))
        kept: list[str] = []
        skip_value = False
        for index, item in enumerate(argv[start:], start):
            if skip_value and not item.startswith("--"):
                continue
            skip_value = False
            following = argv[index + 1] if index + 1 < len(argv) else ""
            if item in _PLACEMENT_FLAGS or "${" in item or "${" in following:
                skip_value = item.startswith("--")
                continue
            kept.append(item)
        flags[kind] = " ".join(kept)
    return flags


def load_runs(paths: Iterable[Path]) -> list[RunResults]:
    """Every run under `paths`, each with a unique display label."""
    runs = [load_run(run_dir) for run_dir in find_run_dirs(paths)]
    _assign_labels(runs)
    return runs


def iter_valid_results(run_dir: Path) -> Iterator[ResultPoint]:
    """The valid points of one run, in load order (for `disagg collect` and scripts)."""
    yield from load_run(run_dir).points


def _assign_labels(runs: list[RunResults]) -> None:
    counts = Counter(run.short_variant for run in runs)
    for run in runs:
        variant = run.short_variant
        shared = counts[variant] > 1 and variant != run.name
        run.label = f"{variant} · {run.name}" if shared else variant
    # Distinct run dirs with the same final name (a/x and b/x): add the parent.
    seen = Counter(run.label for run in runs)
    for run in runs:
        if seen[run.label] > 1:
            run.label = f"{run.label} ({run.run_dir.resolve().parent.name})"


def load_point(path: Path, plan: Plan | None) -> ResultPoint | SkippedResult:
    """One result file as a valid point, or the reason it is left out (read by the load
    generator's own reader, so what counts as a result file is defined in one place)."""
    data = read_result(path)
    if data is None:
        return SkippedResult(
            path, "unreadable, or not a point result (invalid JSON, or no `point`/`valid`)"
        )
    reason = judged(data, plan.bench.max_failure_ratio if plan else DEFAULT_MAX_FAILURE_RATIO)
    if reason is not None:
        return SkippedResult(path, f"invalid: {reason}")
    prefill, decode = _gpu_counts(data, plan)
    return ResultPoint(
        path=path,
        run_name=str(data.get("run_name") or path.parent.parent.resolve().name),
        conc=_int(data.get("conc", data.get("max_concurrency"))) or _conc_from_name(path),
        request_rate=_float(data.get("request_rate")),
        isl=_int(data.get("isl")),
        osl=_int(data.get("osl")),
        prefill_gpus=prefill,
        decode_gpus=decode,
        simulated=bool(data.get("simulated", False)) or bool(plan and plan.simulated),
        metrics={
            key: number for key, value in data.items() if (number := _float(value)) is not None
        },
        point_key=data["point"] if isinstance(data.get("point"), str) else None,
        model=str(data["model_id"]) if data.get("model_id") else None,
        setup={name: data[name] for name in SETUP_FIELDS if isinstance(data.get(name), str | int)},
    )


def _gpu_counts(data: Mapping[str, Any], plan: Plan | None) -> tuple[int, int]:
    prefill = _int(data.get("num_prefill_gpu", data.get("prefill_gpus")))
    decode = _int(data.get("num_decode_gpu", data.get("decode_gpus")))
    if prefill is None and plan is not None:
        prefill = plan.prefill_gpus
    if decode is None and plan is not None:
        decode = plan.decode_gpus
    return prefill or 0, decode or 0


def _conc_from_name(path: Path) -> int | None:
    match = _CONC_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    number = _float(value)
    return int(number) if number is not None else None
