"""ATOM, AMD's engine (`backend.type: atom`, schema 2 `engine: {type: atom}`).

What a user relies on: the worker command ATOM's server takes for each role (its own
flag spellings kept, the plan's model, ports and TP size, the KV hand-over of
prefill/decode workers through Mooncake), AMD GPU pinning from the cluster profile, the
simulated engine reading the same settings, and a clear refusal of what cannot run
here (a frontend srt-slurm does not define, P/D workers behind a router other than ATOM's
own, atomesh: tests/frontends/test_atomesh.py). No ATOM runs on this
machine: golden files from InferenceX's ATOM recipes stand in.

Regenerate after an intended change and review the diff:

    DISAGG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/engines/test_atom.py
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from disagg.cluster import load_profile
from disagg.engines.atom import ADAPTER, ATOM_MODULE
from disagg.engines.worker import WorkerRole, WorkerSpec
from disagg.errors import UnsupportedRecipe
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.recipe.variants import Variant, load_variants
from slurm.golden_support import check_golden, srun_lines

# InferenceX's ATOM recipe forms, in recipes written for these tests
ATOM = Path(__file__).parent / "data" / "atom"
RECIPES = sorted(ATOM.glob("*.yaml"))
GOLDEN = Path(__file__).parent / "golden"
MI355X = Path(__file__).resolve().parents[2] / "examples" / "clusters" / "mi355x.yaml"
SNAPSHOT = "/shared/hf/hub/models--Qwen--Qwen3-0.6B/snapshots/0123456789abcdef"
PYTHON = "/shared/disagg/.venv/bin/python"


def _roles(variant: Variant) -> list[tuple[WorkerRole, int]]:
    """(role, GPUs of one worker) for each worker role the variant's resources have."""
    res = variant.config.resources
    found: list[tuple[WorkerRole, int]] = []
    for role, workers, gpus in (
        ("prefill", res.prefill_workers, res.gpus_per_prefill),
        ("decode", res.decode_workers, res.gpus_per_decode),
        ("aggregated", res.agg_workers, res.gpus_per_agg),
    ):
        if workers and gpus:
            found.append((role, gpus))  # type: ignore[arg-type]
    return found


def worker_lines(variant: Variant) -> str:
    """Each worker role's command as the ATOM adapter renders it: env, argv, ports."""
    backend = variant.config.backend_settings(exclude_unset=True)
    lines = []
    for role, gpus in _roles(variant):
        args = ADAPTER.role_args(backend, role)
        spec = WorkerSpec(role=role, served_name="served", gpus_per_node=gpus, backend=backend)
        command = ADAPTER.worker(args, spec)
        env = " ".join(f"{k}={v}" for k, v in sorted(command.env.items()))
        lines.append(f"{role} (ports {' '.join(command.ports)}): {env} {shlex.join(command.argv)}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("recipe", RECIPES, ids=[p.stem for p in RECIPES])
def test_worker_commands_of_the_atom_recipes(recipe: Path) -> None:
    assert len(RECIPES) == 3
    parts = [f"# {v.name}\n{worker_lines(v)}" for v in load_variants(recipe)]
    check_golden(f"atom/{recipe.stem}.txt", "".join(parts), directory=GOLDEN)


def test_a_prefill_worker_hands_kv_to_decode_through_mooncake() -> None:
    backend = {"connector": "mooncake", "mooncake_protocol": "tcp"}
    args = {"kv_cache_dtype": "fp8", "no-enable_prefix_caching": True, "tp": 4}
    prefill = ADAPTER.worker(args, WorkerSpec("prefill", "m", gpus_per_node=4, backend=backend))
    decode = ADAPTER.worker(args, WorkerSpec("decode", "m", gpus_per_node=4, backend=backend))
    line = shlex.join(prefill.argv)
    assert "--kv_cache_dtype fp8 --no-enable_prefix_caching -tp 4" in line  # as written
    assert "--tensor-parallel-size" not in line  # the role's own size wins
    transfer = prefill.argv[prefill.argv.index("--kv-transfer-config") + 1]
    assert transfer == (
        '{"kv_role":"kv_producer","kv_connector":"mooncake",'
        '"handshake_port":${self.handshake_port},"http_port":${self.http_port},"protocol":"tcp"}'
    )
    assert '"kv_role":"kv_consumer"' in shlex.join(decode.argv)
    assert prefill.env == {"MC_TCP_ENABLE_CONNECTION_POOL": "true"}
    assert prefill.ports == ["http", "engine", "handshake"]


def test_an_aggregated_worker_spans_its_gpus_and_takes_no_kv_transfer() -> None:
    args = {"max-num-seqs": 8, "enable-dp-attention": True, "method": "mtp"}
    command = ADAPTER.worker(args, WorkerSpec("aggregated", "m", gpus_per_node=8))
    line = shlex.join(command.argv)
    assert "--tensor-parallel-size 8" in line and "--kv-transfer-config" not in line
    assert "--method mtp" in line
    assert command.ports == ["http", "engine"] and command.env == {}


def test_aggregated_workers_are_pinned_to_their_amd_gpus(tmp_path: Path) -> None:
    """Behind a frontend built here: the profile's ROCm pinning, one GPU per worker."""
    recipe = ATOM / "infera-agg-2w.yaml"
    path = tmp_path / "agg.yaml"
    path.write_text(recipe.read_text().replace("type: infera", "type: sglang-router"))
    [variant] = load_variants(path)
    plan = place(variant, load_profile(MI355X))
    text = srun_lines(plan, nodes=["mi355x-001"], model_path=SNAPSHOT, python=PYTHON)
    check_golden("atom/agg-2w-behind-smg-on-mi355x.srun.txt", text, directory=GOLDEN)
    workers = [line for line in text.splitlines() if ATOM_MODULE in line]
    assert len(workers) == 2
    for gpu, line in enumerate(workers):
        assert f"HIP_VISIBLE_DEVICES={gpu} " in line and f"ROCR_VISIBLE_DEVICES={gpu} " in line
        assert "CUDA_VISIBLE_DEVICES" not in line
    assert plan.role("aggregated-0").parallel is not None
    assert plan.role("aggregated-0").parallel.tp == 1


@pytest.mark.parametrize(
    ("recipe", "what"),
    [
        ("infera-disagg-1p1d.yaml", "frontend type infera (not a frontend"),
        ("infera-agg-2w.yaml", "frontend type infera (not a frontend"),
    ],
)
def test_infera_recipes_are_refused_for_their_frontend_by_name(recipe: str, what: str) -> None:
    [variant] = load_variants(ATOM / recipe)
    with pytest.raises(UnsupportedRecipe, match=re.escape(f"unsupported: {what}")):
        place(variant)


def test_real_prefill_decode_workers_are_refused_without_atoms_router(tmp_path: Path) -> None:
    recipe = ATOM / "infera-disagg-1p1d.yaml"
    path = tmp_path / "pd.yaml"
    path.write_text(recipe.read_text().replace("type: infera", "type: sglang-router"))
    [variant] = load_variants(path)
    with pytest.raises(
        UnsupportedRecipe,
        match="an ATOM prefill worker behind frontend type sglang-router: its KV hand-over needs "
        "ATOM's own router",
    ):
        place(variant)


def test_the_simulated_engine_reads_the_atom_settings(tmp_path: Path) -> None:
    """`engine: sim`: the 2P1D atomesh recipe's sizes, batch limits and graphs, simulated."""
    recipe = ATOM / "atomesh-2p1d-dpa-tp8.yaml"
    text = recipe.read_text()
    start = text.index("frontend:\n")
    end = text.index("\n\n", start)  # atomesh's own arguments go with it
    text = text[:start] + "frontend:\n  type: sglang-router" + text[end:]
    path = tmp_path / "sim.yaml"
    path.write_text(text.replace("  type: atom\n", "  type: atom\n  engine: sim\n"))
    [variant] = load_variants(path)
    plan = place(variant)
    assert plan.simulated and plan.backend == "atom"
    prefill = " ".join(plan.role("prefill-0").argv)
    decode = " ".join(plan.role("decode-0").argv)
    for line in (prefill, decode):
        assert "-m disagg sim-engine" in line
        assert "--tp-size 8" in line and "--enable-dp-attention" in line
        assert "--context-length 5120" in line
    assert "--max-running-requests 128" in prefill and "--max-running-requests 1024" in decode
    assert "--cuda-graph-max-bs 128" in decode
    assert plan.role("decode-0").parallel is not None
    assert plan.role("decode-0").parallel.tp == 8


SCHEMA2 = """\
schema: 2
name: tiny-atom
model: {path: hf:org/tiny, container: atom-img, precision: bf16}
resources: {gpu_type: mi355x, gpus_per_node: 8}
engine: {type: atom, connector: mooncake, mooncake_protocol: rdma}
roles:
  agg:
    nodes: 1
    workers: 2
    gpus: 4
    args: {kv_cache_dtype: fp8, max-num-seqs: 64}
benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}
frontend: {type: sglang-router, enable_multiple_frontends: false}
"""


def test_a_schema2_atom_engine_plans_its_aggregated_workers(tmp_path: Path) -> None:
    path = tmp_path / "s2.yaml"
    path.write_text(SCHEMA2)
    [variant] = load_variants(path)
    plan = place(variant)
    assert plan.backend == "atom" and plan.engine == "atom"
    worker = plan.role("aggregated-1")
    assert worker.argv[:3] == ["python3", "-m", ATOM_MODULE]
    line = shlex.join(worker.argv)
    assert "--kv_cache_dtype fp8 --max-num-seqs 64" in line
    assert "--tensor-parallel-size 4" in line and worker.gpu_ids == [4, 5, 6, 7]
    assert worker.parallel is not None and worker.parallel.gpus == 4


SIM_RUN = """\
name: atom-sim
model: {path: sim/tiny-model, container: none, precision: bf16}
resources: {gpu_type: sim, gpus_per_node: 8, prefill_nodes: 1, prefill_workers: 1,
  decode_nodes: 0, decode_workers: 1, gpus_per_prefill: 4, gpus_per_decode: 4}
backend:
  type: atom
  engine: sim
  connector: mooncake
  atom_config:
    prefill: {kv_cache_dtype: fp8, max-num-seqs: 16, no-enable_prefix_caching: true}
    decode: {kv_cache_dtype: fp8, max-num-seqs: 32, method: mtp, num-speculative-tokens: 2}
frontend: {type: sglang-router, enable_multiple_frontends: false}
benchmark: {type: sa-bench, isl: 64, osl: 8, concurrencies: "1x4", req_rate: inf,
  num_prompts_mult: 2, num_warmup_mult: 0}
"""


@pytest.mark.slow
def test_a_simulated_atom_prefill_decode_run_measures_every_point(tmp_path: Path) -> None:
    """The simulated engine runs what the ATOM settings ask for (TP from the GPUs, the batch
    limits, MTP on decode) behind the SGLang router, end to end on this machine."""
    from run.conftest import disagg, wait_gone

    path = tmp_path / "atom-sim.yaml"
    path.write_text(SIM_RUN)
    out = tmp_path / "run"
    done = disagg("run", path, "--local", "--out", out, "--json", timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    plan = Plan.read(out)
    decode = " ".join(plan.role("decode-0").argv)
    assert "--tp-size 4" in decode and "--max-running-requests 32" in decode
    assert "--speculative-algorithm mtp --speculative-num-steps 2" in decode
    summary = json.loads((out / "summary.json").read_text())
    assert [p["status"] for p in summary["points"]] == ["measured", "measured"]
    assert wait_gone([pid for pids in summary["role_pids"].values() for pid in pids]) == []
