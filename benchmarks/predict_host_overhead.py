"""vLLM's own host cost per request, measured on the real vLLM (the CPU build) here.

A GPU's kernel times (AIConfigurator's data) leave out what the engine's API server does
on the host for every request: HTTP, the chat template, tokenisation, detokenisation and
the streamed chunks. In `vllm serve` that work runs in one API-server process (one
asyncio thread), apart from the engine core, so it does not depend on the model's size
or on the accelerator: a burst of requests waits on it one after another. This starts the
CPU build of vLLM (scripts/engine-env) on the tests' tiny checkpoint, sends bursts of
streamed chat requests at once (128-word prompts, `ignore_eos`, 4 and 64 output tokens)
and reads the API-server process's own CPU seconds (user + system, /proc) around each
burst. Prints the CPU time per request and per streamed token.

The engine core's per-step host time is not measured: on this build the model runs on
the same CPU, so a step's time is the CPU backend's, not the host loop a GPU worker runs.

    PYTHONPATH=src python benchmarks/predict_host_overhead.py [--requests 200] [--rounds 3]

Needs the vLLM engine environment (built on first use, a few minutes); each round starts
no process: one vLLM server serves every round and is stopped by its PID at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import aiohttp  # noqa: E402
from tests.real.vllm_support import VLLM_CPU_ENV, engine_env  # noqa: E402
from tests.tiny_model import build_tiny_model  # noqa: E402

from disagg.engines.sim.testing import free_port  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
WORDS = " ".join(["the"] * 128)
START_TIMEOUT_S = 600


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def chat(session: aiohttp.ClientSession, url: str, tokens: int) -> int:
    """One streamed chat completion of exactly `tokens` tokens; the chunks received."""
    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": WORDS}],
        "max_tokens": tokens,
        "ignore_eos": True,
        "stream": True,
        "temperature": 0,
    }
    chunks = 0
    async with session.post(url + "/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for raw in response.content:
            line = raw.decode()
            chunks += line.startswith("data: ") and "[DONE]" not in line
    return chunks


Server = subprocess.Popen[bytes]


async def wait_healthy(session: aiohttp.ClientSession, url: str, server: Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"vLLM exited with {server.returncode} before it was healthy")
        try:
            async with session.get(url + "/health") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(1)
    raise SystemExit(f"vLLM not healthy within {START_TIMEOUT_S} s")


async def measure(url: str, server: Server, n: int, rounds: int) -> None:
    """Bursts of `n` requests; the API server (the `vllm serve` process itself) is timed."""
    api_pid = server.pid
    timeout = aiohttp.ClientTimeout(total=1800)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as s:
        await wait_healthy(s, url, server)
        for _ in range(3):
            await chat(s, url, 8)
        per: dict[int, list[float]] = {4: [], 64: []}
        for _ in range(rounds):
            for tokens in per:
                before = cpu_seconds(api_pid)
                await asyncio.gather(*(chat(s, url, tokens) for _ in range(n)))
                per[tokens].append((cpu_seconds(api_pid) - before) / n)
    short, long = (statistics.median(per[t]) for t in (4, 64))
    per_token = (long - short) / 60
    print(f"API-server CPU per request, bursts of {n} ({rounds} rounds, median):")
    for tokens, value in ((4, short), (64, long)):
        rounds_ms = [round(x * 1e3, 2) for x in per[tokens]]
        print(f"  {tokens} tokens each: {value * 1e3:.2f} ms (rounds: {rounds_ms})")
    print(
        f"  per streamed token: {per_token * 1e6:.0f} us; per request less its tokens: "
        f"{(short - 4 * per_token) * 1e3:.2f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per burst")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env_dir = engine_env("vllm")
    with tempfile.TemporaryDirectory(prefix="host-overhead-") as tmp:
        model = build_tiny_model(Path(tmp) / "tiny")
        port = free_port()
        env = {**os.environ, **VLLM_CPU_ENV, "VLLM_LOGGING_LEVEL": "WARNING"}
        env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        command = [str(env_dir / "bin" / "vllm"), "serve", str(model.path), "--host", "127.0.0.1"]
        command += ["--port", str(port), "--max-model-len", "2048", "--served-model-name", "tiny"]
        command += ["--enforce-eager"]
        with open(Path(tmp) / "vllm.log", "wb") as log:
            server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            asyncio.run(measure(url, server, args.requests, args.rounds))
        finally:
            server.terminate()
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
