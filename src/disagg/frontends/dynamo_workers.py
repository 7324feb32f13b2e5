"""vLLM and TRT-LLM workers under Dynamo (`python3 -m dynamo.vllm` / `dynamo.trtllm`), as
srt-slurm renders them for ai-dynamo 1.6.1: `dynamo.vllm` takes the engine adapter's flags
without `--host`/`--port` (no HTTP API); `dynamo.trtllm` reads the role's YAML.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.engines.base import CONFIG_DUMP
from disagg.engines.worker import WorkerSpec
from disagg.frontends.base import FrontendContext, ignored
from disagg.plan.model import RolePlan

MODULES: dict[str, str] = {"vllm": "dynamo.vllm", "trtllm": "dynamo.trtllm"}
# `backend.*` knobs of `vllm serve` / `trtllm-serve` that have no meaning under Dynamo.
_SERVE_ONLY: dict[str, dict[str, str]] = {
    "vllm": {"vllm_serve_binary": "dynamo.vllm runs vLLM's engine in-process, not `vllm serve`"},
    "trtllm": {
        f"{role}_extra_args": "trtllm-serve's command-line words; dynamo.trtllm reads the "
        "role's YAML (trtllm_config) instead"
        for role in ("prefill", "decode", "aggregated")
    },
}


def worker_argvs(ctx: FrontendContext, role: RolePlan, runtime: list[str]) -> list[list[str]]:
    """The worker `role` under Dynamo's worker module, one argv per node; `runtime` is the
    discovery/request-plane flags it shares with the frontend."""
    inputs = ctx.worker_inputs.get(role.name)
    if inputs is None:
        raise ctx.fail(
            f"no engine settings were planned for worker {role.name}",
            ("backend", "type"),
            "plan the workers through the engine adapter before the frontend",
        )
    args, spec = inputs
    mode = ["--disaggregation-mode", spec.mode] if spec.mode is not None else []
    if ctx.engine == "vllm":
        return _vllm_nodes(args, spec, [*mode, *runtime])
    return [_trtllm_argv(role, spec, [*mode, *runtime])]


def serve_only_notes(ctx: FrontendContext) -> list[dict[str, str]]:
    """What the recipe sets that only the engine's own server reads: `backend.*` knobs and a
    role's `host`."""
    backend = ctx.config.backend
    notes = []
    for field, why in _SERVE_ONLY.get(ctx.engine, {}).items():
        if getattr(backend, field, None):
            notes.append(ignored(f"backend.{field}", why))
    if ctx.engine == "vllm":
        from disagg.engines import vllm as vllm_engine  # engines load on first use

        written = {spec.role for args, spec in ctx.worker_inputs.values() if "host" in args}
        adapter = vllm_engine.ADAPTER
        for role in sorted(written):
            path = ".".join((*adapter.args_path(role), "host"))
            why = "a Dynamo worker serves no HTTP API; Dynamo binds the node's own address"
            notes.append(ignored(path, why))
    return notes


def _vllm_nodes(args: Mapping[str, Any], spec: WorkerSpec, dynamo: list[str]) -> list[list[str]]:
    from disagg.engines import vllm as vllm_engine

    adapter = vllm_engine.ADAPTER
    head = ["python3", "-m", MODULES["vllm"], "--model", "${model.path}"]
    head += adapter.engine_flags(args, spec)
    return [[*head, *node, *dynamo, *CONFIG_DUMP] for node in adapter.node_flags(args, spec)]


def _trtllm_argv(role: RolePlan, spec: WorkerSpec, dynamo: list[str]) -> list[str]:
    from disagg.engines import trtllm as trtllm_engine

    config = "${run.dir}/" + trtllm_engine.config_file(spec.role)
    # `--model-path`, as srtctl spells it: Dynamo 1.x takes it as `--model`'s old name, and
    # the images the recipes pin (`dynamo.install: false`) may predate `--model`
    argv = ["python3", "-m", MODULES["trtllm"], "--model-path", "${model.path}"]
    argv += ["--served-model-name", spec.served_name, "--extra-engine-args", config, *dynamo]
    # each MPI rank under the engine's launch prefix (numactl where srt-slurm binds memory)
    return [*trtllm_engine.launch_prefix(spec), *argv] if role.mpi is not None else argv
