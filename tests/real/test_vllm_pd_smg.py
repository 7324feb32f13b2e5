"""A real vLLM prefill/decode pair behind smg, from a recipe, with `disagg run --local`.

smg moves vLLM's KV from prefill to decode only for workers registered with their
connector (`POST /workers`, done by disagg.frontends.register): the decode worker's own
`KV Transfer metrics` must count successful NIXL transfers and no failed one, and every
request must come back with exactly the requested tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tiny_model import TinyModel

from .test_vllm_run import PD_CONCURRENCIES, assert_every_request_exact, run_locally
from .vllm_support import kv_log_transfers

pytestmark = [pytest.mark.real_engine, pytest.mark.slow]


def test_prefill_decode_pair_behind_smg_moves_the_kv_cache(
    vllm_env: Path, tiny_model: TinyModel, tmp_path: Path
) -> None:
    run_dir, plan = run_locally(
        tmp_path, vllm_env, tiny_model, disaggregated=True, concurrencies=PD_CONCURRENCIES
    )
    router = next(role for role in plan["roles"] if role["name"] == "router")
    assert router["argv"][1:3] == ["-m", "disagg.frontends.register"]
    results = assert_every_request_exact(run_dir, points=len(PD_CONCURRENCIES))
    assert sum(int(r["completed"]) for r in results) > 0
    transfers = kv_log_transfers((run_dir / "logs" / "decode-0.log").read_text())
    assert transfers.failed == 0
    assert transfers.successful > 0, "decode recomputed the prompts: no KV arrived"
    assert "registered prefill" in (run_dir / "logs" / "router.log").read_text()
