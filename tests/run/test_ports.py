"""Ports: unique across the whole run, never one that is already bound."""

from __future__ import annotations

import socket

from disagg.launch.bindings import allocate_ports, port_field
from disagg.launch.local import LocalLauncher

from .conftest import make_plan, python_role


def test_port_field_names() -> None:
    assert port_field("http") == "http_port"
    assert port_field("bootstrap_port") == "bootstrap_port"
    assert port_field("nixl*8") == "nixl_port"


def test_ports_are_unique_and_skip_bound_ones() -> None:
    roles = [python_role(f"decode-{i}", "pass") for i in range(3)]
    for role in roles:
        role.ports = ["http", "bootstrap", "dist_init"]
    plan = make_plan(roles)
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        base = busy.getsockname()[1]
        ports = allocate_ports(plan, LocalLauncher(), base=base)

    numbers = [port for fields in ports.values() for port in fields.values()]
    assert len(numbers) == 9 == len(set(numbers))
    assert base not in numbers
    assert set(ports["decode-1"]) == {"http_port", "bootstrap_port", "dist_init_port"}


def test_a_port_block_is_consecutive_free_ports_no_other_role_gets() -> None:
    """`nixl*4`: vLLM's NIXL side channel listens on its base port plus each DP rank."""
    first, second = python_role("decode-0", "pass"), python_role("decode-1", "pass")
    first.ports = ["http", "nixl*4", "dp_rpc"]
    second.ports = ["http"]
    plan = make_plan([first, second])
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        held = busy.getsockname()[1]
        # the block must step over the held port: start just below it
        ports = allocate_ports(plan, LocalLauncher(), base=held - 2)
    nixl = ports["decode-0"]["nixl_port"]
    block = set(range(nixl, nixl + 4))
    assert held not in block
    others = {p for role, fields in ports.items() for f, p in fields.items() if f != "nixl_port"}
    assert not block & others
    assert set(ports["decode-0"]) == {"http_port", "nixl_port", "dp_rpc_port"}
