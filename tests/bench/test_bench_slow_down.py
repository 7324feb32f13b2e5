"""sa-bench's `/slow_down` around the measured window: a POST that fails is never silent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from disagg.engines.sim.testing import free_port
from disagg.plan.model import SlowDownPlan
from stream_server import ServerConfig, serve_in_subprocess

from .support import measure, plan


class _Recorder(BaseHTTPRequestHandler):
    bodies: ClassVar[list[object]] = []
    status = 200

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        type(self).bodies.append((self.path, json.loads(self.rfile.read(length))))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "4")
        self.end_headers()
        self.wfile.write(b"null")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def worker() -> Iterator[type[_Recorder]]:
    """A stand-in decode worker that records the /slow_down bodies it is sent."""
    handler = type("Handler", (_Recorder,), {"bodies": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/slow_down"  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_window_is_slowed_down_then_cleared_with_sglangs_bodies(
    worker: type[_Recorder], out: Path
) -> None:
    url = worker.url  # type: ignore[attr-defined]
    slowed = SlowDownPlan(sleep_s=30.0, wait_s=600.0, urls=[url])
    with serve_in_subprocess(ServerConfig(ttft_ms=2, itl_ms=1)) as base:
        run = measure(base, plan(slow_down=slowed, warmup=4, num_prompts=8), out)
    assert run.valid, run.reason
    # set before the window, cleared at its end (the 600 s wait never elapsed)
    assert worker.bodies == [
        ("/slow_down", {"forward_sleep_time": 30.0}),
        ("/slow_down", {"forward_sleep_time": None}),
    ]
    posts = run.result["slow_down_posts"]
    assert [(p["url"], p["forward_sleep_time"], p["ok"]) for p in posts] == [
        (url, 30.0, True),
        (url, None, True),
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_an_unreachable_worker_makes_the_point_invalid_and_sends_no_load(
    workers: int, out: Path
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/slow_down"
    slowed = SlowDownPlan(sleep_s=1.0, wait_s=60.0, urls=[dead])
    with serve_in_subprocess(ServerConfig(ttft_ms=2, itl_ms=1)) as base:
        run = measure(base, plan(slow_down=slowed, num_prompts=8), out, workers=workers)
    assert not run.valid
    assert run.reason is not None and f"slow_down: POST {dead}" in run.reason
    assert run.result["completed"] == 0


def test_a_worker_answering_an_error_fails_the_point_with_its_status(
    worker: type[_Recorder], out: Path
) -> None:
    worker.status = 404
    slowed = SlowDownPlan(sleep_s=1.0, wait_s=60.0, urls=[worker.url])  # type: ignore[attr-defined]
    with serve_in_subprocess(ServerConfig(ttft_ms=2, itl_ms=1)) as base:
        run = measure(base, plan(slow_down=slowed, num_prompts=8), out)
    assert not run.valid
    assert run.reason is not None and "HTTP 404" in run.reason
    # the clearing POST is still sent: a worker is never left slowed down
    assert [body for _, body in worker.bodies] == [
        {"forward_sleep_time": 1.0},
        {"forward_sleep_time": None},
    ]
