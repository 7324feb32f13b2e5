"""`profiling:` settings srtctl v1.0.68 refuses (`SrtConfig._validate_profiling`), refused
here first, so that a job does not fail after it queued; a field only srt-slurm 2.x has
is refused by name unless it holds what v1.0.68 does, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from disagg.engines.worker import WorkerRole
from disagg.errors import Fail, Refuse
from disagg.recipe.job_sections import ProfilingPhase, ProfilingSection
from disagg.recipe.schema import RecipeConfig

# 2.x field -> the value that renders what v1.0.68 renders
_NEW_FIELDS: dict[str, Any] = {
    "nsys_trace": "cuda,nvtx",
    "trace_fork_before_exec": None,
    "capture_range_end": "stop",
    "nsys_library_paths": None,
}
_NEW_PHASE_FIELDS: dict[str, Any] = {"capture_scope": "all", "worker_index": 0, "worker_rank": 0}
PHASES: tuple[WorkerRole, ...] = ("prefill", "decode", "aggregated")


def check(
    config: RecipeConfig,
    role_args: Callable[[WorkerRole], Mapping[str, Any]],
    *,
    fail: Fail,
    refuse: Refuse,
) -> None:
    """Raise what srtctl raises for this variant's `profiling:`; refuse a 2.x-only field.

    `role_args(role)`: the engine's settings of a worker role as written (vLLM's check).
    """
    section = config.profiling
    if section is None or section.type == "none":
        return
    _new_fields(section, refuse)
    backend = config.backend.type
    if section.type == "torch" and backend == "trtllm":
        raise fail(
            "torch profiling is not supported for the trtllm backend (srtctl refuses it)",
            ("profiling", "type"),
            "use `type: nsys`",
        )
    if section.type == "nsys-time":
        if section.delay_secs is None or section.duration_secs is None:
            raise fail(
                "profiling.delay_secs and profiling.duration_secs are required for nsys-time",
                ("profiling",),
                "set both: nsys waits delay_secs after the worker starts, then captures "
                "duration_secs",
            )
        return
    _phases(config, section, fail)
    if section.type == "nsys" and backend == "vllm":
        for role in PHASES:
            bad = [
                k for k in role_args(role) if str(k).replace("_", "-").startswith("profiler-config")
            ]
            if bad:
                raise fail(
                    f"vllm_config.{role} sets {', '.join(bad)}, but with nsys "
                    "profiling `--profiler-config` comes from the profiling phases",
                    ("backend", "vllm_config", role, bad[0]),
                    "remove it; set the steps under `profiling:`",
                )


def _phases(config: RecipeConfig, section: ProfilingSection, fail: Fail) -> None:
    resources = config.resources
    has = {name: getattr(section, name) is not None for name in PHASES}
    if resources.disaggregated:
        if has["aggregated"]:
            raise fail(
                "a disaggregated job takes profiling.prefill and profiling.decode, "
                "not profiling.aggregated",
                ("profiling", "aggregated"),
                None,
            )
        if not (has["prefill"] and has["decode"]):
            raise fail(
                "a disaggregated job needs both profiling.prefill and profiling.decode "
                "when profiling is on",
                ("profiling",),
                "give each its start_step and stop_step",
            )
        if (resources.prefill_workers or 0) <= 0 or (resources.decode_workers or 0) <= 0:
            raise fail(
                "profiling a disaggregated job needs prefill_workers and decode_workers > 0",
                ("resources",),
                None,
            )
        return
    if has["prefill"] or has["decode"]:
        name = "prefill" if has["prefill"] else "decode"
        raise fail(
            f"an aggregated job takes profiling.aggregated only, not profiling.{name}",
            ("profiling", name),
            None,
        )
    if not has["aggregated"]:
        raise fail(
            "an aggregated job needs profiling.aggregated when profiling is on",
            ("profiling",),
            "give it start_step and stop_step",
        )
    if (resources.agg_workers or 0) <= 0:
        raise fail("profiling an aggregated job needs agg_workers > 0", ("resources",), None)


def _new_fields(section: ProfilingSection, refuse: Refuse) -> None:
    for name, same in _NEW_FIELDS.items():
        if name in section.model_fields_set and getattr(section, name) != same:
            raise refuse(
                f"profiling.{name} (srt-slurm 2.x; v1.0.68 has no such field)", ("profiling", name)
            )
    for phase_name in PHASES:
        phase: ProfilingPhase | None = getattr(section, phase_name)
        if phase is None:
            continue
        for name, same in _NEW_PHASE_FIELDS.items():
            if name in phase.model_fields_set and getattr(phase, name) != same:
                raise refuse(
                    f"profiling.{phase_name}.{name} (srt-slurm 2.x; v1.0.68 profiles every "
                    "worker of the phase)",
                    ("profiling", phase_name, name),
                )
