"""The liveness watch names the role that stopped answering, workers before the router."""

from __future__ import annotations

import socket
import threading

from disagg.bench.testing import serve_in_subprocess
from disagg.launch.watch import LivenessWatch, Watched


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
