"""Ports: unique across the whole run, never one that is already bound."""

from __future__ import annotations

import socket

from disagg.launch.local import LocalLauncher
from disagg.launch.ports import allocate_ports, port_field

from .conftest import make_plan, python_role


def test_port_field_names() -> None:
    assert port_field("http") == "http_port"
    assert port_field("bootstrap_port") == "bootstrap_port"


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
