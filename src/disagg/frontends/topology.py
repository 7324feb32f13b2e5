"""Where the frontends and nginx run, as srtctl places them.

srtctl's rule (`FrontendStageMixin._compute_frontend_topology`, v1.0.68 and 2.x): on one
worker node, or with `enable_multiple_frontends: false`, one frontend and no nginx, where
`frontend.orchestrator_placement` puts it; else nginx on the head node and one frontend on
each other worker node, at most `1 + num_additional_frontends`. nginx's configuration is
srtctl's `templates/nginx.conf.j2` (v1.0.68), rendered at plan time so plan.json shows
exactly what runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from disagg.frontends.base import FrontendContext, FrontendRoles
from disagg.plan.job_nodes import PLACEMENTS, placed_rank
from disagg.plan.model import HealthPlan, RoleKind, RolePlan
from disagg.recipe.schema import FrontendSection

NGINX_HEALTH_PATH = "/nginx-health"
PREFIX = "${run.dir}/nginx"
DEFAULT_AFFINITY_HEADER = "X-Dynamo-Session-ID"
MAX_BODY = "45m"  # srtctl's cap, the Dynamo frontend's own body limit
NOFILE = 1048576  # srtctl's `ulimit -n` and `worker_rlimit_nofile` with nginx_raise_ulimit


@dataclass(frozen=True)
class FrontendTopology:
    """Node ranks of nginx (None: no nginx) and of each frontend, in order."""

    nginx: int | None
    frontends: tuple[int, ...]


def orchestrator_rank(ctx: FrontendContext) -> int:
    """The node of the one frontend (router, orchestrator) when there is no nginx."""
    return placed_rank(
        ctx.workers,
        ctx.frontend.orchestrator_placement,
        ctx.nodes.head,
        field=("frontend", "orchestrator_placement"),
        fail=ctx.fail,
    )


def frontend_topology(ctx: FrontendContext) -> FrontendTopology:
    """srtctl's frontend topology for this job (see the module's docstring)."""
    nodes, section = ctx.nodes, ctx.frontend
    if section.orchestrator_placement not in PLACEMENTS:  # refused even where nginx serves
        orchestrator_rank(ctx)
    if len(nodes.workers) == 1 or not section.enable_multiple_frontends:
        return FrontendTopology(nginx=None, frontends=(orchestrator_rank(ctx),))
    others = [rank for rank in nodes.workers if rank != nodes.head]
    count = min(section.num_additional_frontends + 1, len(others))
    return FrontendTopology(nginx=nodes.head, frontends=tuple(others[:count]))


def routed(
    ctx: FrontendContext,
    argv: Sequence[str],
    *,
    frontend: str,
    ports: Sequence[str],
    health: HealthPlan,
    differs: list[str],
    env: Mapping[str, str] | None = None,
    image: str | None = None,
) -> FrontendRoles:
    """A router running `argv` over the workers: one `router`, or nginx over `router-<i>`
    on each other worker node. The recipe's `frontend.env` goes over `env`."""
    topology = frontend_topology(ctx)
    count = len(topology.frontends)
    written = {key: str(value) for key, value in (ctx.frontend.env or {}).items()}
    routers = [
        RolePlan(
            name="router" if count == 1 else f"router-{i}",
            kind=RoleKind.ROUTER,
            node_ranks=[rank],
            ports=list(ports),
            argv=list(argv),
            env={**(env or {}), **written},
            health=health,
            container_image=image,
        )
        for i, rank in enumerate(topology.frontends)
    ]
    stages, serving = fronted(ctx, [ctx.workers, routers], routers, topology)
    return FrontendRoles(
        frontend=frontend,
        stages=stages,
        serving_role=serving,
        prompt_format="text",
        simulator="disagg sim-engine" if ctx.simulated else None,
        differs=differs,
    )


def fronted(
    ctx: FrontendContext,
    stages: list[list[RolePlan]],
    frontends: list[RolePlan],
    topology: FrontendTopology,
) -> tuple[list[list[RolePlan]], str]:
    """(stages, serving role) with nginx last over `frontends` where the topology has it."""
    if topology.nginx is None:
        return stages, frontends[0].name
    proxy = nginx_role(ctx.frontend, [role.name for role in frontends], topology.nginx)
    return [*stages, [proxy]], proxy.name


def nginx_conf(section: FrontendSection, upstreams: list[str]) -> str:
    """nginx.conf for one proxy over the named frontend roles; with session affinity the
    header's value picks the frontend (srt-slurm's)."""
    servers = "\n".join(f"    server ${{{name}.host}}:${{{name}.http_port}};" for name in upstreams)
    affinity = key = ""
    if section.nginx_session_affinity:  # a request without the header keeps its own key
        header = section.nginx_session_affinity_header or DEFAULT_AFFINITY_HEADER
        variable = f"$http_{header.lower().replace('-', '_')}"
        key = f'  map {variable} $affinity_key {{ "" $request_id; default {variable}; }}\n'
        affinity = "    hash $affinity_key consistent;\n"
    keepalive = section.nginx_keepalive_timeout
    return f"""worker_processes auto;
pid {PREFIX}/nginx.pid;
events {{
  worker_connections 65535;
  multi_accept on;
  use epoll;
}}
http {{
  access_log off;
  client_body_temp_path {PREFIX}/body;
  proxy_temp_path {PREFIX}/proxy;
  keepalive_timeout {keepalive};
  client_max_body_size {MAX_BODY};
  client_body_buffer_size 16m;
{key}  upstream frontends {{
{affinity}{servers}
    keepalive 512;
    keepalive_timeout {keepalive};
  }}
  server {{
    listen ${{self.bind_host}}:${{self.http_port}};
    location = {NGINX_HEALTH_PATH} {{ return 200 "ok"; }}
    location / {{
      proxy_pass http://frontends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 24h;
      proxy_send_timeout 24h;
    }}
  }}
}}
"""


def nginx_role(section: FrontendSection, upstreams: list[str], rank: int = 0) -> RolePlan:
    """The proxy role on node `rank`: writes its configuration, then runs nginx in the
    foreground; `nginx_raise_ulimit` raises open files to srtctl's NOFILE, or to the hard
    limit where that is lower (where srtctl's nginx would not start)."""
    script = f'mkdir -p {PREFIX} && printf "%s" "$0" > {PREFIX}/nginx.conf && '
    globals_ = "daemon off;"
    if section.nginx_raise_ulimit:
        script += f'n=$(ulimit -Hn); {{ [ "$n" = unlimited ] || [ "$n" -gt {NOFILE} ]; }} '
        script += f'&& n={NOFILE}; ulimit -n "$n" && '
        globals_ += " worker_rlimit_nofile $n;"
    script += f'exec nginx -p {PREFIX} -c {PREFIX}/nginx.conf -e stderr -g "{globals_}"'
    return RolePlan(
        name="nginx",
        kind=RoleKind.SERVICE,
        node_ranks=[rank],
        ports=["http"],
        argv=["bash", "-c", script, nginx_conf(section, upstreams)],
        health=HealthPlan(path=NGINX_HEALTH_PATH, deadline_s=60.0),
        container_image=section.nginx_container,
    )
