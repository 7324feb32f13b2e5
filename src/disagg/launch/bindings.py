"""Values for `${scope.field}` placeholders, known only once nodes and ports are.

Scopes: each role by name (`host`, `url`, `<name>_port`, `addr`, `nnodes`, `node_rank`),
`self` (this task, with `bind_host`, `node` and `node_id`, srtctl's `{node}`/`{node_id}`),
`model` and `run` (as a container's mounts show them), and the job's nodes by rank:
`nodes` (addresses) and `node_names`.

Ports come from one per-run base, random below the ephemeral range so that two runs on
one host rarely probe the same ports, then a bind probe for every port handed out; a port
is never given to two roles of a run, since on a laptop or the test cluster every "node"
is one host.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from disagg.errors import DisaggError
from disagg.plan.container_paths import RUN_DIR_INSIDE, in_container, mount_pairs, translate
from disagg.plan.model import WORKER_KINDS, Plan, RolePlan
from disagg.plan.setup_script import CONFIGS_INSIDE
from disagg.plan.templates import substitute, substitute_all

Bindings = dict[str, dict[str, str]]
NODES = "nodes"  # node rank -> address; not a scope placeholders name
NODE_NAMES = "node_names"  # node rank -> scheduler name; not a scope either


def build_bindings(
    plan: Plan,
    *,
    addresses: Sequence[str],
    ports: Mapping[str, Mapping[str, int]],
    model_path: str,
    draft_path: str,
    run_dir: Path,
    python: str = sys.executable,
    names: Sequence[str] = (),
) -> Bindings:
    """Every role's fields; `names` are the nodes' scheduler names (default: addresses)."""
    bindings: Bindings = {
        "model": {"path": model_path, "draft": draft_path},
        # absolute: a role that resolves paths against another directory (nginx's prefix,
        # a process that changes directory) must find the same run directory
        "run": {
            "dir": str(run_dir.absolute()),
            "python": python,
            "job_id": job_id(),
            "configs": configs_host_dir(plan),
        },
        NODES: {str(rank): address for rank, address in enumerate(addresses)},
        NODE_NAMES: {str(rank): name for rank, name in enumerate(names or addresses)},
    }
    for role in plan.roles:
        host = addresses[role.node_ranks[0] if role.node_ranks else 0]
        fields = {"host": host, "nnodes": str(role.nnodes), "node_rank": "0"}
        fields.update({name: str(port) for name, port in ports.get(role.name, {}).items()})
        if "http_port" in fields:
            fields["url"] = f"http://{host}:{fields['http_port']}"
        if "dist_init_port" in fields:
            fields["addr"] = f"{host}:{fields['dist_init_port']}"
        bindings[role.name] = fields
    return bindings


def configs_host_dir(plan: Plan) -> str:
    """The host side of the job's `/configs` mount (srtctl's configs directory), else
    `/configs` itself (a role on a host that has it there)."""
    mounts = mount_pairs(plan.slurm.container_mounts)
    return next((host for host, inside in mounts if inside == CONFIGS_INSIDE), CONFIGS_INSIDE)


def job_id() -> str:
    """The Slurm job id inside an allocation, else `local-<orchestrator pid>`."""
    return os.environ.get("SLURM_JOB_ID") or f"local-{os.getpid()}"


def write_role_files(plan: Plan, role: RolePlan, bindings: Bindings, run_dir: Path) -> list[Path]:
    """Write the files a role reads (engine configs) into the run directory, bound as the
    role's head node task sees them (container paths included)."""
    from disagg.atomic import write_text

    scoped = _scoped(plan, role, role.node_ranks[0] if role.node_ranks else 0, bindings)
    written = []
    for relative, text in role.files.items():
        path = run_dir / relative
        if not path.resolve().is_relative_to(run_dir.resolve()):
            raise DisaggError(f"role {role.name}: file {relative} lies outside the run directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, substitute(text, scoped, self_name=role.name))
        written.append(path)
    return written


def _scoped(plan: Plan, role: RolePlan, node_rank: int, bindings: Bindings) -> Bindings:
    """The bindings one task of `role` on node `node_rank` sees."""
    scoped = dict(bindings)
    own = bindings[role.name]
    index = role.node_ranks.index(node_rank) if node_rank in role.node_ranks else 0
    scoped[role.name] = {
        **own,
        "node_rank": str(index),
        "bind_host": bindings.get(NODES, {}).get(str(node_rank), own["host"]),
        "node": bindings.get(NODE_NAMES, {}).get(str(node_rank), own["host"]),
        "node_id": str(worker_node_index(plan, node_rank)),
    }
    if in_container(plan, role):  # paths as the container sees them
        model = bindings.get("model")
        if model is not None:
            scoped["model"] = {key: translate(plan, role, value) for key, value in model.items()}
        run = bindings.get("run")
        if run is not None:  # the Slurm executor mounts the run directory there
            scoped["run"] = {**run, "dir": RUN_DIR_INSIDE, "configs": CONFIGS_INSIDE}
    return scoped


def worker_node_index(plan: Plan, node_rank: int) -> int:
    """`node_rank`'s index among the nodes that hold workers (srtctl's `{node_id}`: the
    node's place in its worker node list, which leaves out nodes reserved for others)."""
    workers = sorted({rank for r in plan.roles if r.kind in WORKER_KINDS for rank in r.node_ranks})
    return workers.index(node_rank) if node_rank in workers else node_rank


def render_task(
    plan: Plan, role: RolePlan, node_rank: int, bindings: Bindings
) -> tuple[list[str], dict[str, str]]:
    """argv and added environment for one task of `role` on node `node_rank`; GPU
    visibility last, so that it always matches the plan's `gpu_ids`."""
    scoped = _scoped(plan, role, node_rank, bindings)
    argv = substitute_all(
        role.argv_on(role.node_ranks.index(node_rank)), scoped, self_name=role.name
    )
    env = {key: substitute(value, scoped, self_name=role.name) for key, value in role.env.items()}
    if role.gpu_ids:
        visible = ",".join(str(gpu) for gpu in role.gpu_ids)
        for var in plan.gpu_vendor.visible_devices_vars:
            env[var] = visible
    return argv, env


class PortProbe(Protocol):
    """What allocation asks of an executor (a `RoleLauncher`): is this port free there."""

    def port_is_free(self, node_rank: int, port: int) -> bool: ...


PORT_LOW = 10000
PORT_HIGH = 32000  # below net.ipv4.ip_local_port_range (32768+), where clients bind
BASE_STEP = 100


def port_field(name: str) -> str:
    """The placeholder field for a port name: `http` and `http_port` both give `http_port`;
    a block `nixl*8` is named by its first port, `nixl_port`."""
    name = port_block(name)[0]
    return name if name.endswith("_port") else f"{name}_port"


def port_block(name: str) -> tuple[str, int]:
    """(name, width) of a role's port entry: `nixl*8` asks for 8 consecutive free ports (a
    server that adds its rank to a base port, as vLLM's NIXL side channel does)."""
    base, sep, width = name.partition("*")
    return base, int(width) if sep and width.isdigit() and int(width) > 0 else 1


def choose_base() -> int:
    """A per-run base port aligned to BASE_STEP."""
    return random.SystemRandom().randrange(PORT_LOW, PORT_HIGH - 10 * BASE_STEP, BASE_STEP)


def allocate_ports(
    plan: Plan, launcher: PortProbe, *, base: int | None = None
) -> dict[str, dict[str, int]]:
    """Role name -> {port field -> number}; every number free on every node of its role."""
    port = choose_base() if base is None else base
    taken: set[int] = set()
    result: dict[str, dict[str, int]] = {}
    for role in plan.roles:
        fields: dict[str, int] = {}
        for name in role.ports:
            width = port_block(name)[1]
            port = _next_free(port, width, taken, launcher, role.node_ranks or [0])
            fields[port_field(name)] = port
            taken.update(range(port, port + width))
            port += width
        result[role.name] = fields
    return result


def _next_free(
    start: int, width: int, taken: set[int], launcher: PortProbe, ranks: list[int]
) -> int:
    """The first port from `start` that, with the `width - 1` after it, is free on every node."""
    for port in range(start, min(start + 2000, 65535)):
        block = range(port, port + width)
        if port + width > 65535 or taken.intersection(block):
            continue
        if all(launcher.port_is_free(rank, free) for free in block for rank in ranks):
            return port
    raise DisaggError(
        f"no free port found between {start} and {start + 2000}",
        hint="something on this host holds a large port range; free it or re-run",
        exit_code=1,
    )
