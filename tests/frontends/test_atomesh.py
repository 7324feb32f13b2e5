"""`frontend.type: atomesh`: ATOM's own router over ATOM workers (srt-slurm 2.x's static router).

What a user relies on: the router's command as ATOM's P/D jobs run it (`atomesh launch`,
P/D mode over every prefill and decode worker, `--backend atom`, the recipe's flags as
written), ATOM's real prefill/decode workers planning behind it, smg standing in over
simulated workers and the plan saying so, and a real one refused on this machine by name.

Regenerate after an intended change and review the diff:

    DISAGG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/frontends/test_atomesh.py
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.frontends import local_refusal
from disagg.frontends.atomesh import ATOMESH_BINARY
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from engines.engine_support import task_lines
from slurm.golden_support import check_golden

ENGINES = Path(__file__).resolve().parents[1] / "engines"
GOLDEN = ENGINES / "golden"
RECIPE = ENGINES / "data" / "atom" / "atomesh-2p1d-dpa-tp8.yaml"  # InferenceX's form

SCHEMA2 = """\
schema: 2
name: tiny-atomesh
model: {path: /models/tiny, container: atom-img, precision: bf16}
resources: {gpu_type: mi355x, gpus_per_node: 8}
engine: {type: atom, connector: mooncake}
roles:
  prefill: {nodes: 1, workers: 2, gpus: 4}
  decode: {nodes: 1, workers: 1, gpus: 8}
frontend:
  type: atomesh
  enable_multiple_frontends: false
  args: {policy: random, disable-circuit-breaker: true}
benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}
"""


def _plan(tmp_path: Path, text: str) -> Plan:
    path = tmp_path / "atomesh.yaml"
    path.write_text(text)
    [variant] = load_variants(path)
    return place(variant)


def test_an_atom_recipe_renders_its_workers_and_atomesh() -> None:
    [variant] = load_variants(RECIPE)
    plan = place(variant)
    assert plan.engine == "atom" and plan.frontend == "atomesh"
    check_golden(f"atom/{RECIPE.stem}.atomesh.txt", task_lines(plan), directory=GOLDEN)
    router = plan.role("router")
    assert "--prometheus-port 29100" in shlex.join(router.argv)  # the recipe's, as written
    assert router.ports == ["http"]


def test_atomesh_routes_every_prefill_and_decode_worker_in_pd_mode(tmp_path: Path) -> None:
    plan = _plan(tmp_path, SCHEMA2)
    router = plan.role("router")
    assert router.argv[:2] == [ATOMESH_BINARY, "launch"]
    line = shlex.join(router.argv)
    assert (
        "--pd-disaggregation --prefill '${prefill-0.url}' --prefill '${prefill-1.url}' "
        "--decode '${decode-0.url}' --backend atom --policy random --disable-circuit-breaker"
    ) in line
    assert router.argv[-2:] == ["--prometheus-port", "${self.metrics_port}"]
    assert router.ports == ["http", "metrics"]
    assert router.container_image == "atom-img"
    assert plan.serving_role == "router" and plan.stages == [
        ["prefill-0", "prefill-1", "decode-0"],
        ["router"],
    ]
    # ATOM's real prefill/decode workers plan behind their own router
    assert '"kv_role":"kv_producer"' in shlex.join(plan.role("prefill-0").argv)
    assert "static-router-command" in [row["id"] for row in plan.differs]
    why = local_refusal(plan.frontend, plan.simulated)
    assert why is not None and why.startswith("frontend type atomesh runs ATOM's router")


def test_aggregated_atom_workers_are_given_as_worker_urls(tmp_path: Path) -> None:
    text = SCHEMA2.replace(
        "  prefill: {nodes: 1, workers: 2, gpus: 4}\n  decode: {nodes: 1, workers: 1, gpus: 8}\n",
        "  agg: {nodes: 1, workers: 2, gpus: 4}\n",
    )
    argv = _plan(tmp_path, text).role("router").argv
    at = argv.index("--worker-urls")
    assert argv[at + 1 : at + 3] == ["${aggregated-0.url}", "${aggregated-1.url}"]
    assert "--pd-disaggregation" not in argv


def test_a_flag_the_plan_owns_is_refused_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(DisaggError, match=r"frontend.args.port is set by disagg"):
        _plan(tmp_path, SCHEMA2.replace("policy: random", "port: 9000"))


def test_atomesh_over_another_engine_is_refused_by_name(tmp_path: Path) -> None:
    text = SCHEMA2.replace("engine: {type: atom, connector: mooncake}", "engine: sglang")
    with pytest.raises(UnsupportedRecipe, match="unsupported: frontend type atomesh over sglang"):
        _plan(tmp_path, text)


def test_simulated_atom_workers_run_behind_smg_standing_in(tmp_path: Path) -> None:
    text = SCHEMA2.replace("connector: mooncake}", "connector: mooncake, engine: sim}")
    plan = _plan(tmp_path, text)
    assert plan.simulated and plan.frontend == "smg (standing in for atomesh)"
    assert [row["id"] for row in plan.differs][:1] == ["static-router-stand-in"]
    router = shlex.join(plan.role("router").argv)
    assert "smg.launch_router" in router and "--backend" not in router
    assert "--disable-circuit-breaker" not in router  # atomesh's flags are not smg's
    assert local_refusal(plan.frontend, plan.simulated) is None


def test_disagg_run_local_refuses_a_real_atomesh_by_name(tmp_path: Path) -> None:
    from run.conftest import disagg

    path = tmp_path / "atomesh.yaml"
    path.write_text(SCHEMA2)
    done = disagg("run", path, "--local", "--out", tmp_path / "run", timeout=60)
    assert done.returncode == 2
    assert "frontend type atomesh runs ATOM's router (atomesh), which is not installed" in (
        done.stderr
    )
    assert not (tmp_path / "run").exists()
