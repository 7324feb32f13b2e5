"""`{node}` and `{node_id}` in worker environment values are filled per node, as srtctl does.

srt-slurm v1.0.68 cli/mixins/worker_stage.py (`start_worker`): each value of the mode's
`*_environment` and of the recipe's `environment` goes through `str.format_map` with
`node` = the Slurm name of the node the worker process runs on and `node_id` = that
node's index in `runtime.nodes.worker`; an unknown `{name}` is left as written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.launch.bindings import build_bindings, render_task
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.plan.worker_roles import fill_node_fields
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL

Write = Callable[..., Path]
NAMES = ["gpu-a01", "gpu-a02", "gpu-b17"]


@pytest.mark.parametrize(
    ("written", "planned"),
    [
        ("/tmp/cache-{node}", "/tmp/cache-${self.node}"),
        ("rank{node_id}-{node}", "rank${self.node_id}-${self.node}"),
        ("/tmp/dg-{job_id}", "/tmp/dg-{job_id}"),  # unknown names stay as written
        ("{{node}}", "{node}"),  # doubled braces are literal, as str.format reads them
        ("plain", "plain"),
    ],
)
def test_values_keep_srtctls_formatting(written: str, planned: str) -> None:
    assert fill_node_fields(written) == planned


@pytest.mark.parametrize("bad", ['{"name":"native"}', "{}", "{node_id:02d}", "open{"])
def test_a_value_srtctls_formatting_fails_on_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        fill_node_fields(bad)


def _plan(write: Write, env: str) -> Plan:
    text = MINIMAL.replace("resources:", "environment:\n  SHARED: 'n{node_id}'\nresources:")
    text = text.replace(
        "  decode_nodes: 1\n  decode_workers: 1\n", "  decode_nodes: 2\n  decode_workers: 1\n"
    ).replace("backend:\n", f"backend:\n  decode_environment:\n    {env}\n")
    (variant,) = load_variants(write(text))
    return place(variant)


def test_each_task_gets_its_nodes_name_and_worker_index(write: Write) -> None:
    plan = _plan(write, "CACHE: '/tmp/{node}/{node_id}'")
    decode = plan.role("decode-0")
    assert decode.env["CACHE"] == "/tmp/${self.node}/${self.node_id}"
    bindings = build_bindings(
        plan,
        addresses=["10.0.0.1", "10.0.0.2", "10.0.0.3"],
        ports={r.name: {f"{p}_port": 9000 + i for i, p in enumerate(r.ports)} for r in plan.roles},
        model_path="/m",
        draft_path="",
        run_dir=Path("/runs/r"),
        names=NAMES,
    )
    seen = {}
    for rank in decode.node_ranks:
        _, env = render_task(plan, decode, rank, bindings)
        seen[rank] = (env["CACHE"], env["SHARED"])
    assert seen == {1: ("/tmp/gpu-a02/1", "n1"), 2: ("/tmp/gpu-b17/2", "n2")}
    prefill = plan.role("prefill-0")
    _, env = render_task(plan, prefill, 0, bindings)
    assert env["SHARED"] == "n0" and "CACHE" not in env


def test_a_bad_value_is_refused_at_its_line(write: Write) -> None:
    with pytest.raises(DisaggError) as caught:
        _plan(write, "META: '{\"name\": 1}'")
    assert "decode_environment.META" in caught.value.message
    assert caught.value.location is not None and caught.value.location.line == 17


def test_the_recipes_environment_wins_over_the_roles_as_in_srtctl(write: Write) -> None:
    # start_worker sets the mode's env first and the recipe's `environment` after it
    plan = _plan(write, "SHARED: 'decode-{node}'")
    assert plan.role("decode-0").env["SHARED"] == "n${self.node_id}"
