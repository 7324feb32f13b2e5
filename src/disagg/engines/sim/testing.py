"""Simulated workers behind the real sglang-router on loopback, for tests and benchmarks.

Each process starts like a local run's role (`spawn_logged`), on free ports, and its
process group is stopped when the block ends, also on failure; one that exits before it
is ready raises with the tail of its log.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

from disagg.frontends.smg import ROUTER_HEALTH_PATH, router_argv
from disagg.launch.executor import spawn_logged
from disagg.launch.health import probe
from disagg.launch.local import stop_session
from disagg.plan.templates import substitute_all

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A port the kernel considers free right now (bind to 0, read it back, release)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


@dataclass
class Proc:
    """One started process, its log file, and the URL it serves."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    url: str
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace_s: float = 5.0) -> int | None:
        """SIGTERM its process group, wait up to `grace_s`, then SIGKILL; the exit code."""
        return stop_session(self.popen, grace_s)


def http_get(url: str | urllib.request.Request, timeout: float = 5.0) -> tuple[int, bytes]:
    """(status, raw body) of a request, an HTTP error's included."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status), bytes(resp.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


def post_json(url: str, body: dict[str, Any], timeout: float = 30.0) -> tuple[int, bytes]:
    """POST a JSON body; returns (status, raw body) — SSE streams come back whole."""
    data = json.dumps(body).encode()
    return http_get(
        urllib.request.Request(url, data, {"Content-Type": "application/json"}), timeout
    )


def wait_ready(proc: Proc, path: str, deadline_s: float = 30.0) -> None:
    """Poll `proc.url + path` until 200; raise with the log tail if it exits or times out."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        code = proc.popen.poll()
        if code is not None:
            raise RuntimeError(f"{proc.name} exited with {code}:\n{proc.log_tail()}")
        if probe(proc.url + path)[0]:
            return
        time.sleep(0.05)
    raise RuntimeError(f"{proc.name} not ready on {path} after {deadline_s} s:\n{proc.log_tail()}")


def _spawn(name: str, argv: Sequence[str], log_dir: Path, url: str) -> Proc:
    log_path = log_dir / f"{name}.log"
    popen = spawn_logged(
        argv,
        env={},
        log_path=log_path,
        banner=name,
        failure=f"{name}: cannot start {argv[0]!r}",
        hint="check the interpreter and that disagg is installed in it",
    )
    return Proc(name=name, popen=popen, log_path=log_path, url=url)


def start_worker(
    name: str,
    mode: str,
    log_dir: Path,
    *,
    model: str = "sim-model",
    args: Sequence[str] = (),
) -> Proc:
    """Start one `python -m disagg.engines.sim` worker; does not wait for it."""
    port = free_port()
    argv = [sys.executable, "-m", "disagg.engines.sim", "--host", LOOPBACK, "--port", str(port)]
    argv += ["--model-path", model]
    argv += ["--disaggregation-mode", "null" if mode == "aggregated" else mode]
    ports = {"http": port}
    if mode == "prefill":
        ports["bootstrap"] = free_port()
        argv += ["--disaggregation-bootstrap-port", str(ports["bootstrap"])]
    proc = _spawn(name, [*argv, *args], log_dir, f"http://{LOOPBACK}:{port}")
    proc.ports = ports
    return proc


def start_router(
    log_dir: Path,
    *,
    prefill: Sequence[Proc] = (),
    decode: Sequence[Proc] = (),
    aggregated: Sequence[Proc] = (),
) -> Proc:
    """Start the real sglang-router (round robin) with the argv `router_argv` renders for a
    plan."""
    ports = {"http": free_port(), "metrics": free_port()}
    bindings: dict[str, dict[str, str]] = {
        "run": {"python": sys.executable},
        "router": {f"{k}_port": str(v) for k, v in ports.items()},
    }
    for worker in (*prefill, *decode, *aggregated):
        bindings[worker.name] = {"url": worker.url, "host": LOOPBACK}
        bindings[worker.name].update({f"{k}_port": str(v) for k, v in worker.ports.items()})
    template = router_argv(
        prefill=[w.name for w in prefill],
        decode=[w.name for w in decode],
        aggregated=[w.name for w in aggregated],
        policy="round_robin",
        host=LOOPBACK,
    )
    argv = substitute_all(template, bindings, self_name="router")
    proc = _spawn("router", argv, log_dir, f"http://{LOOPBACK}:{ports['http']}")
    proc.ports = ports
    return proc


@dataclass(eq=False)
class SimCluster:
    """`prefill` + `decode` workers (PD) or `aggregated` workers, behind the real router."""

    log_dir: Path
    _: KW_ONLY
    prefill: int = 0
    decode: int = 0
    aggregated: int = 0
    worker_args: Sequence[str] = ()
    workers: dict[str, Proc] = field(default_factory=dict)
    router: Proc | None = None

    @property
    def url(self) -> str:
        """The router's URL."""
        assert self.router is not None
        return self.router.url

    @property
    def procs(self) -> list[Proc]:
        return [*self.workers.values(), *([self.router] if self.router else [])]

    def __enter__(self) -> SimCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        by_mode: dict[str, list[Proc]] = {}
        for mode in ("prefill", "decode", "aggregated"):
            by_mode[mode] = []
            for i in range(getattr(self, mode)):
                name = f"{mode}-{i}"
                worker = start_worker(name, mode, self.log_dir, args=self.worker_args)
                self.workers[name] = worker
                by_mode[mode].append(worker)
        for worker in self.workers.values():
            wait_ready(worker, "/health")
        self.router = start_router(self.log_dir, **by_mode)
        wait_ready(self.router, ROUTER_HEALTH_PATH)

    def stop(self) -> None:
        """Stop the router first (it holds connections), then the workers; by PID."""
        for proc in reversed(self.procs):
            proc.stop()

    def stats(self, name: str) -> dict[str, Any]:
        """A worker's `/sim/stats` counters."""
        status, body = http_get(self.workers[name].url + "/sim/stats")
        if status != 200:
            raise RuntimeError(f"{name} /sim/stats answered {status}")
        result: dict[str, Any] = json.loads(body)
        return result


def sse_events(raw: bytes) -> list[Any]:
    """Decode a whole SSE body's `data: ...` events; `[DONE]` comes back as that string."""
    events: list[Any] = []
    for block in raw.decode().split("\n\n"):
        block = block.strip()
        if not block:
            continue
        if not block.startswith("data: "):
            raise ValueError(f"not an SSE data event: {block[:80]!r}")
        payload = block[len("data: ") :]
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events
