"""What a benchmark run as a command in the bench role gets: its role and environment.

The command runs on node 0 with the public endpoint's URL in place of `ENDPOINT` and
the contract variables (docs/benchmarks.md) under the recipe's own `benchmark.env`.
"""

from __future__ import annotations

from disagg.bench.identity import setup_fields
from disagg.plan.job_plan import env_text
from disagg.plan.model import WORKER_KINDS, Plan, RoleKind, RolePlan
from disagg.workloads.profiling import command_env

RESULTS_DIR = "${run.dir}/bench-results"  # where a command is asked to write its results
ENDPOINT = "<frontend-url>"  # stands for the frontend's URL in a planned argv

SERVING_KINDS = (RoleKind.ROUTER, RoleKind.AGGREGATED, RoleKind.DECODE)


def serving_role(roles: list[RolePlan]) -> RolePlan | None:
    """The role load goes to (the same choice as the orchestrator's canary)."""
    for kind in SERVING_KINDS:
        for role in roles:
            if role.kind is kind and "http" in role.ports:
                return role
    return None


def _front(plan: Plan) -> RolePlan | None:
    """Where load goes: the plan's serving role, else the first that serves HTTP."""
    return plan.role(plan.serving_role) if plan.serving_role else serving_role(plan.roles)


def contract_env(plan: Plan) -> dict[str, str]:
    """The variables every custom command gets (docs/benchmarks.md has the table)."""
    bench = plan.bench
    env: dict[str, str] = {}
    # Where load goes, as the orchestrator sends it (nginx when it fans out): srtctl's
    # SRT_FRONTEND_HOST is the public endpoint's node (`_public_api_node`).
    front = _front(plan)
    if front is not None:
        env["SRT_FRONTEND_HOST"] = f"${{{front.name}.host}}"
        env["SRT_FRONTEND_PORT"] = f"${{{front.name}.http_port}}"
        env["SRT_FRONTEND_URL"] = f"${{{front.name}.url}}"
    setup = setup_fields(plan)
    env["DISAGG"] = env_text(plan.disaggregated)
    for side in ("prefill", "decode"):
        upper = side.upper()
        env[f"{upper}_NUM_WORKERS"] = env_text(setup.get(f"{side}_num_workers") or 0)
        env[f"{upper}_TP"] = env_text(setup.get(f"{side}_tp") or 0)
        env[f"{upper}_EP"] = env_text(setup.get(f"{side}_ep") or 0)
        env[f"{upper}_DP_ATTN"] = env_text(bool(setup.get(f"{side}_dp_attention")))
    env.update(
        {
            "NUM_PREFILL_GPU": str(plan.prefill_gpus),
            "NUM_DECODE_GPU": str(plan.decode_gpus),
            "CONC_LIST": " ".join(str(c) for c in bench.concurrencies),
            "MODEL": bench.model_name,
        }
    )
    if bench.isl:
        env["ISL"] = str(bench.isl)
    if bench.osl:
        env["OSL"] = str(bench.osl)
    env["RANDOM_RANGE_RATIO"] = f"{bench.random_range_ratio:g}"
    if bench.command is not None:
        env.update(bench.command.load_env)
    results = bench.command.results_dir if bench.command else ""
    env.update(command_env(plan))  # a profiled job's, as srtctl gives every benchmark
    env.update(
        {
            "DISAGG_RUN_NAME": plan.name,
            "DISAGG_RUN_DIR": "${run.dir}",
            "DISAGG_RESULTS_DIR": results,
            "RESULT_DIR": results,
            "DISAGG_JOB_ID": "${run.job_id}",
            "DISAGG_PYTHON": "${run.python}",
            "DISAGG_SIMULATED": env_text(plan.simulated),
        }
    )
    return env


SERVER_METRICS = "AIPERF_SERVER_METRICS_URLS"
KVBM_METRICS_PORT = "DYN_KVBM_METRICS_PORT"


def server_metrics_urls(plan: Plan) -> list[str]:
    """AIPerf's `AIPERF_SERVER_METRICS_URLS` as srt-slurm v1.0.68 hands it to a custom
    command (`_get_aiperf_server_metrics_env`): each worker leader's `/metrics` (the Dynamo
    system port under Dynamo, else HTTP), then prefill/aggregated leaders' KVBM port."""
    port = "system" if plan.frontend == "dynamo" else "http"
    workers = [role for role in plan.roles if role.kind in WORKER_KINDS and port in role.ports]
    urls = [f"http://${{{r.name}.host}}:${{{r.name}.{port}_port}}/metrics" for r in workers]
    backend = plan.config.get("backend")
    backend = backend if isinstance(backend, dict) else {}
    envs = [backend.get(f"{mode}_environment") for mode in ("prefill", "aggregated")]
    ports = [env.get(KVBM_METRICS_PORT) for env in envs if isinstance(env, dict)]
    kvbm = next((str(port) for port in ports if port), None)
    if kvbm:
        kinds = (RoleKind.PREFILL, RoleKind.AGGREGATED)
        urls += [f"http://${{{r.name}.host}}:{kvbm}/metrics" for r in workers if r.kind in kinds]
    return list(dict.fromkeys(urls))


def command_role(plan: Plan, *, contained: bool = True) -> RolePlan:
    """The bench role of a command benchmark, in the benchmark's (or the job's) image
    unless `contained` is False (disagg's own Python)."""
    command = plan.bench.command
    assert command is not None
    front = _front(plan)
    url = f"${{{front.name}.url}}" if front is not None else "http://localhost:8000"
    env = contract_env(plan)
    if command.server_metrics:
        env[SERVER_METRICS] = ",".join(server_metrics_urls(plan))
    env.update(command.env)  # the recipe's own values win
    image = command.container_image or plan.slurm.container_image
    return RolePlan(
        name="bench",
        kind=RoleKind.BENCH,
        node_ranks=[0],
        argv=[url if arg == ENDPOINT else arg for arg in command.argv],
        env=env,
        container_image=image if contained else None,
    )
