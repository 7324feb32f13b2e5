"""A real vLLM prefill/decode pair (CPU build) moves the KV cache over NIXL.

The two legs a vLLM-aware PD router sends, sent by the test itself: the pair as disagg
renders it runs end to end in test_vllm_run.py once the router registers vLLM workers.
These start real engine processes: a minute or two on 2 cores. Select them with
`-m real_engine`, leave them out with `-m "not real_engine"`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from disagg.engines.sim.testing import Proc, free_port, post_json, wait_ready
from disagg.launch.base import spawn_logged
from tiny_model import TinyModel

from .vllm_support import (
    NIXL_CPU_ENV,
    STARTUP_DEADLINE_S,
    VLLM_CPU_ENV,
    kv_log_transfers,
    with_env_path,
)

pytestmark = [pytest.mark.real_engine, pytest.mark.slow]


@contextmanager
def vllm_server(
    name: str, env_dir: Path, model: TinyModel, log_dir: Path, *, extra: Sequence[str] = ()
) -> Iterator[Proc]:
    """`vllm serve` on a free loopback port, healthy on exit from `with`, stopped by PID."""
    port = free_port()
    argv = [
        "vllm",
        "serve",
        str(model.path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        model.served_name,
        "--max-model-len",
        str(model.max_model_len),
        "--enforce-eager",
        *extra,
    ]
    env = {**VLLM_CPU_ENV, **NIXL_CPU_ENV, "VLLM_NIXL_SIDE_CHANNEL_PORT": str(free_port())}
    log = log_dir / f"{name}.log"
    popen = spawn_logged(
        argv,
        env=with_env_path(env_dir, env),
        log_path=log,
        banner=name,
        failure=f"{name}: cannot start vllm",
        hint="scripts/engine-env vllm builds the engine environment",
    )
    proc = Proc(name, popen, log, f"http://127.0.0.1:{port}")
    try:
        wait_ready(proc, "/health", deadline_s=STARTUP_DEADLINE_S)
        yield proc
    finally:
        proc.stop(grace_s=30)


def _remote_prefill_params() -> dict[str, Any]:
    return {
        "do_remote_decode": True,
        "do_remote_prefill": False,
        "remote_engine_id": None,
        "remote_block_ids": None,
        "remote_host": None,
        "remote_port": None,
    }


def test_prefill_decode_pair_moves_the_kv_cache_over_nixl(
    vllm_env: Path, tiny_model: TinyModel, tmp_path: Path
) -> None:
    """The two legs a PD router sends: prefill hands over KV blocks, decode pulls them."""
    nixl = '{{"kv_connector":"NixlConnector","kv_role":"{}","kv_buffer_device":"cpu"}}'
    prompt = " the cat sat on a mat" * 30
    with ExitStack() as stack:
        prefill = stack.enter_context(
            vllm_server(
                "prefill-0",
                vllm_env,
                tiny_model,
                tmp_path,
                extra=["--kv-transfer-config", nixl.format("kv_producer")],
            )
        )
        decode = stack.enter_context(
            vllm_server(
                "decode-0",
                vllm_env,
                tiny_model,
                tmp_path,
                extra=["--kv-transfer-config", nixl.format("kv_consumer")],
            )
        )
        for _ in range(3):
            body = {"model": tiny_model.served_name, "prompt": prompt, "max_tokens": 1}
            status, raw = post_json(
                prefill.url + "/v1/completions",
                {**body, "kv_transfer_params": _remote_prefill_params()},
            )
            assert status == 200, raw
            handover = json.loads(raw)["kv_transfer_params"]
            assert handover["do_remote_prefill"] is True and handover["remote_block_ids"]
            status, raw = post_json(
                decode.url + "/v1/completions",
                {**body, "max_tokens": 10, "ignore_eos": True, "kv_transfer_params": handover},
            )
            assert status == 200, raw
            assert json.loads(raw)["usage"]["completion_tokens"] == 10
        # vLLM logs its transfer metrics with its periodic stats (every ~10 s).
        transfers = kv_log_transfers("")
        for _ in range(120):
            transfers = kv_log_transfers(decode.log_path.read_text(errors="replace"))
            if transfers.successful >= 3:
                break
            time.sleep(0.5)
    assert transfers.successful >= 3 and transfers.failed == 0, decode.log_tail(40)
