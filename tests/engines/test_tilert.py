"""TileRT (`engine: {type: tilert}`): a vLLM prefill handing its KV to TileRT's decode server,
behind TileRT's router (`frontend.type: tilert-router`).

What a user relies on: each role's command as TileRT's own disaggregated layout runs it
(the prefill's TileRT connector, MTP and KV-cache dtype from the engine knobs, the decode
server's flags and ports, the prefill's own image), the router over those workers, the
simulated engine reading the same settings behind a stand-in it names, and a clear
refusal of what cannot run (an aggregated TileRT worker, TileRT behind another router, a
real TileRT router on this machine). No TileRT runs here: golden files stand in.

Regenerate after an intended change and review the diff:

    DISAGG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/engines/test_tilert.py
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from disagg.engines.tilert import ADAPTER, CONNECTOR_MODULE, DECODE_MODULE
from disagg.errors import UnsupportedRecipe
from disagg.frontends import local_refusal
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from slurm.golden_support import check_golden

from .engine_support import task_lines

GOLDEN = Path(__file__).parent / "golden"
# InferenceX's TileRT recipe form (engine knobs), in a recipe written for these tests
RECIPE = Path(__file__).parent / "data" / "tilert" / "schema2-engine-knobs-nixl.yaml"

SCHEMA2 = """\
schema: 2
name: tiny-tilert
model: {path: /models/glm, container: tilert-decode-img, precision: fp8}
resources: {gpu_type: b200, gpus_per_node: 8}
engine:
  type: tilert
  prefill_container: tilert-prefill-img
  model_profile: glm5
  weights_dir: /weights/glm-tilert
  max_seq_len: 4096
  kv_cache_dtype: fp8
  prefill_kv_cache_dtype: fp8_ds_mla
  transport: mooncake
  with_mtp: true
  speculative_tokens: 2
roles:
  prefill: {nodes: 1, workers: 1, gpus: 8, args: {enforce-eager: true}}
  decode: {nodes: 1, workers: 1, gpus: 8, args: {num-mtp: 3}}
frontend: {type: tilert-router, enable_multiple_frontends: false, args: {parser: none}}
benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}
"""


def _plan(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "tilert.yaml"
    path.write_text(text)
    [variant] = load_variants(path)
    return place(variant)


def test_a_tilert_recipe_of_engine_knobs_renders_its_workers_and_router() -> None:
    [variant] = load_variants(RECIPE)
    plan = place(variant)
    assert plan.engine == "tilert" and plan.frontend == "tilert-router"
    check_golden(f"tilert/{RECIPE.stem}.txt", task_lines(plan), directory=GOLDEN)


def test_the_prefill_is_vllm_with_tilerts_connector_from_the_engine_knobs(
    tmp_path: Path,
) -> None:
    plan = _plan(tmp_path, SCHEMA2)
    prefill = plan.role("prefill-0")
    assert prefill.argv[:3] == ["vllm", "serve", "${model.path}"]
    line = shlex.join(prefill.argv)
    assert "--enforce-eager" in line and "--return-tokens-as-token-ids" in line
    assert "--tensor-parallel-size 8" in line and "--kv-cache-dtype fp8_ds_mla" in line
    spec = json.loads(prefill.argv[prefill.argv.index("--speculative-config") + 1])
    assert spec == {"method": "mtp", "num_speculative_tokens": 2}
    config = json.loads(prefill.argv[prefill.argv.index("--kv-transfer-config") + 1])
    assert config["kv_connector"] == "TileRTConnector"
    assert config["kv_connector_module_path"] == CONNECTOR_MODULE
    assert config["kv_role"] == "kv_producer"
    assert config["kv_connector_extra_config"] == {
        "tilert_model": "glm5",
        "tilert_max_seq_len": 4096,
        "tilert_transport": "mooncake",
    }
    assert prefill.container_image == "tilert-prefill-img"  # engine.prefill_container


def test_the_decode_server_takes_the_knobs_then_the_roles_own_flags(tmp_path: Path) -> None:
    plan = _plan(tmp_path, SCHEMA2)
    decode = plan.role("decode-0")
    assert decode.argv[:5] == ["python3", "-m", DECODE_MODULE, "--engine", "tilert"]
    assert decode.argv[5:] == [
        *("--model", "glm5", "--model-weights-dir", "/weights/glm-tilert"),
        *("--max-seq-len", "4096", "--kv-cache-dtype", "fp8", "--transport", "mooncake"),
        *("--with-mtp", "--num-mtp", "3"),
        *("--ctrl-port", "${self.ctrl_port}", "--http-port", "${self.http_port}"),
    ]
    assert decode.ports == ["http", "ctrl", "system"]  # + srtctl's DYN_SYSTEM_PORT, every worker's
    assert decode.container_image == "tilert-decode-img"
    assert decode.parallel is not None and decode.parallel.tp == 8


def test_the_router_names_the_prefill_url_and_each_decode_servers_ports(tmp_path: Path) -> None:
    plan = _plan(tmp_path, SCHEMA2)
    router = plan.role("router")
    assert router.argv[:5] == ["python3", "-m", "tilert.pd_vllm.pd_router", "--vllm-url",
                               "${prefill-0.url}"]  # fmt: skip
    at = router.argv.index("--decode") + 1
    assert router.argv[at] == "${decode-0.host}:${decode-0.ctrl_port}:${decode-0.http_port}"
    assert router.argv[-2:] == ["--parser", "none"]
    assert router.env["CUDA_VISIBLE_DEVICES"] == ""  # the router never touches a GPU
    assert router.container_image == "tilert-decode-img"  # the model's image
    assert plan.serving_role == "router"
    assert "static-router-command" in [row["id"] for row in plan.differs]
    why = local_refusal(plan.frontend, plan.simulated)
    assert why is not None and "tilert-router" in why and "not installed" in why


def test_a_tilert_recipe_simulated_runs_smg_in_its_routers_place_and_says_so(
    tmp_path: Path,
) -> None:
    plan = _plan(tmp_path, SCHEMA2.replace("type: tilert\n", "type: tilert\n  engine: sim\n"))
    assert plan.simulated and plan.frontend == "smg (standing in for tilert-router)"
    assert "static-router-stand-in" in [row["id"] for row in plan.differs]
    assert local_refusal(plan.frontend, plan.simulated) is None
    decode = " ".join(plan.role("decode-0").argv)
    assert "-m disagg sim-engine" in decode and "--tp-size 8" in decode
    assert "--speculative-algorithm mtp --speculative-num-steps 3" in decode
    assert "--context-length 4096" in decode
    assert "--parser" not in " ".join(plan.role("router").argv)  # TileRT's flag, not smg's


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        ("type: tilert-router", "type: sglang-router", "a TileRT prefill worker behind frontend"),
        (
            "  prefill: {nodes: 1, workers: 1, gpus: 8, args: {enforce-eager: true}}\n"
            "  decode: {nodes: 1, workers: 1, gpus: 8, args: {num-mtp: 3}}\n",
            "  agg: {nodes: 1, workers: 1, gpus: 8}\n",
            "an aggregated TileRT worker",
        ),
    ],
)
def test_what_tilert_cannot_run_is_refused_by_name(
    tmp_path: Path, old: str, new: str, what: str
) -> None:
    assert old in SCHEMA2
    with pytest.raises(UnsupportedRecipe, match=f"unsupported: {what}"):
        _plan(tmp_path, SCHEMA2.replace(old, new))


def test_the_adapter_is_registered_with_every_tilert_knob_honoured() -> None:
    from disagg.engines import registry
    from disagg.recipe.backend_section import ENGINE_KNOBS

    assert registry.adapter("tilert") is ADAPTER
    assert ENGINE_KNOBS["tilert"] <= ADAPTER.backend_fields | {"weight_model_type"}


def test_the_weight_type_knob_is_listed_as_ignored(tmp_path: Path) -> None:
    text = SCHEMA2.replace(
        "  model_profile: glm5\n", "  model_profile: glm5\n  weight_model_type: glm-5\n"
    )
    plan = _plan(tmp_path, text)
    [entry] = [e for e in plan.ignored if e["field"] == "engine.weight_model_type"]
    assert entry["action"] == "ignored" and "weight" in entry["why"]


SIM_RUN = """\
schema: 2
name: tilert-sim
model: {path: sim/tiny-model, container: none, precision: fp8}
resources: {gpu_type: sim, gpus_per_node: 8}
engine: {type: tilert, engine: sim, model_profile: glm5, max_seq_len: 4096, with_mtp: true}
roles:
  prefill: {nodes: 1, workers: 1, gpus: 4}
  decode: {nodes: 0, workers: 1, gpus: 4, args: {num-mtp: 2}}
frontend: {type: tilert-router, enable_multiple_frontends: false, args: {parser: none}}
benchmark: {type: sa-bench, isl: 64, osl: 8, concurrencies: "1x4", req_rate: inf,
  num_prompts_mult: 2, num_warmup_mult: 0}
"""


@pytest.mark.slow
def test_a_simulated_tilert_run_measures_every_point_behind_its_stand_in(tmp_path: Path) -> None:
    """The simulated engine runs the TileRT roles (decode with MTP) behind smg standing in for
    TileRT's router, end to end on this machine, and leaves nothing running."""
    from disagg.plan.model import Plan
    from run.conftest import disagg, wait_gone

    path = tmp_path / "tilert-sim.yaml"
    path.write_text(SIM_RUN)
    out = tmp_path / "run"
    done = disagg("run", path, "--local", "--out", out, "--json", timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    plan = Plan.read(out)
    assert plan.frontend == "smg (standing in for tilert-router)"
    decode = " ".join(plan.role("decode-0").argv)
    assert "--speculative-algorithm mtp --speculative-num-steps 2" in decode
    summary = json.loads((out / "summary.json").read_text())
    assert [p["status"] for p in summary["points"]] == ["measured", "measured"]
    assert wait_gone([pid for pids in summary["role_pids"].values() for pid in pids]) == []
