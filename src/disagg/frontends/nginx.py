"""nginx fanning requests out over several frontends (srt-slurm's `enable_multiple_frontends`).

The configuration is rendered at plan time with `${frontend-i.host}` placeholders and
written by the role itself once they are bound, so plan.json shows exactly what runs.
nginx answers `/nginx-health` itself: the health gate for the proxy, started after
the frontends it forwards to are healthy. With `nginx_session_affinity` the header's
value is hashed consistently to one frontend; a request without it hashes its own
request id, so such requests stay spread (srt-slurm's behaviour). Request bodies stay
in memory (long prompts are not refused or spooled to a temp file).
`nginx_raise_ulimit` raises the open-file limit to the hard limit and sets
`worker_rlimit_nofile` to it, as srt-slurm's generated configuration does.
"""

from __future__ import annotations

from disagg.plan.model import HealthPlan, RoleKind, RolePlan
from disagg.recipe.schema import FrontendSection

NGINX_HEALTH_PATH = "/nginx-health"
PREFIX = "${run.dir}/nginx"
DEFAULT_AFFINITY_HEADER = "X-Dynamo-Session-ID"


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
    return f"""worker_processes 1;
pid {PREFIX}/nginx.pid;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  client_body_temp_path {PREFIX}/body;
  proxy_temp_path {PREFIX}/proxy;
  keepalive_timeout {keepalive};
  client_max_body_size 0;
  client_body_buffer_size 16m;
{key}  upstream frontends {{
{affinity}{servers}
    keepalive 256;
  }}
  server {{
    listen ${{self.bind_host}}:${{self.http_port}};
    location = {NGINX_HEALTH_PATH} {{ return 200 "ok"; }}
    location / {{
      proxy_pass http://frontends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 3600s;
    }}
  }}
}}
"""


def nginx_role(section: FrontendSection, upstreams: list[str]) -> RolePlan:
    """The proxy role: writes its configuration, then runs nginx in the foreground."""
    script = f'mkdir -p {PREFIX} && printf "%s" "$0" > {PREFIX}/nginx.conf && '
    globals_ = "daemon off;"
    if section.nginx_raise_ulimit:  # open files up to the hard limit, for nginx and its workers
        script += 'n=$(ulimit -Hn); [ "$n" = unlimited ] && n=1048576; ulimit -n "$n" && '
        globals_ += " worker_rlimit_nofile $n;"
    script += f'exec nginx -p {PREFIX} -c {PREFIX}/nginx.conf -e stderr -g "{globals_}"'
    return RolePlan(
        name="nginx",
        kind=RoleKind.SERVICE,
        node_ranks=[0],
        ports=["http"],
        argv=["bash", "-c", script, nginx_conf(section, upstreams)],
        health=HealthPlan(path=NGINX_HEALTH_PATH, deadline_s=60.0),
        container_image=section.nginx_container,
    )
