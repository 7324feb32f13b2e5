"""A recipe's `profiling:` on the workers, as srt-slurm v1.0.68 renders it.

srtctl (`cli/mixins/worker_stage.py`, `core/schema.py`: `ProfilingConfig`) sets the
profiling variables on every worker (`get_env_vars`), starts nsys workers under
`nsys profile ... -o /logs/profiles/<mode>/...` (`get_nsys_prefix`) and gives vLLM its
`--profiler-config`. The nsys prefix goes inside disagg's own wrappers (the Dynamo
install's and the setup script's `bash -c`), which exec their arguments. A simulated
worker runs on no GPU: nothing of this applies to it.

What srtctl refuses (`SrtConfig._validate_profiling`) is refused here first, so that a job
does not fail after it queued; a field only srt-slurm 2.x has is refused by name unless it
holds what v1.0.68 does, never dropped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from disagg.engines.worker import WorkerRole
from disagg.errors import Fail, Refuse
from disagg.plan.model import WORKER_KINDS, RolePlan
from disagg.plan.role_images import ROLE_KEYS
from disagg.recipe.job_sections import ProfilingPhase, ProfilingSection
from disagg.recipe.schema import RecipeConfig

PROFILES = "profiles"  # under the run directory
MODES = ROLE_KEYS  # a worker kind's profiling mode: prefill, decode, agg
NSYS_BIN_VAR = "SRTCTL_NSYS_BIN"
COMPAT_TORCH_DIR = "torch-profiler-dir"
# disagg's own wrappers in front of an engine's program (`bash -c SCRIPT NAME ARGV...`,
# which exec ARGV): the Dynamo install's and the setup script's.
WRAPPER_NAMES = ("dynamo-install", "setup-script")


def enabled(section: ProfilingSection | None) -> bool:
    return section is not None and section.type != "none"


def phase(section: ProfilingSection, mode: str) -> ProfilingPhase | None:
    """The phase settings of a worker mode (`_get_phase_config`)."""
    return {"prefill": section.prefill, "decode": section.decode, "agg": section.aggregated}.get(
        mode
    )


def profiles_dir(mode: str, run_dir: str = "${run.dir}") -> str:
    return f"{run_dir}/{PROFILES}/{mode}"


def worker_env(section: ProfilingSection, mode: str) -> dict[str, str]:
    """The variables srtctl's `get_env_vars(mode, <log dir>/profiles)` gives a worker."""
    env = {"PROFILING_MODE": mode, "PROFILE_TYPE": section.type}
    steps = phase(section, mode)
    if steps is not None:
        key = mode.upper()
        if steps.start_step is not None:
            env[f"PROFILE_{key}_START_STEP"] = str(steps.start_step)
        if steps.stop_step is not None:
            env[f"PROFILE_{key}_STOP_STEP"] = str(steps.stop_step)
    if section.type == "torch":
        env["SGLANG_TORCH_PROFILER_DIR"] = profiles_dir(mode)
    if section.type == "nsys-time":
        env["PROFILE_BENCHMARK_DURATION_SECS"] = str(section.benchmark_duration_secs)
    elif (
        section.type == "nsys"
        and steps is not None
        and None not in (steps.start_step, steps.stop_step)
    ):
        env["TLLM_PROFILE_START_STOP"] = f"{steps.start_step}-{steps.stop_step}"
        env["TLLM_LLMAPI_ENABLE_NVTX"] = "1"
    return env


def nsys_prefix(
    section: ProfilingSection, output: str, *, frontend: str, backend: str
) -> list[str]:
    """`nsys profile ... -o OUTPUT` for a worker (`get_nsys_prefix`); [] unless nsys."""
    if section.type not in ("nsys", "nsys-time"):
        return []
    timed = section.type == "nsys-time"
    window: list[str] = []
    if timed and section.delay_secs is not None:
        window += ["--delay", str(section.delay_secs)]
    if timed and section.duration_secs is not None:
        window += ["--duration", str(section.duration_secs)]
    trigger = window if timed else ["-c", "cudaProfilerApi", "--capture-range-end", "stop"]
    overwrite = ["--force-overwrite", "true"]
    extra = list(section.extra_nsys_args or [])
    head = [os.environ.get(NSYS_BIN_VAR) or "nsys", "profile"]
    if backend == "trtllm":
        flags = ["-t", "cuda,nvtx,ucx", "--sample=none", "--cuda-graph-trace=node", *trigger]
        tail = ["--kill", "none", "--wait", "all", *overwrite]
        return [*head, *flags, *extra, *tail, "-o", output]
    # the others overwrite before a time window, after a capture range
    flags = ["-t", "cuda,nvtx", "--cuda-graph-trace=node"]
    flags += [*overwrite, *window] if timed else [*trigger, *overwrite]
    fork = ["--trace-fork-before-exec=true"] if frontend == "dynamo" else []
    return [*head, *flags, *extra, *fork, "-o", output]


def nsys_output(role: RolePlan, mode: str) -> str:
    """Where a worker's nsys report goes (without its extension): per node and GPUs, or
    per MPI rank, which nsys fills in itself (`%q{SLURM_PROCID}`)."""
    stem = f"{profiles_dir(mode)}/${{self.node}}_{mode}_w{role.index}_profile"
    if role.mpi is not None:
        return f"{stem}_rank%q{{SLURM_PROCID}}"
    return f"{stem}_gpu{'-'.join(str(gpu) for gpu in role.gpu_ids)}"


def vllm_profiler_config(section: ProfilingSection, mode: str) -> str | None:
    """vLLM's `--profiler-config` for nsys with both steps of the mode's phase, else None."""
    steps = phase(section, mode)
    if section.type != "nsys" or steps is None:
        return None
    start, stop = steps.start_step, steps.stop_step
    if start is None or stop is None:
        return None
    config = {"profiler": "cuda", "delay_iterations": start, "max_iterations": max(stop - start, 0)}
    return json.dumps(config)


def program_start(argv: list[str]) -> int:
    """The index of the engine's program in `argv`: past disagg's own wrappers."""
    at = 0
    while argv[at : at + 2] == ["bash", "-c"] and len(argv) > at + 3:
        if argv[at + 3] not in WRAPPER_NAMES:
            break
        at += 4
    return at


def profiled_argv(argv: list[str], prefix: list[str], extra: list[str]) -> list[str]:
    """`argv` with `prefix` before the engine's program and `extra` flags after it all."""
    if not argv:
        return argv
    at = program_start(argv)
    return [*argv[:at], *prefix, *argv[at:], *extra]


def with_profiling(
    roles: list[RolePlan], section: ProfilingSection | None, *, frontend: str, backend: str
) -> list[RolePlan]:
    """Every real worker of `roles` profiled as the recipe asks, the variables over its own
    environment (as srtctl sets them last), the nsys prefix before its program on every node."""
    if section is None or not enabled(section):
        return roles

    def profiled(role: RolePlan) -> RolePlan:
        mode = MODES[role.kind]
        prefix = nsys_prefix(section, nsys_output(role, mode), frontend=frontend, backend=backend)
        config = vllm_profiler_config(section, mode) if backend == "vllm" else None
        extra = ["--profiler-config", config] if config is not None else []
        update: dict[str, object] = {"env": {**role.env, **worker_env(section, mode)}}
        if prefix or extra:
            update["argv"] = profiled_argv(role.argv, prefix, extra)
            update["node_argv"] = [profiled_argv(a, prefix, extra) for a in role.node_argv]
        return role.model_copy(update=update)

    return [profiled(role) if role.kind in WORKER_KINDS else role for role in roles]


def dirs(section: ProfilingSection | None, roles: list[RolePlan]) -> list[str]:
    """`profiles/<mode>` of each worker mode, made before the workers start."""
    if not enabled(section):
        return []
    modes = dict.fromkeys(MODES[role.kind] for role in roles if role.kind in WORKER_KINDS)
    return [f"{PROFILES}/{mode}" for mode in modes]


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
    `role_args(role)`: a worker role's engine settings as written (vLLM's check)."""
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
