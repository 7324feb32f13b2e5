"""What a `backend.type: mocker` (schema 2 `engine: mocker`) recipe plans: Dynamo's mocker as
the engine asked for, not a simulation; srt-slurm's flags; a typo or a flag that cannot run
refused at plan time with the field named."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from disagg.engines.mocker import MOCKER_FLAGS
from disagg.errors import UnsupportedRecipe
from disagg.plan.model import Plan, RoleKind
from disagg.plan.placement import place
from disagg.recipe.lint import Severity, lint_paths
from disagg.recipe.variants import load_variants
from run.conftest import disagg

from .engine_support import plan_text

DATA = Path(__file__).parent / "data" / "mocker"  # recipes written for these tests
AGG = DATA / "agg.yaml"
TRACE_AGG = DATA / "trace-agg.yaml"

MOCKER = """\
name: mock
model:
  path: hf:org/tiny
  container: dynamo
  precision: bf16
resources:
  gpu_type: gb200
  gpus_per_node: 4
  prefill_nodes: 1
  prefill_workers: 1
  decode_nodes: 1
  decode_workers: 1
backend:
  type: mocker
  speedup_ratio: 10
  max_num_seqs: 128
  mocker_config:
    prefill:
      max-num-batched-tokens: 4096
    decode:
      max-num-seqs: 32
      enable-prefix-caching: false
benchmark:
  type: sa-bench
  isl: 128
  osl: 16
  concurrencies: "1x2"
frontend:
  type: dynamo
  enable_multiple_frontends: false
"""


def command(plan: Plan, role: str) -> str:
    return " ".join(plan.role(role).argv)


def test_an_aggregated_mocker_recipe_runs_the_mocker_as_its_engine() -> None:
    [variant] = load_variants(AGG)
    plan = place(variant)
    assert plan.engine == "mocker" and not plan.simulated and plan.simulator is None
    assert plan.emulates == "vllm"  # backend.engine_type
    # its `request_plane: nats` starts a real NATS first; file discovery stands in for etcd
    assert plan.frontend == "dynamo" and plan.stages == [["nats"], ["aggregated-0"], ["frontend"]]
    worker = command(plan, "aggregated-0")
    assert worker.startswith("${run.python} -m dynamo.mocker --model-path ${model.path}")
    # srt-slurm's values where the recipe sets none, the recipe's where it does
    for flag in (
        "--engine-type vllm",
        "--speedup-ratio 100.0",
        "--num-gpu-blocks-override 16384",
        "--max-num-seqs 256",
        "--max-num-batched-tokens 8192",
        "--discovery-backend file --request-plane nats",
    ):
        assert flag in worker
    assert "--disaggregation-mode" not in worker
    # The mocker runs from this environment's ai-dynamo: no image is used or staged.
    assert plan.role("aggregated-0").container_image is None
    assert plan.slurm.container_image is None and plan.staging.containers == []
    # The hub model is staged like any engine's (the mocker reads its tokenizer).
    assert [m.repo_id for m in plan.staging.models] == ["org/tiny-chat"]
    assert not plan.staging.skip
    ignored = {item["field"]: item["why"] for item in plan.ignored}
    assert ignored["services.etcd"].startswith("mocker workers: Dynamo discovers them")
    assert "ai-dynamo 1.6.1" in ignored["dynamo.source"]
    assert "not the image's" in ignored["model.container"]


def test_a_trace_recipe_plans_its_cluster_trace_to_be_read_in_the_job() -> None:
    """As srtctl, the trace on the cluster's filesystem is read when the job runs."""
    [variant] = load_variants(TRACE_AGG)
    plan = place(variant)
    trace = plan.bench.trace
    assert plan.engine == "mocker" and trace is not None and trace.at_run_time
    assert trace.written == "/traces/chat-sessions/dataset.jsonl"
    assert trace.path == "/lustre/team/shared/traces/chat-sessions/dataset.jsonl"


def test_a_trace_in_a_container_mount_is_read_from_the_host_side(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    lines = [f'{{"timestamp": {i * 10}, "input_length": 64, "output_length": 8}}' for i in range(3)]
    (traces / "t.jsonl").write_text("\n".join(lines) + "\n")
    text = TRACE_AGG.read_text().replace("/lustre/team/shared/traces", str(traces))
    text = text.replace("/traces/chat-sessions/dataset.jsonl", "/traces/t.jsonl")
    plan = plan_text(tmp_path, text)
    assert plan.engine == "mocker" and [p.num_prompts for p in plan.bench.points] == [3]
    worker = command(plan, "aggregated-0")
    assert "--num-gpu-blocks-override 8192 " in worker  # the role's value over srt-slurm's
    assert "--max-num-seqs 128 " in worker and "--max-num-batched-tokens 16384" in worker


def test_prefill_and_decode_mockers_take_their_modes_and_the_role_wins(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, MOCKER)
    prefill, decode = command(plan, "prefill-0"), command(plan, "decode-0")
    assert "--disaggregation-mode prefill --bootstrap-ports ${self.bootstrap_port}" in prefill
    # its bootstrap port, and Dynamo's system server on a port of its own (srtctl's sys_port)
    assert plan.role("prefill-0").ports == ["http", "bootstrap", "system"]
    assert "--disaggregation-mode decode" in decode and "--bootstrap-ports" not in decode
    assert "--speedup-ratio 10.0" in prefill and "--speedup-ratio 10.0" in decode
    assert "--max-num-seqs 128" in prefill and "--max-num-batched-tokens 4096" in prefill
    # one value per flag: the role's replaces the engine-wide knob
    assert decode.count("--max-num-seqs") == 1 and "--max-num-seqs 32" in decode
    assert "--no-enable-prefix-caching" in decode  # `false` keeps its meaning
    for role in ("prefill-0", "decode-0"):
        env = plan.role(role).env
        assert env["DYN_FILE_KV"] == "${run.dir}/dynamo-discovery"
        assert env["DYN_SYSTEM_PORT"] == "${self.system_port}"  # its own port (srtctl sys_port)
        assert plan.role(role).health is not None and plan.role(role).health.path == "/health"  # type: ignore[union-attr]
    assert not any(role.kind is RoleKind.SERVICE for role in plan.roles)


def test_a_schema_2_mocker_recipe_plans_the_same_way(tmp_path: Path) -> None:
    text = """\
schema: 2
name: mock2
model: {path: "hf:org/tiny", container: dynamo, precision: bf16}
resources: {gpu_type: gb200, gpus_per_node: 4}
engine: {type: mocker, engine_type: sglang, speedup_ratio: 5}
roles:
  prefill: {nodes: 1, workers: 1, args: {max-num-seqs: 8}}
  decode: {nodes: 1, workers: 1}
frontend: {type: dynamo, enable_multiple_frontends: false}
benchmark: {type: sa-bench, isl: 64, osl: 8, concurrencies: "1"}
"""
    plan = plan_text(tmp_path, text)
    assert plan.engine == "mocker" and plan.emulates == "sglang" and not plan.simulated
    assert "--engine-type sglang" in command(plan, "prefill-0")
    assert "--max-num-seqs 8" in command(plan, "prefill-0")
    assert "--speedup-ratio 5.0" in command(plan, "decode-0")
    with pytest.raises(UnsupportedRecipe) as caught:
        plan_text(tmp_path, text.replace("max-num-seqs: 8", "max-num-seq: 8"))
    assert caught.value.what.startswith("roles.prefill.args.max-num-seq (not a flag of")
    assert caught.value.location is not None and caught.value.location.line == 7


def test_plan_set_flags_are_listed_as_ignored(tmp_path: Path) -> None:
    text = MOCKER.replace("      max-num-batched-tokens: 4096\n", "      model-path: /model\n")
    plan = plan_text(tmp_path, text)
    [note] = [i for i in plan.ignored if i["field"].endswith("prefill.model-path")]
    assert note["field"] == "backend.mocker_config.prefill.model-path"
    assert "set by the plan" in note["why"]
    assert "/model" not in command(plan, "prefill-0")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("max-num-batched-tokens: 4096", "max-num-batched-token: 4096"),
            "backend.mocker_config.prefill.max-num-batched-token (not a flag of dynamo.mocker "
            "(ai-dynamo 1.6.1); did you mean max-num-batched-tokens?)",
        ),
        (
            ("max-num-batched-tokens: 4096", "ais-perf-model: true"),
            "backend.mocker_config.prefill.ais-perf-model (needs AISimulate's",
        ),
        (
            ("max-num-batched-tokens: 4096", "is-prefill-worker: true"),
            "backend.mocker_config.prefill.is-prefill-worker (deprecated;",
        ),
        (("speedup_ratio: 10", "engine_type: tgi"), "backend.engine_type tgi (the mocker emulates"),
        (("type: dynamo", "type: smg"), "backend type mocker behind frontend smg"),
        (("type: mocker", "type: mocker\n  engine: sim"), "backend.engine sim with backend type"),
    ],
)
def test_what_the_mocker_cannot_run_is_refused_at_plan_time(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    with pytest.raises(UnsupportedRecipe) as caught:
        plan_text(tmp_path, MOCKER.replace(*change))
    assert str(caught.value).splitlines()[0].find(f"unsupported: {expected}") >= 0


def test_lint_does_not_ask_mocker_workers_to_fill_their_gpus() -> None:
    report = lint_paths([AGG])
    assert all("(mocker)" not in f.message for f in report.findings)
    assert report.count(Severity.ERROR) == 0


def test_the_flag_table_is_the_installed_mockers() -> None:
    """Every flag `python -m dynamo.mocker --help` lists, and no other."""
    done = subprocess.run(
        [sys.executable, "-m", "dynamo.mocker", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed: set[str] = set()
    options = done.stdout[done.stdout.index("options:") :]
    for line in options.splitlines():
        head = re.match(r"^  (--?\S.*?)(?:\s{2,}|$)", line)
        if head:
            listed |= set(re.findall(r"--([a-z0-9][a-z0-9-]*)", head.group(1)))
    assert listed - {"help"} == MOCKER_FLAGS


def test_plan_output_says_engine_mocker_and_what_it_emulates_never_simulated() -> None:
    shown = disagg("plan", AGG)
    assert shown.returncode == 0, shown.stderr
    assert "mocker (emulating vllm), aggregated" in shown.stdout
    assert "simulated" not in shown.stdout.replace("AISimulate", "")
    done = disagg("plan", AGG, "--json")
    [variant] = json.loads(done.stdout)["variants"]
    assert variant["engine"] == "mocker" and variant["emulates"] == "vllm"
    assert variant["simulated"] is False and variant["simulator"] is None
