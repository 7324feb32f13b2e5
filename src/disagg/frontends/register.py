"""`python -m disagg.frontends.register`: run smg and register its workers with `POST /workers`.

smg moves a vLLM prefill worker's KV to the decode worker only for workers registered with
their `worker_type` and `kv_connector` (given as URLs, the decode worker recomputes the
prompt). The wrapper lives as long as the router it starts, passing signals on and exiting
with its status.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from types import FrameType

POLL_S = 0.2


@dataclass(frozen=True)
class Worker:
    url: str
    worker_type: str  # prefill | decode | regular
    kv_connector: str | None

    def body(self) -> bytes:
        data: dict[str, str] = {"url": self.url, "worker_type": self.worker_type}
        if self.kv_connector:
            data["kv_connector"] = self.kv_connector
        return json.dumps(data).encode()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:
            return bool(response.status)
    except urllib.error.HTTPError:
        return True  # it listens; readiness is another matter
    except OSError:
        return False


def register(router: str, worker: Worker) -> str:
    """POST one worker; the router's answer text, or raises OSError."""
    request = urllib.request.Request(
        router.rstrip("/") + "/workers",
        data=worker.body(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5.0) as response:
        return str(response.read(2048).decode("utf-8", errors="replace"))


def _register_all(router: str, workers: list[Worker], child: subprocess.Popen[bytes]) -> None:
    while child.poll() is None and not _answers(router.rstrip("/") + "/health"):
        time.sleep(POLL_S)
    for worker in workers:
        while child.poll() is None:
            try:
                answer = register(router, worker)
            except OSError as exc:
                print(f"register {worker.url}: {exc}; retrying", file=sys.stderr, flush=True)
                time.sleep(POLL_S)
                continue
            print(f"registered {worker.worker_type} {worker.url}: {answer}", flush=True)
            break


def parse(argv: list[str]) -> tuple[str, list[Worker], list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: register --router URL [--worker URL TYPE CONNECTOR]... -- ARGV")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="disagg.frontends.register")
    parser.add_argument("--router", required=True, help="the router's own URL")
    parser.add_argument(
        "--worker", nargs=3, action="append", default=[], metavar=("URL", "TYPE", "CONNECTOR")
    )
    args = parser.parse_args(argv[:split])
    workers = [Worker(u, t, None if c == "none" else c) for u, t, c in args.worker]
    command = argv[split + 1 :]
    if not command:
        parser.error("no router command after --")
    return args.router, workers, command


def main(argv: list[str] | None = None) -> int:
    router, workers, command = parse(list(sys.argv[1:] if argv is None else argv))
    child = subprocess.Popen(command)

    def forward(signum: int, frame: FrameType | None) -> None:
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    threading.Thread(
        target=_register_all, args=(router, workers, child), name="register", daemon=True
    ).start()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
