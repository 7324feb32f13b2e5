"""`disagg bench` exit codes: 0 valid, 1 invalid point, 2 bad input (no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stream_server import ServerConfig, serve_in_subprocess


def _bench(url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "disagg", "bench", "--url", url, "--model", "m"]
    argv += ["--isl", "16", "--osl", "8", "--num-prompts", "20", "--out", str(out), *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


@pytest.mark.timeout(90)
def test_valid_point_exits_0_and_prints_json(tmp_path: Path) -> None:
    with serve_in_subprocess(ServerConfig(ttft_ms=2, itl_ms=1)) as url:
        proc = _bench(url, tmp_path, "--concurrency", "4", "--json", "--slo", "ttft=1000")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["valid"] is True and summary["completed"] == 20
    assert "itls" not in summary  # per-request lists stay in the file
    assert Path(summary["path"]).name == "bench_conc4.json"


@pytest.mark.timeout(90)
def test_invalid_point_exits_1_and_names_the_reason(tmp_path: Path) -> None:
    with serve_in_subprocess(ServerConfig(fail_status=503)) as url:
        proc = _bench(url, tmp_path, "--request-rate", "200", "--concurrency", "4")
    assert proc.returncode == 1
    assert "INVALID" in proc.stdout and "no completed requests" in proc.stdout
    written = json.loads((tmp_path / "bench_rate200_conc4.json").read_text())
    assert written["valid"] is False


@pytest.mark.timeout(90)
def test_a_server_sending_only_keep_alives_fails_the_point_at_the_request_timeout(
    tmp_path: Path,
) -> None:
    # keep-alive comments every 0.2 s: bytes arrive, no token ever does
    with serve_in_subprocess(ServerConfig(keepalive_ms=200)) as url:
        proc = _bench(url, tmp_path, "--concurrency", "4", "--request-timeout", "1", "--json")
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["valid"] is False and summary["failed"] == 20
    assert "timeout: no progress for 1 s" in summary["invalid_reason"]


@pytest.mark.timeout(90)
def test_stall_timeout_ends_a_point_that_makes_no_progress(tmp_path: Path) -> None:
    with serve_in_subprocess(ServerConfig(keepalive_ms=200)) as url:
        proc = _bench(url, tmp_path, "--concurrency", "4", "--stall-timeout", "1", "--json")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["invalid_reason"] == (
        "stalled: no request made progress for 1 s"
    )


@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ((), "give --concurrency"),
        (("--concurrency", "2", "--slo", "ttft=fast"), "--slo"),
        (("--concurrency", "2", "--chat-template"), "needs a tokenizer"),
    ],
)
def test_bad_input_exits_2_without_traceback(
    tmp_path: Path, extra: tuple[str, ...], message: str
) -> None:
    proc = _bench("http://127.0.0.1:9", tmp_path, *extra)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
