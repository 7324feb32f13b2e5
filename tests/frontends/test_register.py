"""smg in front of vLLM prefill/decode workers: each worker registered with its connector.

A vLLM pair behind smg transfers KV only when the workers are registered with
`POST /workers` and their `kv_connector`, so the plan wraps the router in
`disagg.frontends.register`; here the wrapper runs the real smg in front of simulated
workers and the router's own worker list shows what was registered.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from disagg.engines.sim.testing import (
    LOOPBACK,
    _spawn,
    free_port,
    http_get,
    start_worker,
    wait_ready,
)
from disagg.frontends.smg import router_argv
from disagg.plan.templates import substitute_all
from engines.engine_support import plan_text
from recipes.recipe_helpers import MINIMAL

pytestmark = pytest.mark.slow


def test_vllm_pd_plan_registers_each_worker_with_its_connector(tmp_path: Path) -> None:
    sglang = MINIMAL[MINIMAL.index("backend:") : MINIMAL.index("benchmark:")]
    recipe = MINIMAL.replace(sglang, "backend:\n  type: vllm\n  connector: nixl\n")
    assert "type: vllm" in recipe
    plan = plan_text(tmp_path, recipe)
    argv = plan.role("router").argv
    assert argv[1:3] == ["-m", "disagg.frontends.register"]
    workers = [argv[i + 1 : i + 4] for i, word in enumerate(argv) if word == "--worker"]
    assert workers == [
        ["${prefill-0.url}", "prefill", "NixlConnector"],
        ["${decode-0.url}", "decode", "NixlConnector"],
    ]
    router = argv[argv.index("--") + 1 :]
    assert router[1:4] == ["-m", "smg.launch_router", "--pd-disaggregation"]
    assert "--prefill" not in router and "--decode" not in router


def test_wrapper_registers_each_worker_with_the_real_smg(tmp_path: Path) -> None:
    prefill = start_worker("prefill-0", "prefill", tmp_path)
    decode = start_worker("decode-0", "decode", tmp_path)
    ports = {"http_port": str(free_port()), "metrics_port": str(free_port())}
    bindings = {
        "run": {"python": sys.executable},
        "router": {**ports, "bind_host": LOOPBACK},
        "prefill-0": {"url": prefill.url},
        "decode-0": {"url": decode.url},
    }
    template = router_argv(prefill=["prefill-0"], decode=["decode-0"], registered=True)
    wrapper = [sys.executable, "-m", "disagg.frontends.register"]
    wrapper += ["--router", f"http://{LOOPBACK}:{ports['http_port']}"]
    wrapper += ["--worker", "${prefill-0.url}", "prefill", "NixlConnector"]
    wrapper += ["--worker", "${decode-0.url}", "decode", "NixlConnector", "--", *template]
    argv = substitute_all(wrapper, bindings, self_name="router")
    router = _spawn("router", argv, tmp_path, f"http://{LOOPBACK}:{ports['http_port']}")
    try:
        wait_ready(prefill, "/health")
        wait_ready(decode, "/health")
        wait_ready(router, "/readiness", deadline_s=60)
        status, body = http_get(router.url + "/workers")
        assert status == 200
        listed = {w["url"]: w["worker_type"] for w in json.loads(body)["workers"]}
        assert listed == {prefill.url: "prefill", decode.url: "decode"}
        assert "registered prefill" in router.log_path.read_text()
    finally:
        router.stop()
        prefill.stop()
        decode.stop()
