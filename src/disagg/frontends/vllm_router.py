"""srt-slurm's `vllm-router` frontend: the vLLM Router (`vllm-router` 0.1.17) in front of
`vllm serve` workers, with the argv srtctl's `VLLMRouterFrontend` gives it.

Observed: its Prometheus exporter defaults to 127.0.0.1:29000, so each router gets a
`metrics` port of its own; in PD mode it hands the KV over with vLLM's
`kv_transfer_params`, which the simulated engine does not speak.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles, written_args
from disagg.frontends.topology import routed
from disagg.plan.model import HealthPlan, RoleKind, RolePlan

TYPES = ("vllm-router",)
PROGRAM = "vllm-router"
HOST = "${self.bind_host}"
PORTS: tuple[str, ...] = ("http", "metrics")
HEALTH_PATH = "/readiness"  # answers only once every worker is healthy
HEALTH_DEADLINE_S = 120.0
# srtctl's HealthCheckConfig defaults: the router waits as long as the workers may take.
DEFAULT_STARTUP_TIMEOUT_S = 180 * 10
INTRA_DP = "intra-node-data-parallel-size"
STARTUP_TIMEOUT = "worker-startup-timeout-secs"
# Rendered from the plan; a recipe's `frontend.args` may not set them.
MANAGED = frozenset(
    {
        "host",
        "port",
        "worker-urls",
        "vllm-pd-disaggregation",
        "prefill",
        "decode",
        "prometheus-port",
        "prometheus-host",
    }
)


def _flag(key: object) -> str:
    return str(key).replace("_", "-")


def render_args(args: Mapping[str, Any]) -> list[str]:
    """`frontend.args` as srtctl's static routers render them: `--key` as written, `true`
    alone, `false`/`null` omitted, a list as the flag repeated once per item."""
    argv: list[str] = []
    for key, value in args.items():
        flag = f"--{key}"
        if value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


def node_local_dp(role: RolePlan) -> int:
    """Data-parallel ranks the router reaches behind the worker's one URL (srtctl's
    `routed_process_dp_size`): a one-node worker's DP x (TP x PP) replicas, else 1."""
    par = role.parallel
    if par is None or par.dp <= 1 or role.nnodes > 1:
        return 1
    replica = par.tp * par.pp
    if replica > role.gpus_per_node or role.gpus_per_node % replica:
        return 1
    return role.gpus_per_node // replica


class VllmRouterFrontend(Frontend):
    """The vLLM Router over vLLM workers: PD mode, or regular mode when aggregated."""

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        self._check(ctx)
        extra = written_args(ctx, MANAGED)
        written = {_flag(key) for key in extra}
        prefill, decode = ctx.names(RoleKind.PREFILL), ctx.names(RoleKind.DECODE)
        argv = [PROGRAM]
        if prefill:  # `_check` refused prefill without decode and the reverse
            argv.append("--vllm-pd-disaggregation")
            for role in ctx.workers:
                if role.kind is RoleKind.PREFILL:
                    argv += ["--prefill", f"${{{role.name}.url}}", *_side_channel(role)]
            for name in decode:
                argv += ["--decode", f"${{{name}.url}}"]
        else:
            aggregated = ctx.names(RoleKind.AGGREGATED)
            argv += ["--worker-urls", *(f"${{{name}.url}}" for name in aggregated)]
        argv += ["--host", HOST, "--port", "${self.http_port}"]
        intra_dp = self._intra_dp(ctx, extra)
        if intra_dp > 1 and INTRA_DP not in written:
            argv += [f"--{INTRA_DP}", str(intra_dp)]
        if STARTUP_TIMEOUT not in written:
            check = ctx.config.health_check
            timeout = DEFAULT_STARTUP_TIMEOUT_S
            if check is not None:
                timeout = int(check.max_attempts * check.interval_seconds)
            argv += [f"--{STARTUP_TIMEOUT}", str(timeout)]
        argv += ["--prometheus-port", "${self.metrics_port}", "--prometheus-host", HOST]
        argv += render_args(extra)
        health = HealthPlan(path=HEALTH_PATH, deadline_s=HEALTH_DEADLINE_S)
        return routed(
            ctx, argv, frontend=PROGRAM, ports=PORTS, health=health, differs=["vllm-router-metrics"]
        )

    def _check(self, ctx: FrontendContext) -> None:
        """What srtctl refuses before launching (`VLLMRouterFrontend.validate`, the schema),
        and what cannot run here."""
        if ctx.config.backend.type != "vllm":
            raise ctx.fail(
                f"frontend type vllm-router fronts vLLM workers, but the engine is "
                f"{ctx.config.backend.type}",
                ("frontend", "type"),
                "use smg (sglang-router) or dynamo for other engines",
            )
        prefill, decode = ctx.names(RoleKind.PREFILL), ctx.names(RoleKind.DECODE)
        aggregated = ctx.names(RoleKind.AGGREGATED)
        if (prefill or decode) and aggregated:
            raise ctx.fail(
                "vllm-router cannot mix aggregated workers with prefill/decode workers",
                ("frontend", "type"),
                "a variant is either disaggregated (prefill + decode) or aggregated",
            )
        if (prefill or decode) and not (prefill and decode):
            raise ctx.fail(
                "vllm-router's PD mode needs prefill and decode workers",
                ("frontend", "type"),
                f"got prefill={prefill} decode={decode}",
            )
        if prefill and any(role.nnodes > 1 for role in ctx.workers):
            # srtctl's schema: "each logical vLLM endpoint" must fit one node in PD mode
            raise ctx.fail(
                "vllm-router's PD mode needs each prefill/decode worker on one node",
                ("frontend", "type"),
                "give each worker at most one node's GPUs, or use dynamo",
            )
        backend = ctx.config.backend
        if backend.dp_launch_mode == "per_gpu" and any(
            role.parallel is not None and role.parallel.dp > 1 for role in ctx.workers
        ):
            raise ctx.fail(
                "vllm-router with data-parallel-size needs dp_launch_mode per_node (per_gpu "
                "processes are Dynamo registrations, not vLLM API servers the router reaches)",
                ("backend", "dp_launch_mode"),
                "drop dp_launch_mode (per_node is the default)",
            )
        connectors = {str(backend.connector or "").lower()}
        for settings, _spec in ctx.worker_inputs.values():
            connectors |= {str(v).lower() for k, v in settings.items() if _flag(k) == "connector"}
        if "moriio" in connectors:
            raise ctx.refuse(
                "connector moriio behind vllm-router (the workers register with the router "
                "over its ZMQ discovery, which is not built here)",
                ("backend", "connector"),
            )
        if prefill and ctx.simulated:
            raise ctx.refuse(
                "vllm-router over simulated prefill/decode workers (the router hands the KV "
                "over with vLLM's kv_transfer_params; the simulated engine speaks SGLang's "
                "bootstrap hand-over)",
                ("frontend", "type"),
            )

    def _intra_dp(self, ctx: FrontendContext, extra: Mapping[str, Any]) -> int:
        """srtctl's one `--intra-node-data-parallel-size` for every URL; a recipe's own must
        agree with it."""
        sizes = {node_local_dp(role) for role in ctx.workers}
        if len(sizes) > 1:
            raise ctx.fail(
                "vllm-router takes one --intra-node-data-parallel-size for every worker, but "
                f"the workers' node-local data-parallel sizes differ: {sorted(sizes)}",
                ("frontend", "type"),
                "give every role the same data-parallel layout per node",
            )
        derived = next(iter(sizes), 1)
        for key, value in extra.items():
            if _flag(key) != INTRA_DP:
                continue
            try:
                written = int(value)
            except (TypeError, ValueError):
                written = None
            if written != derived:
                raise ctx.fail(
                    f"frontend.args.{key} {value!r} conflicts with the workers' layout "
                    f"(derived {derived})",
                    ("frontend", "args", str(key)),
                    f"drop it, or set it to {derived}",
                )
        return derived


def _side_channel(role: RolePlan) -> list[str]:
    """The prefill worker's NIXL side-channel port, which srtctl gives the router."""
    if any(port.split("*")[0] == "nixl" for port in role.ports):
        return [f"${{{role.name}.nixl_port}}"]
    return []


ADAPTER = VllmRouterFrontend()
