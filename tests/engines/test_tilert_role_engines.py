"""TileRT's layout written with an engine per role: `roles.prefill.engine: vllm` beside
`roles.decode.engine: tilert` (srt-slurm's examples/tilert/glm5-rocm-mooncake-disagg.yaml).

What a user relies on: the prefill runs as the vllm role engine renders a prefill role
(its args as written, nothing of TileRT's added, since role engines share no knobs), the
decode runs TileRT's decode server from its own role, each role in its own image, the
plan says which role runs which engine, and a vllm prefill that cannot hand its KV to
TileRT's decode server is refused by name.

Regenerate after an intended change and review the diff:

    DISAGG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/engines/test_tilert_role_engines.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from disagg.engines.tilert import CONNECTOR_MODULE, DECODE_MODULE
from disagg.errors import UnsupportedRecipe
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.plan.show import render_plan
from disagg.recipe.variants import load_variants
from slurm.golden_support import check_golden

from .engine_support import task_lines

GOLDEN = Path(__file__).parent / "golden"
# srt-slurm 2.x's TileRT example's layout, in a recipe written for these tests
EXAMPLE = Path(__file__).parent / "data" / "tilert" / "schema2-vllm-prefill-tilert-decode.yaml"

CONNECTOR = (
    '{"kv_connector":"TileRTConnector","kv_connector_module_path":"'
    + CONNECTOR_MODULE
    + '","kv_role":"kv_producer"}'
)
PREFILL_ARGS = f"{{enforce-eager: true, kv-transfer-config: '{CONNECTOR}'}}"
MIXED = f"""\
schema: 2
name: tiny-mixed
model: {{path: /models/glm, container: tilert-decode-img, precision: fp8}}
resources: {{gpu_type: b200, gpus_per_node: 8}}
roles:
  prefill:
    engine: vllm
    container: tilert-prefill-img
    nodes: 1
    workers: 1
    gpus: 8
    args: {PREFILL_ARGS}
  decode:
    engine:
      type: tilert
      model_profile: glm5
      weights_dir: /weights/glm-tilert
      prefill_kv_cache_dtype: fp8_ds_mla
      with_mtp: true
    nodes: 1
    workers: 1
    gpus: 8
    args: {{num-mtp: 3}}
frontend: {{type: tilert-router, enable_multiple_frontends: false}}
benchmark: {{type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}}
"""
# The same prefill role in a variant that runs vllm on every role, behind a static router.
ALL_VLLM = f"""\
schema: 2
name: tiny-vllm
model: {{path: /models/glm, container: tilert-decode-img, precision: fp8}}
resources: {{gpu_type: b200, gpus_per_node: 8}}
engine: vllm
roles:
  prefill: {{nodes: 1, workers: 1, gpus: 8, args: {PREFILL_ARGS}}}
  decode: {{nodes: 1, workers: 1, gpus: 8, args: {{connector: nixl}}}}
frontend: {{type: vllm-router, enable_multiple_frontends: false}}
benchmark: {{type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}}
"""


def _plan(tmp_path: Path, text: str) -> Plan:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    [variant] = load_variants(path)
    return place(variant)


def test_a_mixed_tilert_recipe_plans_each_role_on_its_engine() -> None:
    [variant] = load_variants(EXAMPLE)
    plan = place(variant)
    assert plan.engine == "tilert" and plan.role_engines == {"prefill": "vllm"}
    assert plan.frontend == "tilert-router"
    check_golden(f"tilert/{EXAMPLE.stem}.txt", task_lines(plan), directory=GOLDEN)
    prefill, decode = plan.role("prefill-0"), plan.role("decode-0")
    assert prefill.container_image == "registry.example/tilert-prefill:0.3"
    assert decode.container_image == "registry.example/tilert-decode:0.3"
    # the prefill role's args as written, in order, then the plan's address
    assert prefill.argv[:3] == ["vllm", "serve", "${model.path}"]
    assert prefill.argv[3:-6] == [
        *("--served-model-name", "big_moe", "--tensor-parallel-size", "8"),
        *("--max-model-len", "262144", "--return-tokens-as-token-ids"),
        *("--kv-cache-dtype", "bfloat16"),
        *("--speculative-config", '{"method":"mtp","num_speculative_tokens":1}'),
        *("--enforce-eager", "--trust-remote-code", "--gpu-memory-utilization", "0.8"),
        *("--block-size", "64"),
    ]
    transfer = json.loads(prefill.argv[-5])
    assert prefill.argv[-6] == "--kv-transfer-config"
    assert transfer["kv_connector"] == "TileRTConnector"
    assert transfer["kv_connector_extra_config"]["tilert_transport"] == "mooncake"
    assert prefill.argv[-4:] == ["--host", "${self.bind_host}", "--port", "${self.http_port}"]
    assert prefill.env["VLLM_ROCM_USE_AITER"] == "1" and "TILERT_DECODE_KNOB" not in prefill.env
    assert decode.argv == [
        *("python3", "-m", DECODE_MODULE, "--engine", "tilert"),
        *("--model", "big_moe", "--model-weights-dir", "/models/big-moe-tilert-tp8"),
        *("--max-seq-len", "262144", "--kv-cache-dtype", "bf16", "--transport", "mooncake"),
        *("--with-mtp", "--num-mtp", "2"),
        *("--ctrl-port", "${self.ctrl_port}", "--http-port", "${self.http_port}"),
    ]
    assert decode.env["TILERT_DECODE_KNOB"] == "4"
    router = plan.role("router")
    assert router.argv[3:5] == ["--vllm-url", "${prefill-0.url}"]
    at = router.argv.index("--decode") + 1
    assert router.argv[at] == "${decode-0.host}:${decode-0.ctrl_port}:${decode-0.http_port}"
    assert router.argv[-6:] == ["--parser", "none", "--model-path", "/model",
                                "--queue-timeout", "900"]  # fmt: skip


def test_the_vllm_prefill_role_renders_as_on_an_all_vllm_variant(tmp_path: Path) -> None:
    """Nothing of TileRT's reaches a vllm prefill role: no tensor-parallel default, no
    `--return-tokens-as-token-ids`, no knob-derived KV-cache dtype, MTP or connector."""
    mixed = _plan(tmp_path, MIXED).role("prefill-0")
    alone = _plan(tmp_path, ALL_VLLM).role("prefill-0")
    assert mixed.argv == alone.argv
    assert mixed.argv == [
        *("vllm", "serve", "${model.path}", "--enforce-eager"),
        *("--served-model-name", "glm"),
        *("--kv-transfer-config", CONNECTOR),
        *("--host", "${self.bind_host}", "--port", "${self.http_port}"),
    ]
    assert mixed.container_image == "tilert-prefill-img"  # the role's own image


def test_the_decode_roles_tilert_knobs_reach_the_decode_server_only(tmp_path: Path) -> None:
    plan = _plan(tmp_path, MIXED)
    assert plan.role("decode-0").argv[5:9] == [
        *("--model", "glm5", "--model-weights-dir", "/weights/glm-tilert"),
    ]
    assert "--with-mtp" in plan.role("decode-0").argv
    assert plan.role("decode-0").container_image == "tilert-decode-img"
    prefill = plan.role("prefill-0").argv
    assert "--speculative-config" not in prefill and "--kv-cache-dtype" not in prefill


def test_the_plan_says_which_role_runs_which_engine(tmp_path: Path) -> None:
    plan = _plan(tmp_path, MIXED)
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in render_plan(plan, 80)]
    assert "engine       tilert (prefill: vllm), disaggregated" in lines
    assert json.loads(plan.model_dump_json())["role_engines"] == {"prefill": "vllm"}


def test_the_prefill_roles_own_vllm_knobs_apply_to_it(tmp_path: Path) -> None:
    text = MIXED.replace(
        "    engine: vllm\n", "    engine: {type: vllm, vllm_serve_binary: /opt/vllm}\n"
    )
    plan = _plan(tmp_path, text)
    assert plan.role("prefill-0").argv[:2] == ["/opt/vllm", "serve"]


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        (  # no connector written: the vllm role's default (nixl) cannot reach TileRT
            f"    args: {PREFILL_ARGS}\n",
            "    args: {enforce-eager: true}\n",
            "roles.prefill.args.kv-transfer-config (a vllm prefill role beside a tilert "
            "decode role with KV connector NixlConnector",
        ),
        (
            "    engine: vllm\n",
            "    engine: {type: vllm, failover: {shadow_engines: 1}}\n",
            "roles.prefill.engine.failover (no shadow engines",
        ),
    ],
)
def test_what_the_mixed_layout_cannot_run_is_refused_by_name(
    tmp_path: Path, old: str, new: str, what: str
) -> None:
    assert old in MIXED
    with pytest.raises(UnsupportedRecipe) as caught:
        _plan(tmp_path, MIXED.replace(old, new))
    assert caught.value.what.startswith(what), caught.value.what


def test_a_tilert_prefill_beside_a_vllm_decode_is_refused_naming_the_pair(
    tmp_path: Path,
) -> None:
    text = MIXED.replace("    engine: vllm\n", "    engine: tilert\n").replace(
        "      type: tilert\n", "      type: vllm\n"
    )
    text = re.sub(
        r"      (model_profile|weights_dir|prefill_kv_cache_dtype|with_mtp):.*\n", "", text
    )
    with pytest.raises(UnsupportedRecipe) as caught:
        _plan(tmp_path, text)
    assert caught.value.what.startswith("roles.prefill.engine tilert with decode engine vllm (")


def test_the_mixed_layout_simulates_only_when_every_role_says_so(tmp_path: Path) -> None:
    decode_sim = MIXED.replace("      type: tilert\n", "      type: tilert\n      engine: sim\n")
    with pytest.raises(UnsupportedRecipe) as caught:
        _plan(tmp_path, decode_sim)
    assert caught.value.what.startswith("roles.prefill.engine.engine (one role alone cannot")
    both = decode_sim.replace("    engine: vllm\n", "    engine: {type: vllm, engine: sim}\n")
    plan = _plan(tmp_path, both)
    assert plan.simulated and plan.role_engines == {"prefill": "vllm"}
    assert plan.role("prefill-0").argv[1:4] == ["-m", "disagg", "sim-engine"]
