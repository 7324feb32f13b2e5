"""Where frontends, nginx, etcd/NATS and the benchmark client run, and how many nodes the
job asks Slurm for: as srtctl lays them out.

srt-slurm sources (v1.0.68; the same code at 2.x):
- `FrontendStageMixin._compute_frontend_topology` (srtctl/cli/mixins/frontend_stage.py):
  one worker node or `enable_multiple_frontends: false` -> one frontend, no nginx, on the
  head or where `orchestrator_placement` says; else nginx on the head and one frontend on
  each other worker node, at most `1 + num_additional_frontends`.
- `Nodes.from_slurm` (srtctl/core/runtime.py): dedicated frontend / infra nodes from the
  front of the node list, a dedicated client node from its end, one shared node while
  `benchmark.colocate_with_frontend` (the default); the head is the frontend's node, else
  the first worker node.
- `generate_minimal_sbatch_script` (srtctl/cli/submit.py): `--nodes` is the workers' nodes
  plus 1 (colocated) or one per dedicated role.
- `placed_node` (srtctl/core/topology.py): `first_decode` / `last_decode` name the first /
  last decode worker's leader node; `_benchmark_node` (cli/mixins/benchmark_stage.py) puts
  the client there, `SRT_FRONTEND_HOST` names the frontend's node.
- `SrtConfig._validate_dedicated_node_placement` (core/schema.py): a dedicated node with a
  placement elsewhere is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.plan.model import Plan, RoleKind
from engines.engine_support import plan_text
from recipes.recipe_helpers import MINIMAL

WITHOUT_FRONTEND = MINIMAL[: MINIMAL.index("frontend:")]
SCHEMA2_DYNAMO = """\
schema: 2
name: tiny
model: {path: "hf:org/tiny", container: sglang, precision: bf16}
resources: {gpu_type: h100, gpus_per_node: 8}
engine: sglang
roles:
  prefill: {nodes: 1, workers: 1, args: {tp-size: 8}}
  decode: {nodes: 1, workers: 1, args: {tp-size: 8}}
benchmark: {type: sa-bench, isl: 1024, osl: 128, concurrencies: "1x4"}
frontend:
  type: dynamo
"""


def nodes_for(decode_nodes: int, frontend: str = "frontend:\n  type: dynamo\n") -> str:
    """One prefill node plus `decode_nodes` decode nodes (one TP8 worker each)."""
    resources = f"decode_nodes: {decode_nodes}\n  decode_workers: {decode_nodes}"
    return WITHOUT_FRONTEND.replace("decode_nodes: 1\n  decode_workers: 1", resources) + frontend


def ranks(plan: Plan, *names: str) -> list[list[int]]:
    return [plan.role(name).node_ranks for name in names]


CUSTOM = "benchmark:\n  type: custom\n  command: ./bench.sh\n"


def custom(text: str, bench: str) -> str:
    """`text` with its benchmark section replaced by `bench`."""
    before = text[: text.index("benchmark:")]
    after = text[text.index("frontend:") :]
    return before + bench + after


def test_one_node_runs_one_frontend_and_no_nginx(tmp_path: Path) -> None:
    one_node = WITHOUT_FRONTEND.replace(
        "  decode_nodes: 1\n", "  gpus_per_prefill: 4\n  gpus_per_decode: 4\n  decode_nodes: 0\n"
    ).replace("tp-size: 8", "tp-size: 4")
    plan = plan_text(tmp_path, one_node + "frontend:\n  type: dynamo\n")
    assert plan.nodes == plan.slurm.nodes == 1
    assert plan.stages[-1] == ["frontend"] and plan.serving_role == "frontend"
    assert not [role for role in plan.roles if role.name == "nginx"]


def test_nginx_on_the_head_and_frontends_on_the_other_nodes_capped_by_the_recipe(
    tmp_path: Path,
) -> None:
    plan = plan_text(tmp_path, nodes_for(3, "frontend:\n  num_additional_frontends: 1\n"))
    assert plan.nodes == 4
    assert plan.stages[-2:] == [["frontend-0", "frontend-1"], ["nginx"]]
    assert ranks(plan, "nginx", "frontend-0", "frontend-1") == [[0], [1], [2]]
    assert plan.serving_role == "nginx"


def test_frontends_capped_by_the_other_nodes(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, nodes_for(2))  # 1 + 9 wanted, two nodes besides the head
    assert ranks(plan, "nginx", "frontend-0", "frontend-1") == [[0], [1], [2]]


def test_multiple_frontends_disabled_runs_one_frontend_on_the_head(tmp_path: Path) -> None:
    text = nodes_for(2, "frontend:\n  enable_multiple_frontends: false\n")
    plan = plan_text(tmp_path, text)
    assert plan.serving_role == "frontend" and ranks(plan, "frontend") == [[0]]
    assert not [role for role in plan.roles if role.name == "nginx"]


@pytest.mark.parametrize("kind", ["dynamo", "sglang"])
def test_first_decode_puts_the_one_frontend_on_the_first_decode_node(
    tmp_path: Path, kind: str
) -> None:
    frontend = (
        f"frontend:\n  type: {kind}\n  enable_multiple_frontends: false\n"
        "  orchestrator_placement: first_decode\n"
    )
    plan = plan_text(tmp_path, nodes_for(2, frontend))
    serving = plan.role(plan.serving_role)
    assert serving.kind is RoleKind.ROUTER
    assert serving.node_ranks == plan.role("decode-0").node_ranks[:1] == [1]
    # a benchmark command is pointed there (srtctl's SRT_FRONTEND_HOST: `_public_api_node`)
    bench = plan_text(tmp_path, custom(nodes_for(2, frontend), CUSTOM)).role("bench")
    assert bench.env["SRT_FRONTEND_HOST"] == f"${{{serving.name}.host}}"
    assert bench.node_ranks == [0]  # the client stays on the head


def test_a_placement_srtctl_does_not_know_is_refused(tmp_path: Path) -> None:
    text = nodes_for(1, "frontend:\n  orchestrator_placement: middle\n")
    with pytest.raises(DisaggError, match="orchestrator_placement 'middle' is not a placement"):
        plan_text(tmp_path, text)


def test_a_dedicated_frontend_node_is_added_to_the_allocation(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, nodes_for(1, "frontend:\n  dedicated_node: true\n"))
    assert plan.nodes == plan.slurm.nodes == 3  # two worker nodes and the frontend's
    assert ranks(plan, "prefill-0", "decode-0") == [[1], [2]]
    # The head is the dedicated node, not a worker node: both worker nodes get a frontend.
    assert ranks(plan, "nginx", "frontend-0", "frontend-1") == [[0], [1], [2]]
    assert ranks(plan, "etcd", "nats") == [[0], [0]]


def test_a_dedicated_node_elsewhere_than_the_head_is_refused(tmp_path: Path) -> None:
    frontend = "frontend:\n  dedicated_node: true\n  orchestrator_placement: first_decode\n"
    with pytest.raises(DisaggError, match="reserves a node that"):
        plan_text(tmp_path, nodes_for(1, frontend))


def test_dedicated_etcd_nats_node_comes_first(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, nodes_for(2) + "infra:\n  etcd_nats_dedicated_node: true\n")
    assert plan.nodes == 4
    assert ranks(plan, "etcd", "nats", "prefill-0") == [[0], [0], [1]]
    assert ranks(plan, "nginx", "frontend-0", "frontend-1") == [[1], [2], [3]]
    assert not [i for i in plan.ignored if i["field"] == "infra.etcd_nats_dedicated_node"]
    # srtctl's client runs on the head (node 1); the in-process one stays on node 0, and says so
    assert "client-node" in [row["id"] for row in plan.differs]
    own = custom(nodes_for(2), CUSTOM) + "infra:\n  etcd_nats_dedicated_node: true\n"
    assert ranks(plan_text(tmp_path, own), "bench") == [[1]]


def test_a_dedicated_etcd_nats_node_is_reserved_under_any_frontend(tmp_path: Path) -> None:
    text = nodes_for(1, "frontend:\n  type: sglang\n  enable_multiple_frontends: false\n")
    plan = plan_text(tmp_path, text + "infra:\n  etcd_nats_dedicated_node: true\n")
    assert plan.nodes == 3 and ranks(plan, "prefill-0", "router") == [[1], [1]]
    [note] = [i for i in plan.ignored if i["field"] == "infra.etcd_nats_dedicated_node"]
    assert "reserved" in note["why"]


def test_a_dedicated_client_node_comes_last_and_runs_the_command(tmp_path: Path) -> None:
    bench = CUSTOM + "  client_dedicated_node: true\n"
    plan = plan_text(tmp_path, custom(nodes_for(1), bench))
    assert plan.nodes == 3 and ranks(plan, "prefill-0", "bench") == [[0], [2]]
    assert plan.role("bench").env["SRT_FRONTEND_HOST"] == "${nginx.host}"


def test_colocated_dedicated_roles_share_the_last_node(tmp_path: Path) -> None:
    bench = CUSTOM + "  client_dedicated_node: true\n"
    text = custom(nodes_for(1, "frontend:\n  dedicated_node: true\n"), bench)
    plan = plan_text(tmp_path, text)
    assert plan.nodes == 3
    assert ranks(plan, "prefill-0", "decode-0", "nginx", "bench") == [[0], [1], [2], [2]]
    apart_text = text.replace(
        "  client_dedicated_node: true\n",
        "  client_dedicated_node: true\n  colocate_with_frontend: false\n",
    )
    apart = plan_text(tmp_path, apart_text)
    assert apart.nodes == 4  # one node per dedicated role
    assert ranks(apart, "nginx", "prefill-0", "bench") == [[0], [1], [3]]


def test_the_client_on_the_last_decode_node(tmp_path: Path) -> None:
    bench = CUSTOM + "  client_placement: last_decode\n"
    plan = plan_text(tmp_path, custom(nodes_for(2), bench))
    assert plan.nodes == 3 and ranks(plan, "bench", "decode-1") == [[2], [2]]


def test_the_in_process_client_says_it_stays_on_node_0(tmp_path: Path) -> None:
    concurrencies = '  concurrencies: "1x4"\n'
    text = nodes_for(1).replace(concurrencies, concurrencies + "  client_dedicated_node: true\n")
    plan = plan_text(tmp_path, text)
    assert plan.nodes == 3 and ranks(plan, "bench") == [[0]]
    assert "client-node" in [row["id"] for row in plan.differs]
    assert not [i for i in plan.ignored if i["field"].startswith("benchmark.client")]


def test_schema2_placement_node(tmp_path: Path) -> None:
    placed = "  type: dynamo\n  placement:\n    node: dedicated\n"
    dedicated = SCHEMA2_DYNAMO.replace("  type: dynamo\n", placed)
    plan = plan_text(tmp_path, dedicated)
    assert plan.nodes == 3 and ranks(plan, "nginx", "prefill-0") == [[0], [1]]
    first = SCHEMA2_DYNAMO.replace(
        "  type: dynamo\n",
        "  type: dynamo\n  enable_multiple_frontends: false\n"
        "  placement:\n    node: first_decode\n",
    )
    plan = plan_text(tmp_path, first)
    assert plan.nodes == 2 and ranks(plan, "frontend", "decode-0") == [[1], [1]]
