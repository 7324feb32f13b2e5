"""Port allocation: one per-run base, then a bind probe for every port handed out.

A port is never given to two roles of a run, since on a laptop or the test cluster every
"node" is one host; the base is random below the ephemeral range, so that two runs on
one host rarely probe the same ports.
"""

from __future__ import annotations

import random
from typing import Protocol

from disagg.errors import DisaggError
from disagg.plan.model import Plan


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


def choose_base(seed: int | str | None = None) -> int:
    """A per-run base port aligned to BASE_STEP."""
    rng = random.Random(seed) if seed is not None else random.SystemRandom()
    return rng.randrange(PORT_LOW, PORT_HIGH - 10 * BASE_STEP, BASE_STEP)


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
