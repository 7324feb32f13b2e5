"""The liveness watch names the role that stopped answering, workers before the router,
and keeps the gaps of a role that paused and came back."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from disagg.launch.health import LivenessWatch, Watched
from stream_server import serve_in_subprocess


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/health"


def watch_until_dead(targets: list[Watched]) -> list[tuple[str, str]]:
    stop = threading.Event()
    dead: list[tuple[str, str]] = []

    def on_dead(role: str, reason: str) -> None:
        dead.append((role, reason))
        stop.set()

    # 3 s: a live role under load answers at least once in that time; a closed port never
    watch = LivenessWatch(targets, interval_s=0.05, timeout_s=3.0, stop=stop, on_dead=on_dead)
    watch.start()
    assert stop.wait(60), "the watch never reported"
    watch.close()
    return dead


def test_the_role_that_stopped_answering_is_named_and_a_live_one_is_not() -> None:
    with serve_in_subprocess() as url:
        dead = watch_until_dead(
            [Watched("decode-0", url + "/health"), Watched("decode-1", closed_port_url())]
        )
    assert [role for role, _ in dead] == ["decode-1"]
    assert dead[0][1].startswith("role decode-1 stopped serving: no healthy answer for 3 s")


def test_a_worker_is_blamed_before_the_router_that_follows_it() -> None:
    # both fail (the router's readiness follows its workers'): the worker is the cause
    dead = watch_until_dead(
        [Watched("decode-1", closed_port_url()), Watched("router", closed_port_url())]
    )
    assert [role for role, _ in dead] == ["decode-1"]


class PausableHealth:
    """A /health that stops answering while `paused` is set (a SIGSTOPped role, in-process)."""

    def __init__(self) -> None:
        self.paused = threading.Event()
        self.resumed = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                while outer.paused.is_set():
                    outer.resumed.wait(0.05)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/health"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.paused.clear()
        self.server.shutdown()
        self.server.server_close()


def test_a_role_that_paused_and_came_back_leaves_a_gap_naming_it() -> None:
    paused, steady = PausableHealth(), PausableHealth()
    stop = threading.Event()
    dead: list[str] = []
    watch = LivenessWatch(
        [Watched("decode-0", steady.url), Watched("decode-1", paused.url)],
        interval_s=0.05,
        timeout_s=60.0,
        gap_s=0.5,
        stop=stop,
        on_dead=lambda role, reason: dead.append(role),
    ).start()
    try:
        since = time.monotonic()
        assert watch.wait_answered(after=since)
        assert watch.gaps_since(since) == []
        paused.paused.set()
        while not watch.gaps_since(since):  # the test's timeout bounds this
            time.sleep(0.05)
        [open_gap] = watch.gaps_since(since)
        assert (open_gap.role, open_gap.end) == ("decode-1", None)
        paused.paused.clear()
        assert watch.wait_answered(after=time.monotonic())
        [gap] = watch.gaps_since(since)
        assert gap.role == "decode-1" and gap.end is not None
        assert gap.seconds(time.monotonic()) > 0.5
        assert gap.describe(time.monotonic()).startswith("role decode-1 stopped serving for ")
        # a point that starts after the role came back is not tainted by it
        assert watch.gaps_since(time.monotonic()) == []
    finally:
        watch.close()
        paused.close()
        steady.close()
    assert dead == []
