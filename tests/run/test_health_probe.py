"""The health GET as a Dynamo worker's gate reads it: Dynamo's system server answers 503
`notready` unless DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS names an endpoint (srtctl sets
none), but lists each endpoint's own state; the worker is up once `generate` is ready."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer

from disagg.launch.health import probe

STARTING = b'{"status":"notready","endpoints":{}}'
# what ai-dynamo 1.6.1's mocker answered, with no health variable set
SERVING = b'{"status":"notready","uptime":{"secs":18},"endpoints":{"generate":"ready"}}'


@contextmanager
def answering(status: int, body: bytes) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/health"
    finally:
        server.shutdown()
        server.server_close()


READY = '"generate":"ready"'


def test_a_503_listing_generate_as_ready_counts_when_the_status_does_not_matter() -> None:
    with answering(503, SERVING) as url:
        assert probe(url, expect=READY, any_status=True) == (True, "HTTP 503")
        assert probe(url, expect=READY)[0] is False  # a plain gate wants its 200


def test_a_worker_still_starting_is_not_up_whatever_the_status() -> None:
    with answering(503, STARTING) as url:
        ok, detail = probe(url, expect=READY, any_status=True)
        assert not ok and detail == f"HTTP 503 without {READY!r} yet"
    with answering(200, STARTING) as url:
        assert probe(url, expect=READY, any_status=True)[0] is False


def test_a_plain_gate_is_unchanged() -> None:
    with answering(200, b"ok") as url:
        assert probe(url) == (True, "HTTP 200")
    with answering(503, b"ok") as url:
        assert probe(url) == (False, "HTTP 503")
    with answering(200, b"[]") as url:
        assert probe(url, expect='"model"') == (False, "HTTP 200 without '\"model\"' yet")
