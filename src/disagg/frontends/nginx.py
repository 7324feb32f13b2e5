"""nginx fanning requests out over several frontends (srt-slurm's `enable_multiple_frontends`).

The configuration is srtctl's `templates/nginx.conf.j2` (v1.0.68), rendered at plan time
with `${frontend-i.host}` placeholders and written by the role itself once they are bound,
so plan.json shows exactly what runs. nginx answers `/nginx-health` itself: the proxy's
health gate, after the frontends it forwards to are healthy. With
`nginx_session_affinity` the header's value picks one frontend consistently; a request
without it hashes its own request id, so such requests stay spread (srt-slurm's
behaviour). `nginx_raise_ulimit` raises the open-file limit to srtctl's 1048576 (to the
hard limit where that is lower, where srtctl's nginx would not start).
"""

from __future__ import annotations

from disagg.plan.model import HealthPlan, RoleKind, RolePlan
from disagg.recipe.schema import FrontendSection

NGINX_HEALTH_PATH = "/nginx-health"
PREFIX = "${run.dir}/nginx"
DEFAULT_AFFINITY_HEADER = "X-Dynamo-Session-ID"
MAX_BODY = "45m"  # srtctl's cap, the Dynamo frontend's own body limit
NOFILE = 1048576  # srtctl's `ulimit -n` and `worker_rlimit_nofile` with nginx_raise_ulimit


def nginx_conf(section: FrontendSection, upstreams: list[str]) -> str:
    """nginx.conf for one proxy over the named frontend roles."""
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
    foreground."""
    script = f'mkdir -p {PREFIX} && printf "%s" "$0" > {PREFIX}/nginx.conf && '
    globals_ = "daemon off;"
    if section.nginx_raise_ulimit:  # open files up to the hard limit, for nginx and its workers
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
