"""A real vLLM (the CPU build in the engine environment of scripts/engine-env) for tests.

`engine_env("vllm")` builds the environment once (cached outside the repository) and
returns its path; `VLLM_CPU_ENV` is what vLLM needs on a CPU-only host; `kv_log_transfers`
reads the decode worker's own account of NIXL transfers from its log.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# A cold build downloads about 1 GB and installs 3.7 GB; cached builds answer at once.
ENV_BUILD_TIMEOUT_S = 1800

# What vLLM needs on a CPU-only host: loopback for every address it advertises, a small
# KV cache, no thread pinning (the cores are shared), no hub and no usage reporting.
VLLM_CPU_ENV = {
    "VLLM_HOST_IP": "127.0.0.1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_LOGGING_LEVEL": "INFO",
}
# NIXL over TCP on loopback (no RDMA here); each worker also needs its own
# VLLM_NIXL_SIDE_CHANNEL_PORT.
NIXL_CPU_ENV = {
    "VLLM_NIXL_SIDE_CHANNEL_HOST": "127.0.0.1",
    "UCX_TLS": "tcp,self,sm",
    "UCX_NET_DEVICES": "lo",
}


def engine_env(engine: str) -> Path:
    """The engine's environment from scripts/engine-env (built on first use)."""
    done = subprocess.run(
        [str(REPO / "scripts" / "engine-env"), engine],
        capture_output=True,
        text=True,
        timeout=ENV_BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"scripts/engine-env {engine} failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def with_env_path(env_dir: Path, extra: dict[str, str]) -> dict[str, str]:
    """Environment for a process that must find the engine's commands (`vllm`) first."""
    path = f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**extra, "PATH": path}


@dataclass(frozen=True)
class KvTransfers:
    """Totals of the `KV Transfer metrics` lines a decode worker logs."""

    successful: int
    failed: int


_METRICS = re.compile(r"KV Transfer metrics:.*")
_FIELD = re.compile(r"(Num successful transfers|Num failed transfers)\s*=\s*(\d+)")


def kv_log_transfers(log_text: str) -> KvTransfers:
    """Sum successful and failed NIXL transfers over every metrics line of a log."""
    totals = {"Num successful transfers": 0, "Num failed transfers": 0}
    for line in _METRICS.findall(log_text):
        for name, value in _FIELD.findall(line):
            totals[name] += int(value)
    return KvTransfers(totals["Num successful transfers"], totals["Num failed transfers"])
