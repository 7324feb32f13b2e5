"""The checks the orchestrator gates on: a role's health endpoint, a service's readiness.

Standard library only, with short timeouts, so that a probe never delays noticing that
a role died.
"""

from __future__ import annotations

import http.client
import re
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from disagg.plan.model import ReadinessPlan


def probe(
    url: str, *, timeout_s: float = 1.0, expect: str | None = None, any_status: bool = False
) -> tuple[bool, str]:
    """GET `url`: (True, "") on HTTP 200 (whose body holds `expect`, when given), else
    (False, what happened). With `any_status`, a body holding `expect` counts whatever
    the status (an answer that reports its parts' states, ready or not)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            status, body = response.status, response.read(64 * 1024)
    except urllib.error.HTTPError as exc:
        if not any_status:
            return False, f"HTTP {exc.code}"
        status, body = exc.code, exc.read(64 * 1024)
    except (OSError, http.client.HTTPException) as exc:
        return False, str(getattr(exc, "reason", exc))
    if expect is not None and expect.encode() not in body:
        return False, f"HTTP {status} without {expect!r} yet"
    if any_status and expect is not None:
        return True, f"HTTP {status}"
    return status == 200, f"HTTP {status}"


LOG_READ_LIMIT = 16 * 1024 * 1024  # a log is searched up to here (a pattern is a start-up line)


@dataclass
class NodeTarget:
    """One node of a service: its address, its log, and its own ports by name. `scanned`
    is how far its log has been searched: each poll reads only what was written since."""

    host: str
    log: Path
    ports: dict[str, int]
    scanned: int = 0
    logged: bool = False  # the pattern's line was seen: it stays seen


def port_of(value: int | str, ports: dict[str, int]) -> int | None:
    """A readiness port: a number, or the name of one of the role's ports (`http`)."""
    if isinstance(value, int):
        return value
    return ports.get(f"{value}_port", ports.get(value))


def tcp_ready(host: str, port: int, timeout_s: float) -> tuple[bool, str]:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True, ""
    except OSError as exc:
        return False, f"TCP {host}:{port}: {exc.strerror or exc}"


def http_ready(host: str, port: int, path: str, status: int, timeout_s: float) -> tuple[bool, str]:
    connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        connection.request("GET", path)
        answer = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return False, f"GET http://{host}:{port}{path}: {exc}"
    finally:
        connection.close()
    if answer != status:
        return False, f"GET http://{host}:{port}{path}: HTTP {answer}, waiting for {status}"
    return True, ""


def log_ready(node: NodeTarget, pattern: str) -> tuple[bool, str]:
    """Whether a line of the node's log matches, reading only what came since the last poll."""
    if node.logged:
        return True, ""
    try:
        with node.log.open("rb") as handle:
            handle.seek(node.scanned)
            chunk = handle.read(max(0, LOG_READ_LIMIT - node.scanned))
    except OSError:
        return False, f"no log {node.log.name} yet"
    node.scanned += chunk.rfind(b"\n") + 1  # a line still being written is read again
    compiled = re.compile(pattern)
    lines = chunk.decode("utf-8", errors="replace").splitlines()
    if any(compiled.search(line) for line in lines):
        node.logged = True
        return True, ""
    return False, f"no line of {node.log.name} matches {pattern!r} yet"


def node_ready(plan: ReadinessPlan, node: NodeTarget, timeout_s: float) -> tuple[bool, str]:
    """(True, "") when every probe of `plan` passes on `node`, else (False, the first miss)."""
    if plan.tcp_port is not None:
        port = port_of(plan.tcp_port, node.ports)
        if port is None:
            return False, f"no port named {plan.tcp_port}"
        ok, detail = tcp_ready(node.host, port, timeout_s)
        if not ok:
            return ok, detail
    if plan.http_port is not None:
        port = port_of(plan.http_port, node.ports)
        if port is None:
            return False, f"no port named {plan.http_port}"
        ok, detail = http_ready(node.host, port, plan.http_path, plan.http_status, timeout_s)
        if not ok:
            return ok, detail
    if plan.log_pattern is not None:
        return log_ready(node, plan.log_pattern)
    return True, ""
