"""A real vLLM prefill/decode pair behind the vLLM Router (`frontend.type: vllm-router`),
from a recipe, with `disagg run --local`.

The router runs as srtctl renders it (`--vllm-pd-disaggregation`, the prefill's URL with
its NIXL side-channel port, the decode's URL) and hands vLLM's `kv_transfer_params` from
the prefill to the decode worker: the decode worker's own `KV Transfer metrics` must count
successful NIXL transfers and no failed one, and every request must come back with
exactly the requested tokens.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tiny_model import TinyModel

from .test_vllm_run import (
    PD_CONCURRENCIES,
    assert_every_request_exact,
    disagg,
    write_profile,
    write_recipe,
)
from .vllm_support import kv_log_transfers

pytestmark = [pytest.mark.real_engine, pytest.mark.slow]


def test_prefill_decode_pair_behind_the_vllm_router_moves_the_kv_cache(
    vllm_env: Path, tiny_model: TinyModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pinned vllm-router comes with the project's environment, as in an image.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    recipe = write_recipe(tmp_path, tiny_model, disaggregated=True, concurrencies=PD_CONCURRENCIES)
    yaml = YAML()
    data = yaml.load(recipe.read_text())
    data["frontend"] = {"type": "vllm-router", "enable_multiple_frontends": False}
    with recipe.open("w") as handle:
        yaml.dump(data, handle)
    profile = write_profile(tmp_path, vllm_env, slurm=False)
    run_dir = tmp_path / "run"
    done = disagg("run", recipe, "--local", "--cluster", profile, "--out", run_dir, "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = assert_every_request_exact(run_dir, points=len(PD_CONCURRENCIES))
    assert {r["router"] for r in results} == {"vllm-router"}
    transfers = kv_log_transfers((run_dir / "logs" / "decode-0.log").read_text())
    assert transfers.failed == 0
    assert transfers.successful > 0, "decode recomputed the prompts: no KV arrived"
