"""Port allocation: one per-run base, then a bind probe for every port handed out.

On the local Slurm test cluster (and on a laptop) every "node" is the same host, so
a port is never given to two roles of a run even when they sit on different nodes.
The base is random within a range below the Linux ephemeral range, so that two runs
on one host (or two jobs on one node) rarely probe the same ports.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from disagg.errors import DisaggError
from disagg.launch.base import RoleLauncher
from disagg.plan.model import Plan

PORT_LOW = 10000
PORT_HIGH = 32000  # below net.ipv4.ip_local_port_range (32768+), where clients bind
BASE_STEP = 100


def port_field(name: str) -> str:
    """The placeholder field for a port name: `http` and `http_port` both give `http_port`."""
    return name if name.endswith("_port") else f"{name}_port"


def choose_base(seed: int | str | None = None) -> int:
    """A per-run base port aligned to BASE_STEP."""
    rng = random.Random(seed) if seed is not None else random.SystemRandom()
    return rng.randrange(PORT_LOW, PORT_HIGH - 10 * BASE_STEP, BASE_STEP)


def allocate_ports(
    plan: Plan, launcher: RoleLauncher, *, base: int | None = None
) -> dict[str, dict[str, int]]:
    """Role name -> {port field -> number}; every number free on every node of its role."""
    port = choose_base() if base is None else base
    taken: set[int] = set()
    result: dict[str, dict[str, int]] = {}
    for role in plan.roles:
        fields: dict[str, int] = {}
        for name in role.ports:
            port = _next_free(port, taken, launcher, role.node_ranks)
            fields[port_field(name)] = port
            taken.add(port)
            port += 1
        result[role.name] = fields
    return result


def _next_free(start: int, taken: set[int], launcher: RoleLauncher, nodes: Iterable[int]) -> int:
    ranks = list(nodes) or [0]
    for port in range(start, min(start + 2000, 65535)):
        if port in taken:
            continue
        if all(launcher.port_is_free(rank, port) for rank in ranks):
            return port
    raise DisaggError(
        f"no free port found between {start} and {start + 2000}",
        hint="something on this host holds a large port range; free it or re-run",
        exit_code=1,
    )
