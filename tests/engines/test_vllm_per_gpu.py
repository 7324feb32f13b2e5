"""vLLM's deprecated `backend.dp_launch_mode: per_gpu` under Dynamo, as srt-slurm launches it.

The reference is srt-slurm's `srtctl/backends/vllm.py` (`endpoints_to_processes`, the
per-GPU branch of `build_worker_command`) and its tests `test_dp_per_gpu_*`: one
`dynamo.vllm` process per GPU, each with one GPU and its global `--data-parallel-rank`,
all meeting at the first rank's node and DP RPC port, sharing one NIXL port block.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.errors import UnsupportedRecipe
from disagg.plan.model import Plan, RoleKind
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from engines.engine_support import plan_text, worker_tasks
from engines.test_vllm_dynamo import dynamo_vllm, nodes, value

PER_GPU = "  dp_launch_mode: per_gpu\n"
DEP8 = (
    "    decode:\n      data-parallel-size: 8\n      data-parallel-rpc-port: 13345\n"
    "      data-parallel-hybrid-lb: true\n      enable-expert-parallel: true\n"
    "    prefill:\n      tensor-parallel-size: 4\n"
)
# decode: 2 nodes of 4 GPUs (node ranks 1 and 2); prefill: one node (rank 0)
TWO_NODE_DECODE = nodes(2, "decode") + "  prefill_nodes: 1\n  prefill_workers: 1\n"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples/dynamo/sim-1p1d-vllm-dynamo-per-gpu.yaml"


def decode_tasks(plan: Plan) -> list[tuple[str, int, list[int], list[str], dict[str, str]]]:
    """(role, node rank, GPUs, argv, env) of every decode process, placeholders bound."""
    return [
        (role.name, rank, role.gpu_ids, argv, env)
        for role, rank, argv, env in worker_tasks(plan)
        if role.kind is RoleKind.DECODE
    ]


def test_per_gpu_runs_one_dynamo_process_per_gpu_with_its_global_rank(tmp_path: Path) -> None:
    """srt-slurm `test_dp_per_gpu_mode_creates_per_gpu_processes` and
    `test_dp_per_gpu_mode_command_includes_dp_flags`: DP8 on two 4-GPU nodes is eight
    processes, node by node and GPU by GPU, ranks 0-7."""
    plan = plan_text(tmp_path, dynamo_vllm(DEP8, TWO_NODE_DECODE, PER_GPU))
    tasks = decode_tasks(plan)
    names = ["decode-0", *(f"decode-0-dp{r}" for r in range(1, 8))]
    assert [name for name, *_ in tasks] == names
    assert [(rank, gpus) for _, rank, gpus, _, _ in tasks] == [
        (node, [gpu]) for node in (1, 2) for gpu in range(4)
    ]
    for dp_rank, (_, _, gpus, argv, env) in enumerate(tasks):
        assert argv[:3] == ["python3", "-m", "dynamo.vllm"]
        assert value(argv, "--data-parallel-rank") == str(dp_rank)
        assert value(argv, "--data-parallel-size") == "8"
        # every rank meets at the first rank's node (decode's first node: 10.0.0.2)
        assert value(argv, "--data-parallel-address") == "10.0.0.2"
        assert value(argv, "--disaggregation-mode") == "decode"
        assert env["CUDA_VISIBLE_DEVICES"] == str(gpus[0])
        # the recipe's hybrid-lb passes through as written (srt-slurm pops it only per_node)
        assert argv.count("--data-parallel-hybrid-lb") == 1
        for derived in ("--data-parallel-size-local", "--data-parallel-start-rank", "--headless"):
            assert derived not in argv
    # one DP RPC port and one NIXL side-channel base for the worker, on the first rank
    rpc = {value(argv, "--data-parallel-rpc-port") for *_, argv, _ in tasks}
    nixl = {env["VLLM_NIXL_SIDE_CHANNEL_PORT"] for *_, env in tasks}
    assert len(rpc) == 1 and len(nixl) == 1 and rpc != {"13345"}
    own = [
        "kv_events",
        "vllm*50",
        "system",
    ]  # each process's own (srtctl's get_process_environment)
    assert plan.role("decode-0").ports == ["http", "nixl*8", "dp_rpc", *own]
    assert all(plan.role(n).ports == ["http", *own] for n in names[1:])
    # NIXL's side channel binds each process's own node
    hosts = [env["VLLM_NIXL_SIDE_CHANNEL_HOST"] for *_, env in tasks]
    assert hosts == ["10.0.0.2"] * 4 + ["10.0.0.3"] * 4
    systems = {env["DYN_SYSTEM_PORT"] for *_, env in tasks}
    assert len(systems) == 8
    # the prefill worker without data-parallel-size keeps one process on its node
    [prefill] = [r for r in plan.roles if r.kind is RoleKind.PREFILL]
    assert prefill.gpu_ids == [0, 1, 2, 3] and "--data-parallel-rank" not in prefill.argv
    assert plan.total_gpus == 12
    assert "vllm-per-gpu-written-ranks" not in [row["id"] for row in plan.differs]


def test_written_rank_flags_are_left_out_and_the_plan_says_it_differs(tmp_path: Path) -> None:
    """srt-slurm passes a written headless/local size on to every per-GPU process; the plan
    derives each process's rank alone, lists the setting as ignored and names the row."""
    roles = "    aggregated:\n      data-parallel-size: 4\n      headless: true\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(1, "agg"), PER_GPU))
    assert all("--headless" not in argv for _, _, argv, _ in worker_tasks(plan))
    assert "vllm-per-gpu-written-ranks" in [row["id"] for row in plan.differs]
    assert "backend.vllm_config.aggregated.headless" in [n["field"] for n in plan.ignored]


def test_per_gpu_on_one_node_and_aggregated(tmp_path: Path) -> None:
    """An aggregated DP4 worker on one node: four processes, ranks 0-3, GPUs 0-3."""
    roles = "    aggregated:\n      data-parallel-size: 4\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(1, "agg"), PER_GPU))
    tasks = [t for t in worker_tasks(plan) if t[0].kind is RoleKind.AGGREGATED]
    assert [(role.name, role.gpu_ids) for role, *_ in tasks] == [
        ("aggregated-0", [0]),
        ("aggregated-0-dp1", [1]),
        ("aggregated-0-dp2", [2]),
        ("aggregated-0-dp3", [3]),
    ]
    assert [value(argv, "--data-parallel-rank") for _, _, argv, _ in tasks] == list("0123")
    assert all("--disaggregation-mode" not in argv for _, _, argv, _ in tasks)


@pytest.mark.parametrize(
    ("roles", "what"),
    [
        # srt-slurm gives each rank one GPU: a TP2 replica cannot start there
        (
            "    aggregated:\n      data-parallel-size: 2\n      tensor-parallel-size: 2\n",
            "tensor-parallel-size x pipeline-parallel-size 2 with backend.dp_launch_mode per_gpu",
        ),
        # a rank per GPU: DP2 on a 4-GPU worker would number ranks past the DP size
        (
            "    aggregated:\n      data-parallel-size: 2\n",
            "data-parallel-size 2 with backend.dp_launch_mode per_gpu on a worker of 4 GPUs",
        ),
    ],
)
def test_per_gpu_layouts_that_cannot_start_are_refused(
    tmp_path: Path, roles: str, what: str
) -> None:
    with pytest.raises(UnsupportedRecipe, match=what):
        plan_text(tmp_path, dynamo_vllm(roles, nodes(1, "agg"), PER_GPU))


def test_per_node_stays_the_default_layout(tmp_path: Path) -> None:
    """Without the setting (or with per_node) the worker is one process per node."""
    for backend in ("", "  dp_launch_mode: per_node\n"):
        plan = plan_text(tmp_path, dynamo_vllm(DEP8, TWO_NODE_DECODE, backend))
        assert [t[0] for t in decode_tasks(plan)] == ["decode-0", "decode-0"]


def test_hybrid_lb_on_a_multi_node_dynamo_worker_passes_through(tmp_path: Path) -> None:
    """srt-slurm renders a written hybrid-lb on a multi-node Dynamo worker without DP as
    it is (beside the tensor ranks over nodes), so the plan does not refuse it."""
    roles = "    aggregated:\n      tensor-parallel-size: 8\n      data-parallel-hybrid-lb: true\n"
    plan = plan_text(tmp_path, dynamo_vllm(roles, nodes(2, "agg")))
    argvs = [argv for role, _, argv, _ in worker_tasks(plan) if role.name == "aggregated-0"]
    assert len(argvs) == 2
    for rank, argv in enumerate(argvs):
        assert argv.count("--data-parallel-hybrid-lb") == 1
        assert value(argv, "--node-rank") == str(rank)


def test_the_per_gpu_example_plans_one_mocker_per_gpu(tmp_path: Path) -> None:
    """The shipped example, simulated: each per-GPU process is one Dynamo mocker."""
    model = tmp_path / "tiny-llama"
    model.mkdir()
    (model / "tokenizer.json").write_text("{}")
    (model / "config.json").write_text("{}")
    path = tmp_path / "per-gpu.yaml"
    path.write_text(EXAMPLE.read_text().replace("/tmp/tiny-llama", str(model)))
    [variant] = load_variants(path)
    plan = place(variant)
    workers = [r for r in plan.roles if r.kind in (RoleKind.PREFILL, RoleKind.DECODE)]
    assert [(r.name, r.gpu_ids) for r in workers] == [
        ("prefill-0", [0]),
        ("prefill-0-dp1", [1]),
        ("decode-0", [2]),
        ("decode-0-dp1", [3]),
    ]
    assert all(r.argv[1:3] == ["-m", "dynamo.mocker"] for r in workers)
    assert plan.simulated and plan.total_gpus == 4
