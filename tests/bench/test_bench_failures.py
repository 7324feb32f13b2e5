"""What real servers do wrong is counted and reported, and nothing hangs."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from stream_server import ServerConfig, serve_in_subprocess

from .support import measure, plan

HTTP = pytest.mark.parametrize("http", ["fast", "aiohttp"])


@pytest.mark.timeout(30)
@HTTP
def test_multi_token_chunks_count_tokens_from_usage(http: str, out: Path) -> None:
    # speculative decoding: 3 tokens per chunk; usage says 16 tokens, 6 chunks arrive
    with serve_in_subprocess(ServerConfig(ttft_ms=5, itl_ms=3, tokens_per_chunk=3)) as url:
        run = measure(url, plan(osl=16), out, http=http)
    r = run.result
    assert run.valid, r["invalid_reason"]
    assert r["output_lens"] == [16] * 16
    assert all(len(itls) == 5 for itls in r["itls"])  # one gap per chunk, not per token
    # TPOT spreads a request's 5 chunk gaps over its 15 tokens after the first (not over
    # 5 chunks), whatever the gaps measured on a loaded machine
    per_request = [sum(itls) / 15 * 1000 for itls in r["itls"]]
    assert r["median_tpot_ms"] == pytest.approx(statistics.median(per_request), abs=0.01)
    assert r["output_tokens_source"] == "usage" and not r["output_tokens_approximate"]


@pytest.mark.timeout(30)
def test_missing_usage_falls_back_to_counting_chunks_and_says_so(out: Path) -> None:
    with serve_in_subprocess(ServerConfig(usage=False, tokens_per_chunk=2)) as url:
        run = measure(url, plan(osl=16), out)
    r = run.result
    assert r["completed"] == 16
    assert r["output_tokens_source"] == "chunks"
    assert r["output_tokens_approximate"] is True
    assert r["output_lens"] == [8] * 16  # 8 chunks of 2 tokens: an undercount, flagged


@pytest.mark.timeout(30)
def test_missing_usage_with_a_tokenizer_re_tokenises_the_text(out: Path, tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "tok": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok_dir = tmp_path / "tok"
    tok_dir.mkdir()
    tok.save(str(tok_dir / "tokenizer.json"))
    with serve_in_subprocess(ServerConfig(usage=False, tokens_per_chunk=2)) as url:
        run = measure(url, plan(osl=16, tokenizer=str(tok_dir)), out)
    r = run.result
    assert run.valid, r["invalid_reason"]
    assert r["output_tokens_source"] == "tokenizer" and not r["output_tokens_approximate"]
    assert r["output_lens"] == [16] * 16


@pytest.mark.timeout(30)
@HTTP
def test_stream_broken_midway_fails_the_requests(http: str, out: Path) -> None:
    with serve_in_subprocess(ServerConfig(ttft_ms=2, itl_ms=1, break_after_chunks=4)) as url:
        run = measure(url, plan(osl=16), out, http=http)
    r = run.result
    assert r["failed"] == 16 and r["completed"] == 0
    assert not run.valid
    assert all(e for e in r["errors"])
    assert any(word in r["errors"][0] for word in ("Payload", "mid-response"))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("status", [400, 503])
@HTTP
def test_http_errors_are_counted_with_their_status(http: str, status: int, out: Path) -> None:
    # every 4th request fails: 25% > the 1% allowed, so the point is invalid
    with serve_in_subprocess(ServerConfig(fail_status=status, fail_every=4)) as url:
        run = measure(url, plan(num_prompts=40), out, http=http)
    r = run.result
    assert r["failed"] == 10 and r["completed"] == 30
    assert sum(e.startswith(f"HTTP {status}") for e in r["errors"]) == 10
    assert not run.valid and "10 of 40 requests failed" in (run.reason or "")


@pytest.mark.timeout(30)
def test_failures_under_the_threshold_keep_the_point_valid(out: Path) -> None:
    with serve_in_subprocess(ServerConfig(fail_status=500, fail_every=20)) as url:
        run = measure(url, plan(num_prompts=40, max_failure_ratio=0.1), out)
    assert run.result["failed"] == 2
    assert run.valid


@pytest.mark.timeout(30)
@HTTP
def test_a_server_that_never_answers_times_out(http: str, out: Path) -> None:
    with serve_in_subprocess(ServerConfig(hang=True)) as url:
        run = measure(url, plan(num_prompts=8), out, timeout_s=0.5, http=http)
    r = run.result
    assert r["failed"] == 8
    assert all(e.startswith("timeout") for e in r["errors"])
    assert not run.valid


@pytest.mark.timeout(30)
@HTTP
def test_no_server_at_all_is_an_invalid_point_not_a_crash(http: str, out: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    run = measure(f"http://127.0.0.1:{port}", plan(num_prompts=4), out, http=http)
    assert not run.valid and run.result["failed"] == 4
    assert run.path.is_file()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("workers", [1, 2])
def test_stop_event_ends_the_point_early(workers: int, out: Path) -> None:
    # 400 requests of 5 s each at concurrency 8 take 250 s: stopping after the first
    # token leaves most unsent, and the point says it was stopped (how fast it reacts
    # is measured by benchmarks/client.py, not asserted here).
    stop = threading.Event()
    config = ServerConfig(ttft_ms=50, itl_ms=50)
    with serve_in_subprocess(config) as url, _set_on_first_request(url, stop):
        run = measure(
            url, plan(num_prompts=400, osl=100, concurrency=8), out, workers=workers, stop=stop
        )
    r = run.result
    assert not run.valid and "stopped" in (run.reason or "")
    assert r["completed"] < 400
    assert any(e == "not sent: the point was stopped" for e in r["errors"])


@pytest.mark.timeout(30)
def test_output_lengths_far_from_requested_make_the_point_invalid(out: Path) -> None:
    # the server stops at 4 tokens although ignore_eos asked for 16
    with serve_in_subprocess(ServerConfig(output_tokens=4)) as url:
        run = measure(url, plan(osl=16), out)
    assert not run.valid
    assert "far from the requested length" in (run.reason or "")


@contextmanager
def _set_on_first_request(url: str, stop: threading.Event) -> Iterator[None]:
    """Set `stop` once the test server has received a request (read from its `/stats`)."""
    import json
    import urllib.request

    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
                if json.loads(resp.read())["requests"] >= 1:
                    stop.set()
                    return
            done.wait(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


@pytest.mark.timeout(30)
@HTTP
def test_truncated_json_events_fail_their_requests_instead_of_counting_tokens(
    http: str, out: Path
) -> None:
    with serve_in_subprocess(ServerConfig(truncated_events=True)) as url:
        run = measure(url, plan(osl=16), out, http=http)
    r = run.result
    assert not run.valid
    assert r["completed"] == 0 and r["failed"] == 16
    assert all("not a JSON object" in error for error in r["errors"])


@pytest.mark.timeout(60)
@HTTP
def test_an_event_over_the_size_cap_fails_its_request_naming_the_cap(http: str, out: Path) -> None:
    from disagg.bench.sse import MAX_EVENT_BYTES

    config = ServerConfig(event_bytes=MAX_EVENT_BYTES + 1024)
    with serve_in_subprocess(config) as url:
        run = measure(url, plan(osl=2, num_prompts=4, concurrency=2), out, http=http)
    r = run.result
    assert not run.valid and r["completed"] == 0
    assert all(f"over {MAX_EVENT_BYTES:,} bytes" in error for error in r["errors"]), r["errors"]
