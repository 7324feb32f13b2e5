"""NVIDIA Dynamo (`ai-dynamo` 1.6.1): `python -m dynamo.frontend` in front of Dynamo workers.

Workers run each engine under Dynamo's worker module, as srt-slurm renders them:
`dynamo.sglang` with SGLang's flags, `dynamo.vllm` with the vLLM adapter's flags but no
`--host`/`--port` (a Dynamo worker has no HTTP API), `dynamo.trtllm` reading the role's
YAML; or `dynamo.mocker` in a simulated plan and for `backend.type: mocker`. The frontend
discovers the workers and routes prefill -> decode itself, so it is given no worker URL.
Observed with 1.6.1: Dynamo advertises the interface address unless the `DYN_*_HOST`
variables name the node's own; a worker's `/health` on `DYN_SYSTEM_PORT` lists
`"generate":"ready"` once up; the frontend's `/v1/models` lists the model once a decode (or
aggregated) worker registered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from disagg.engines import mocker as mocker_engine
from disagg.engines.base import CONFIG_DUMP, CONFIG_DUMP_ROW, render_args
from disagg.engines.worker import WorkerSpec
from disagg.errors import DisaggError
from disagg.frontends import dynamo_install
from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles, ignored, written_args
from disagg.frontends.discovery import DiscoveryPlane, discovery_plane
from disagg.frontends.topology import fronted, frontend_topology
from disagg.plan.job_plan import env_text
from disagg.plan.launcher_env import SYSTEM_PORT
from disagg.plan.model import HealthPlan, RoleKind, RolePlan

FRONTEND_MODULE = "dynamo.frontend"
MOCKER_MODULE = "dynamo.mocker"
FRONTEND_HEALTH_DEADLINE_S = 120.0
MOCKER_HEALTH_DEADLINE_S = 60.0
# SGLang's flags pass through unchanged; vLLM's and TRT-LLM's commands are rebuilt.
WORKER_MODULES = {"sglang": "dynamo.sglang", "vllm": "dynamo.vllm", "trtllm": "dynamo.trtllm"}
# `backend.*` knobs of `vllm serve` / `trtllm-serve` that have no meaning under Dynamo.
_SERVE_ONLY: dict[str, dict[str, str]] = {
    "vllm": {"vllm_serve_binary": "dynamo.vllm runs vLLM's engine in-process, not `vllm serve`"},
    "trtllm": {
        f"{role}_extra_args": "trtllm-serve's command-line words; dynamo.trtllm reads the "
        "role's YAML (trtllm_config) instead"
        for role in ("prefill", "decode", "aggregated")
    },
}

# Flags this adapter sets on the frontend; `frontend.args` may not override them.
_MANAGED = frozenset({"http-host", "http-port", "discovery-backend", "request-plane"})
_OWN_HOST = (
    "DYN_TCP_RPC_HOST",
    "DYN_TCP_RESPONSE_STREAM_HOST",
    "DYN_EVENT_PLANE_HOST",
    "DYN_SYSTEM_HOST",
)
GENERATE_READY = '"generate":"ready"'
# srtctl sets it on every Dynamo frontend and worker (srtctl/frontends/dynamo.py).
SKIP_SGLANG_LOG_FORMATTING = {"DYN_SKIP_SGLANG_LOG_FORMATTING": "1"}


class DynamoFrontend(Frontend):
    """Dynamo's frontend over Dynamo workers, with etcd/NATS or file discovery."""

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        mocked = ctx.simulated or ctx.engine == "mocker"
        # A simulated plan stages nothing: its mocker needs a tokenizer directory already
        # there. The mocker engine's model is staged like any engine's.
        if ctx.simulated and not ctx.model_dir:
            return _stand_in(
                ctx, "its mocker needs model.path to be a local model directory with a tokenizer"
            )
        if not mocked and ctx.engine not in WORKER_MODULES:
            return _stand_in(ctx, f"Dynamo's {ctx.engine} worker command is not built here")
        discovery = discovery_plane(ctx, mocked)
        services = discovery.services
        # every Dynamo process: where discovery is, and its own address to advertise
        env = {**dict.fromkeys(_OWN_HOST, "${self.bind_host}"), **discovery.env}
        flags = discovery.worker_flags
        python = "${run.python}" if mocked else "python3"
        if ctx.simulated:
            workers = [_mocker(ctx, role, env, flags) for role in ctx.workers]
        elif mocked:  # `backend.type: mocker`, run from this environment's ai-dynamo
            workers = [
                _discovered(role, env, [*role.argv, *flags], container_image=None)
                for role in ctx.workers
            ]
        else:
            workers = [_worker(ctx, role, env, flags) for role in ctx.workers]
        topology = frontend_topology(ctx)
        count = len(topology.frontends)
        frontends = [
            _frontend(
                ctx, "frontend" if count == 1 else f"frontend-{i}", env, python, discovery, rank
            )
            for i, rank in enumerate(topology.frontends)
        ]
        notes = [*discovery.notes, *_ignored(ctx, mocked)]
        # compat rows: a real mocker's environment, or the job's Dynamo install
        differs = [] if ctx.simulated else ["mocker-environment"]
        if not mocked:
            notes += _serve_only_notes(ctx)
            try:
                wanted = dynamo_install.install_of(ctx.config.dynamo)
            except DisaggError as exc:
                raise ctx.fail(exc.message, ("dynamo",), exc.hint) from None
            differs = []
            if wanted is not None:  # once per job: the first Dynamo role installs
                commands = wanted.commands()
                workers = [_installed(role, commands) for role in workers]
                frontends = [_installed(role, commands) for role in frontends]
                named = ctx.config.dynamo.version or wanted.kind != "pypi"
                differs = ["dynamo-install"] if named else ["dynamo-install", "dynamo-default"]
            # dynamo.vllm dumps its config too (dynamo.sglang's row is its adapter's)
            differs += [CONFIG_DUMP_ROW] if ctx.engine == "vllm" else []
            # Dynamo, etcd and NATS come with the job's image (`model.container`, also when
            # a role names its own, as srtctl runs them); a mocker runs from this environment.
            if ctx.image is not None:
                image = {"container_image": ctx.image}
                services = [
                    role if role.container_image else role.model_copy(update=image)
                    for role in services
                ]
                frontends = [role.model_copy(update=image) for role in frontends]
        stages = [stage for stage in (services, workers, frontends) if stage]
        stages, serving = fronted(ctx, stages, frontends, topology)
        return FrontendRoles(
            frontend="dynamo",
            stages=stages,
            serving_role=serving,
            prompt_format="token_ids",  # Dynamo's frontend takes both; ids count exactly
            simulator="dynamo.mocker" if ctx.simulated else None,
            tokenizer="${model.path}",
            ignored=notes,
            honoured=discovery.honoured,
            differs=differs,
        )


def _mocker(
    ctx: FrontendContext, role: RolePlan, env: dict[str, str], flags: list[str]
) -> RolePlan:
    """A simulated worker: `dynamo.mocker` in the role's mode, with the model's tokenizer."""
    argv = ["${run.python}", "-m", MOCKER_MODULE, "--model-path", "${model.path}"]
    argv += ["--model-name", ctx.served_name, *flags]
    ports = [SYSTEM_PORT]
    if role.kind is RoleKind.PREFILL:
        argv += ["--disaggregation-mode", "prefill", "--bootstrap-ports", "${self.bootstrap_port}"]
        ports.append("bootstrap")
    elif role.kind is RoleKind.DECODE:
        argv += ["--disaggregation-mode", "decode"]
    backend = ctx.config.backend_settings(exclude_none=True)
    argv += mocker_engine.render(mocker_engine.settings(backend, {}, srt_slurm_defaults=False))
    return _discovered(role, env, argv, MOCKER_HEALTH_DEADLINE_S, ports=ports, container_image=None)


def _worker(
    ctx: FrontendContext, role: RolePlan, env: dict[str, str], flags: list[str]
) -> RolePlan:
    """A real worker: the engine adapter's command under Dynamo's worker module (one argv
    per node); `flags` are the discovery/request-plane flags it shares with the frontend."""
    if ctx.engine in ("vllm", "trtllm"):  # their commands, rebuilt
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
            nodes = _vllm_nodes(args, spec, [*mode, *flags])
        else:  # trtllm
            nodes = [_trtllm_argv(role, spec, [*mode, *flags])]
        return _discovered(role, env, nodes[0], node_argv=nodes if len(nodes) > 1 else [])
    module = WORKER_MODULES[ctx.engine]
    argv = list(role.argv)
    at = argv.index("-m") + 1 if "-m" in argv else None
    if at is None or at >= len(argv):
        raise ctx.fail(
            f"cannot run the {ctx.engine} worker command under {module}",
            ("backend", "type"),
            "the engine's command is not `python -m <module> ...`",
        )
    argv[at] = module
    # The same planes the frontend is told (dynamo.sglang takes Dynamo's runtime flags
    # beside SGLang's own): a NATS request plane or file discovery must reach it too.
    return _discovered(role, env, [*argv, *flags])


def _vllm_nodes(args: Mapping[str, Any], spec: WorkerSpec, dynamo: list[str]) -> list[list[str]]:
    from disagg.engines import vllm as vllm_engine

    adapter = vllm_engine.ADAPTER
    head = ["python3", "-m", WORKER_MODULES["vllm"], "--model", "${model.path}"]
    head += adapter.engine_flags(args, spec)
    return [[*head, *node, *dynamo, *CONFIG_DUMP] for node in adapter.node_flags(args, spec)]


def _trtllm_argv(role: RolePlan, spec: WorkerSpec, dynamo: list[str]) -> list[str]:
    from disagg.engines import trtllm as trtllm_engine

    config = "${run.dir}/" + trtllm_engine.config_file(spec.role)
    # `--model-path`, as srtctl spells it: Dynamo 1.x takes it as `--model`'s old name, and
    # the images the recipes pin (`dynamo.install: false`) may predate `--model`
    argv = ["python3", "-m", WORKER_MODULES["trtllm"], "--model-path", "${model.path}"]
    argv += ["--served-model-name", spec.served_name, "--extra-engine-args", config, *dynamo]
    # each MPI rank under the engine's launch prefix (numactl where srt-slurm binds memory)
    return [*trtllm_engine.launch_prefix(spec), *argv] if role.mpi is not None else argv


def _discovered(
    role: RolePlan,
    env: dict[str, str],
    argv: list[str],
    deadline_s: float | None = None,
    **update: Any,
) -> RolePlan:
    """`role` running `argv` as a Dynamo worker: its Dynamo environment, and up once
    Dynamo's system port lists its `generate` endpoint as ready (by the engine adapter's
    deadline unless `deadline_s` says)."""
    ports = role.ports if SYSTEM_PORT in role.ports else [*role.ports, SYSTEM_PORT]
    health = HealthPlan(
        path="/health",
        port=SYSTEM_PORT,
        expect=GENERATE_READY,
        any_status=True,
        deadline_s=(role.health or HealthPlan()).deadline_s if deadline_s is None else deadline_s,
    )
    env = {**role.env, **env, "DYN_SYSTEM_PORT": "${self.system_port}"}
    return role.model_copy(
        update={"argv": argv, "env": env, "health": health, "ports": ports, **update}
    )


def _frontend(
    ctx: FrontendContext,
    name: str,
    env: dict[str, str],
    python: str,
    discovery: DiscoveryPlane,
    rank: int,
) -> RolePlan:
    """One `dynamo.frontend`, with srtctl's environment for it: the planes, then the recipe's
    `environment` (prefix-block hashes must match the workers': `PYTHONHASHSEED`), then
    `frontend.env`."""
    argv = [python, "-m", FRONTEND_MODULE, "--http-host", "${self.bind_host}"]
    argv += ["--http-port", "${self.http_port}", *discovery.discovery_flags]
    hint = "disagg picks the frontend's address, port, discovery and request plane"
    argv += render_args(written_args(ctx, _MANAGED, hint))
    recipe_env = {key: env_text(value) for key, value in ctx.config.environment.items()}
    extra_env = {key: str(value) for key, value in (ctx.frontend.env or {}).items()}
    # the request plane as srtctl tells the frontend, which reads it for `--request-plane`
    plane = {"DYN_REQUEST_PLANE": discovery.request_plane}
    env = {**env, **plane, **SKIP_SGLANG_LOG_FORMATTING, **recipe_env}
    return RolePlan(
        name=name,
        kind=RoleKind.ROUTER,
        node_ranks=[rank],
        ports=["http"],
        argv=argv,
        env={**env, **extra_env},
        health=HealthPlan(
            path="/v1/models",
            deadline_s=FRONTEND_HEALTH_DEADLINE_S,
            expect=json.dumps(ctx.served_name),
        ),
    )


def _ignored(ctx: FrontendContext, mocked: bool) -> list[dict[str, str]]:
    dynamo = ctx.config.dynamo
    pinned = dynamo.version or dynamo.hash or dynamo.wheel or dynamo.source or dynamo.top_of_tree
    runs = "simulated runs use" if ctx.simulated else "the mocker and its frontend use"
    ours = f"{runs} this environment's ai-dynamo {dynamo_install.DEFAULT_VERSION}"
    notes = []
    if mocked and pinned:  # the pinned ai-dynamo of disagg's own environment runs
        notes.append(ignored("dynamo.source", ours))
    if mocked and not ctx.simulated and ctx.config.model.container:
        notes.append(ignored("model.container", f"{ours}, not the image's"))
    return notes


def _installed(role: RolePlan, wanted: str) -> RolePlan:
    argv = dynamo_install.installing(role.argv, wanted)
    node_argv = [dynamo_install.installing(a, wanted) for a in role.node_argv]
    env = {**role.env, **dynamo_install.env()}
    return role.model_copy(update={"argv": argv, "node_argv": node_argv, "env": env})


def _serve_only_notes(ctx: FrontendContext) -> list[dict[str, str]]:
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


def _stand_in(ctx: FrontendContext, reason: str) -> FrontendRoles:
    """Workers Dynamo cannot front here: refused where the recipe names Dynamo (a part it
    names is never replaced), else smg fronts them and the plan says why."""
    from disagg.frontends.smg import ADAPTER as smg

    section = ctx.config.frontend
    if section is not None and "type" in section.model_fields_set:
        if ctx.simulated and not ctx.model_dir:
            raise ctx.fail(
                f"frontend.type dynamo: {reason}; {ctx.config.model.path} is not one here",
                ("model", "path"),
                _create_hint(str(ctx.config.model.path)),
            )
        raise ctx.fail(
            f"frontend.type dynamo: {reason}",
            ("frontend", "type"),
            "name another frontend (sglang-router fronts any engine's workers)",
        )

    planned = smg.plan(ctx)
    args = " and frontend.args" if ctx.frontend.args else ""
    why = f"dynamo{args}: {reason}; {planned.frontend} fronts the workers instead"
    planned.ignored = [ignored("frontend.type", why), *planned.ignored]
    return planned


def _create_hint(path: str) -> str:
    """How to make the missing tokenizer directory (the tests' tiny model will do)."""
    if path.startswith(("/", ".", "~")):
        command = f".venv/bin/python tests/tiny_model.py {path}"
        return f"create it (a tiny model with a tokenizer): `{command}`"
    return (
        "point model.path at a local model directory with a tokenizer (a tiny one: "
        "`.venv/bin/python tests/tiny_model.py /tmp/tiny-llama`)"
    )


ADAPTER = DynamoFrontend()
