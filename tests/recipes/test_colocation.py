"""vLLM's prefill/decode colocation, laid out as srt-slurm v1.0.68 lays it out.

`VLLMProtocol.should_colocate_prefill_decode` (backends/vllm.py): with
`allow_prefill_decode_colocation`, prefill and decode are packed together when all the
workers' GPUs fit one node, or always with `allow_prefill_decode_colocation_across_nodes`.
`allocate_endpoints` (core/topology.py) then places decode workers straight after the
prefill workers, on the GPUs they leave free, and `SrtConfig.total_nodes` (core/schema.py)
sizes the job by the workers' GPUs over GPUs per node, whatever the node counts say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.recipe.lint import Severity, lint_paths
from disagg.recipe.variants import load_variants

RECIPE = """\
name: colocated
model: {path: hf:org/tiny, container: vllm, precision: fp4}
resources:
  gpu_type: b200
  gpus_per_node: 8
  prefill_nodes: 1
  decode_nodes: 1
  prefill_workers: 1
  decode_workers: DECODE_WORKERS
  gpus_per_prefill: PREFILL_GPUS
  gpus_per_decode: 4
frontend: {type: dynamo, enable_multiple_frontends: false}
dynamo: {install: false}
backend:
  type: vllm
KNOBS  vllm_config:
    prefill: {tensor-parallel-size: PREFILL_GPUS}
    decode: {tensor-parallel-size: 4}
benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: "1"}
"""
ALLOW = "  allow_prefill_decode_colocation: true\n"
ACROSS = ALLOW + "  allow_prefill_decode_colocation_across_nodes: true\n"


def _recipe(tmp_path: Path, knobs: str, decode: int = 1, prefill_gpus: int = 2) -> Path:
    text = RECIPE.replace("KNOBS", knobs).replace("DECODE_WORKERS", str(decode))
    path = tmp_path / "recipe.yaml"
    path.write_text(text.replace("PREFILL_GPUS", str(prefill_gpus)))
    return path


def _plan(path: Path) -> Plan:
    [variant] = load_variants(path)
    return place(variant)


def _layout(plan: Plan) -> dict[str, tuple[list[int], list[int]]]:
    return {r.name: (r.node_ranks, r.gpu_ids) for r in plan.roles if r.gpu_ids}


def test_workers_that_fit_one_node_share_it_and_the_job_has_one_node(tmp_path: Path) -> None:
    plan = _plan(_recipe(tmp_path, ALLOW))
    assert plan.nodes == 1
    assert _layout(plan) == {"prefill-0": ([0], [0, 1]), "decode-0": ([0], [2, 3, 4, 5])}
    assert not [i for i in plan.ignored if "colocation" in i["field"]]
    apart = _plan(_recipe(tmp_path, ""))  # without the knob each side keeps its nodes
    assert apart.nodes == 2 and _layout(apart)["decode-0"] == ([1], [0, 1, 2, 3])


def test_across_nodes_packs_in_order_onto_the_nodes_the_gpus_fill(tmp_path: Path) -> None:
    """1 x 4 + 3 x 4 GPUs: two nodes, decode-0 beside prefill-0 (the InferenceX layout that
    was refused: 3 decode workers x 4 GPUs on `decode_nodes: 1`)."""
    plan = _plan(_recipe(tmp_path, ACROSS, decode=3, prefill_gpus=4))
    assert plan.nodes == 2
    assert _layout(plan) == {
        "prefill-0": ([0], [0, 1, 2, 3]),
        "decode-0": ([0], [4, 5, 6, 7]),
        "decode-1": ([1], [0, 1, 2, 3]),
        "decode-2": ([1], [4, 5, 6, 7]),
    }
    report = lint_paths([_recipe(tmp_path, ACROSS, decode=3, prefill_gpus=4)])
    assert not [f for f in report.findings if f.severity is Severity.ERROR]


def test_without_across_nodes_workers_beyond_one_node_are_not_packed(tmp_path: Path) -> None:
    with pytest.raises(DisaggError, match=r"3 decode worker.* need 2 node.*decode_nodes is 1"):
        _plan(_recipe(tmp_path, ALLOW, decode=3, prefill_gpus=4))


def test_a_whole_node_worker_after_a_partial_one_is_refused(tmp_path: Path) -> None:
    """srtctl would hand decode-0 the node prefill-0 started on, GPUs and all."""
    path = _recipe(tmp_path, ACROSS, prefill_gpus=4)
    path.write_text(
        path.read_text()
        .replace("gpus_per_decode: 4", "gpus_per_decode: 8")
        .replace("decode: {tensor-parallel-size: 4}", "decode: {tensor-parallel-size: 8}")
    )
    with pytest.raises(DisaggError, match="decode worker 0 needs whole nodes") as caught:
        _plan(path)
    assert caught.value.location is not None
