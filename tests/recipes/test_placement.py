"""Placement: roles on node ranks and GPU subsets, commands, points and models to stage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.cluster import ClusterProfile, load_profile
from disagg.errors import DisaggError
from disagg.plan.model import Plan, RoleKind
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL

Write = Callable[..., Path]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plan_of(write: Write, text: str, profile: ClusterProfile | None = None) -> Plan:
    (variant,) = load_variants(write(text))
    return place(variant, profile)


def with_resources(**fields: int) -> str:
    lines = "\n".join(f"  {key}: {value}" for key, value in fields.items())
    start = MINIMAL.index("resources:")
    end = MINIMAL.index("backend:")
    return MINIMAL[:start] + f"resources:\n  gpu_type: h100\n{lines}\n" + MINIMAL[end:]


def layout(plan: Plan) -> list[tuple[str, list[int], list[int]]]:
    return [(r.name, r.node_ranks, r.gpu_ids) for r in plan.roles]


ALL8 = list(range(8))


def test_1p1d_on_two_nodes(write: Write) -> None:
    plan = plan_of(write, MINIMAL)
    assert plan.nodes == 2 and plan.disaggregated
    assert layout(plan) == [
        ("prefill-0", [0], ALL8),
        ("decode-0", [1], ALL8),
        ("router", [0], []),
        ("bench", [0], []),
    ]
    assert (plan.prefill_gpus, plan.decode_gpus, plan.total_gpus) == (8, 8, 16)
    prefill = plan.role("prefill-0")
    # and a pinned --nccl-port each, as srt-slurm's SGLang workers (tests/engines), and the
    # DYN_SYSTEM_PORT srtctl's launcher gives every worker
    assert prefill.ports == ["http", "bootstrap", "nccl", "system"]
    assert plan.role("decode-0").ports == ["http", "nccl", "system"]
    assert plan.role("router").ports == ["http", "metrics"]
    assert plan.role("bench").argv == []


def test_1p2d(write: Write) -> None:
    text = with_resources(
        gpus_per_node=8, prefill_nodes=1, prefill_workers=1, decode_nodes=2, decode_workers=2
    )
    plan = plan_of(write, text)
    assert layout(plan)[:3] == [
        ("prefill-0", [0], ALL8),
        ("decode-0", [1], ALL8),
        ("decode-1", [2], ALL8),
    ]
    router = plan.role("router").argv
    assert router.count("--decode") == 2 and "--pd-disaggregation" in router


def test_multi_node_worker_gets_dist_init(write: Write) -> None:
    text = with_resources(
        gpus_per_node=4, prefill_nodes=2, prefill_workers=2, decode_nodes=2, decode_workers=1
    )
    plan = plan_of(write, text)
    decode = plan.role("decode-0")
    assert decode.node_ranks == [2, 3] and decode.gpu_ids == [0, 1, 2, 3]
    assert decode.total_gpus == 8 and "dist_init" in decode.ports
    argv = decode.argv
    assert argv[argv.index("--nnodes") + 1] == "${self.nnodes}"
    assert argv[argv.index("--node-rank") + 1] == "${self.node_rank}"
    assert argv[argv.index("--dist-init-addr") + 1] == "${self.addr}"
    assert "--nnodes" not in plan.role("prefill-0").argv


def test_workers_share_a_node_on_gpu_subsets(write: Write) -> None:
    text = with_resources(
        gpus_per_node=8,
        prefill_nodes=2,
        prefill_workers=6,
        decode_nodes=0,
        decode_workers=2,
    )
    plan = plan_of(write, text)
    assert plan.nodes == 2
    assert layout(plan)[:8] == [
        ("prefill-0", [0], [0, 1]),
        ("prefill-1", [0], [2, 3]),
        ("prefill-2", [0], [4, 5]),
        ("prefill-3", [0], [6, 7]),
        ("prefill-4", [1], [0, 1]),
        ("prefill-5", [1], [2, 3]),
        ("decode-0", [1], [4, 5]),
        ("decode-1", [1], [6, 7]),
    ]


def test_explicit_gpus_per_worker_leave_the_rest_idle(write: Write) -> None:
    text = with_resources(
        gpus_per_node=8,
        prefill_nodes=1,
        prefill_workers=1,
        gpus_per_prefill=4,
        decode_nodes=1,
        decode_workers=1,
    )
    plan = plan_of(write, text)
    assert layout(plan)[:2] == [("prefill-0", [0], [0, 1, 2, 3]), ("decode-0", [1], ALL8)]


def test_spread_workers_give_each_partial_node_worker_a_node(write: Write) -> None:
    """srtctl's `allocate_endpoints(spread_workers=True)`: a worker smaller than a node
    gets a node of its own (its other GPUs idle); without it the two decode workers
    would share node 1 and node 2 would be empty."""
    fields = dict(
        gpus_per_node=8,
        prefill_nodes=1,
        prefill_workers=1,
        gpus_per_prefill=4,
        decode_nodes=2,
        decode_workers=2,
        gpus_per_decode=4,
    )
    spread = with_resources(**fields).replace(
        "resources:\n", "resources:\n  spread_workers: true\n"
    )
    plan = plan_of(write, spread)
    assert plan.nodes == 3
    assert layout(plan)[:4] == [
        ("prefill-0", [0], [0, 1, 2, 3]),
        ("decode-0", [1], [0, 1, 2, 3]),
        ("decode-1", [2], [0, 1, 2, 3]),
        ("router", [0], []),
    ]
    assert not [item for item in plan.ignored if "spread" in item["field"]]
    packed = plan_of(write, with_resources(**fields))
    assert [r.node_ranks for r in packed.roles[:3]] == [[0], [1], [1]]


def test_spread_workers_need_a_node_per_worker(write: Write) -> None:
    """Spread over fewer declared nodes than workers: the located layout error, as srtctl
    fails ("Caller must reserve enough nodes")."""
    text = with_resources(
        gpus_per_node=8,
        prefill_nodes=1,
        prefill_workers=2,
        gpus_per_prefill=4,
        decode_nodes=1,
        decode_workers=1,
    ).replace("resources:\n", "resources:\n  spread_workers: true\n")
    with pytest.raises(DisaggError, match="need 2 node"):
        plan_of(write, text)


def test_aggregated(write: Write) -> None:
    text = with_resources(gpus_per_node=8, agg_nodes=1, agg_workers=2).replace(
        "    prefill:\n      tp-size: 8\n    decode:\n      tp-size: 8\n",
        "    aggregated:\n      tp-size: 4\n",
    )
    plan = plan_of(write, text)
    assert not plan.disaggregated
    assert layout(plan)[:2] == [
        ("aggregated-0", [0], [0, 1, 2, 3]),
        ("aggregated-1", [0], [4, 5, 6, 7]),
    ]
    assert plan.decode_gpus == 8 and plan.prefill_gpus == 0
    router = plan.role("router").argv
    assert "--worker-urls" in router and "--pd-disaggregation" not in router
    assert "--disaggregation-mode" not in plan.role("aggregated-0").argv


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {
                "gpus_per_node": 8,
                "prefill_nodes": 1,
                "prefill_workers": 3,
                "gpus_per_prefill": 4,
                "decode_nodes": 1,
                "decode_workers": 1,
            },
            "need 2 node(s) of 8 GPUs, but resources.prefill_nodes is 1",
        ),
        (
            {
                "gpus_per_node": 8,
                "prefill_nodes": 1,
                "prefill_workers": 1,
                "decode_nodes": 0,
                "decode_workers": 1,
            },
            "do not fit on the GPUs left free",
        ),
        (
            {
                "gpus_per_node": 8,
                "prefill_nodes": 2,
                "prefill_workers": 1,
                "gpus_per_prefill": 12,
                "decode_nodes": 1,
                "decode_workers": 1,
            },
            "not a whole number of nodes",
        ),
        (
            {
                "gpus_per_node": 8,
                "prefill_nodes": 1,
                "prefill_workers": 0,
                "decode_nodes": 1,
                "decode_workers": 1,
            },
            "needs resources.prefill_workers >= 1",
        ),
    ],
)
def test_impossible_layouts_are_located_errors(
    write: Write, fields: dict[str, int], message: str
) -> None:
    with pytest.raises(DisaggError) as caught:
        plan_of(write, with_resources(**fields))
    assert message in caught.value.message
    assert caught.value.location is not None and caught.value.location.line is not None


def test_sglang_worker_command(write: Write) -> None:
    text = MINIMAL.replace(
        "    prefill:\n      tp-size: 8\n",
        "    prefill:\n      tp-size: 8\n      model-path: /model/\n      port: 1\n"
        "      trust-remote-code: true\n      disable-radix-cache: false\n"
        "      cuda-graph-bs: [1, 2]\n      json-model-override-args: {a: 1}\n",
    )
    plan = plan_of(write, text)
    argv = plan.role("prefill-0").argv
    assert argv[:3] == ["python3", "-m", "sglang.launch_server"]
    assert argv[argv.index("--model-path") + 1] == "${model.path}" and "/model/" not in argv
    assert argv[argv.index("--port") + 1] == "${self.http_port}" and argv.count("--port") == 1
    assert argv[argv.index("--disaggregation-mode") + 1] == "prefill"
    assert argv[argv.index("--disaggregation-bootstrap-port") + 1] == "${self.bootstrap_port}"
    assert "--trust-remote-code" in argv and "--disable-radix-cache" not in argv
    assert argv[argv.index("--cuda-graph-bs") + 1 : argv.index("--cuda-graph-bs") + 3] == ["1", "2"]
    assert argv[argv.index("--json-model-override-args") + 1] == '{"a": 1}'
    # srtctl serves the basename of the model path (srt-slurm core/schema.py
    # SrtConfig.served_model_name; backends/sglang.py get_served_model_name)
    assert argv[argv.index("--served-model-name") + 1] == "tiny"
    assert plan.engine == "sglang" and not plan.simulated and not plan.staging.skip


def test_sim_engine_uses_the_same_flags(write: Write) -> None:
    real = plan_of(write, MINIMAL)
    sim = plan_of(write, MINIMAL.replace("backend:\n", "backend:\n  engine: sim\n"))
    assert sim.engine == "sim" and sim.simulated and sim.staging.skip
    assert sim.staging.models == real.staging.models  # still listed for display
    for name in ("prefill-0", "decode-0"):
        assert sim.role(name).argv[:4] == ["${run.python}", "-m", "disagg", "sim-engine"]
        assert sim.role(name).argv[4:] == real.role(name).argv[3:]
        assert sim.role(name).health is not None
    assert sim.role("prefill-0").health.deadline_s == 60  # type: ignore[union-attr]
    assert real.role("prefill-0").health.deadline_s == 600  # type: ignore[union-attr]


def test_health_check_from_recipe(write: Write) -> None:
    text = MINIMAL + "health_check:\n  max_attempts: 30\n  interval_seconds: 5\n"
    assert plan_of(write, text).role("decode-0").health.deadline_s == 150  # type: ignore[union-attr]


def test_wrong_disaggregation_mode_is_an_error(write: Write) -> None:
    text = MINIMAL.replace(
        "    decode:\n      tp-size: 8\n", "    decode:\n      disaggregation-mode: prefill\n"
    )
    with pytest.raises(DisaggError, match="decode workers are configured with"):
        plan_of(write, text)


def test_environment_reaches_roles_but_not_gpu_visibility(write: Write) -> None:
    text = MINIMAL.replace(
        "backend:\n", "environment:\n  A: '1'\nbackend:\n  decode_environment:\n    B: 2\n"
    )
    plan = plan_of(write, text)
    # over srtctl's launcher variables (worker_stage.py start_worker), the same on both
    launcher = {k: v for k, v in plan.role("prefill-0").env.items() if k != "A"}
    assert {"HEAD_NODE_IP", "DYN_SYSTEM_PORT", "DYN_LOG"} <= set(launcher)
    assert plan.role("decode-0").env == {**launcher, "A": "1", "B": "2"}
    assert plan.role("prefill-0").env == {**launcher, "A": "1"}
    assert "CUDA_VISIBLE_DEVICES" not in plan.role("decode-0").env


def test_points_prompts_and_warmup(write: Write) -> None:
    plan = plan_of(write, MINIMAL)
    points = [(p.concurrency, p.num_prompts, p.warmup_requests) for p in plan.bench.points]
    assert points == [(1, 16, 2), (4, 40, 8)]
    custom = MINIMAL.replace(
        'concurrencies: "1x4"',
        "concurrencies: [8, 2]\n  num_prompts_mult: 3\n  num_warmup_mult: 0\n  req_rate: 5",
    )
    plan = plan_of(write, custom)
    assert [(p.concurrency, p.num_prompts, p.warmup_requests) for p in plan.bench.points] == [
        (8, 24, 0),
        (2, 16, 0),
    ]
    assert plan.bench.points[0].request_rate == 5.0 and plan.bench.arrival == "poisson"
    bad = MINIMAL.replace('concurrencies: "1x4"', 'concurrencies: "1xfour"')
    with pytest.raises(DisaggError, match="not an integer"):
        plan_of(write, bad)
    comma = MINIMAL.replace('concurrencies: "1x4"', 'concurrencies: "1,4"')
    with pytest.raises(DisaggError, match="'1,4' is not an integer"):
        plan_of(write, comma)


def test_draft_models_are_staged_and_bound(write: Write) -> None:
    text = MINIMAL.replace(
        "    decode:\n      tp-size: 8\n",
        "    decode:\n      tp-size: 8\n      speculative-algorithm: EAGLE\n"
        "      speculative-draft-model-path: org/draft\n",
    ).replace("  precision: bf16\n", "  precision: bf16\n  stage_extra: [org/tok]\n")
    plan = plan_of(write, text)
    staged = [(m.repo_id, m.purpose) for m in plan.staging.models]
    assert staged == [("org/tiny", "main"), ("org/draft", "draft"), ("org/tok", "extra")]
    argv = plan.role("decode-0").argv
    assert argv[argv.index("--speculative-draft-model-path") + 1] == "${model.draft}"


def test_cluster_profile_resolves_aliases_and_slurm_settings(write: Write) -> None:
    profile_path = write(
        "partition: gpu\naccount: team\ngpus_per_node: 8\ngpu_directive: gpus-per-node\n"
        "gpu_vendor: amd\nmodels:\n  dsr1: hf:deepseek-ai/DeepSeek-R1\n  local: /data/m\n"
        "containers:\n  sglang: /sq/sglang.sqsh\nhf_cache: /shared/hf\nnetwork_interface: ib0\n"
        "mounts:\n  /data: /data\n  /shared/hf: /hf_hub_cache\npyxis: true\n",
        name="cluster.yaml",
    )
    profile = load_profile(profile_path)
    recipe = MINIMAL.replace("hf:org/tiny", "dsr1").replace("  gpus_per_node: 8\n", "")
    recipe += "slurm:\n  time_limit: 01:00:00\nsbatch_directives:\n  mem: 0\n"
    plan = plan_of(write, recipe, profile)
    assert [m.repo_id for m in plan.staging.models] == ["deepseek-ai/DeepSeek-R1"]
    assert plan.staging.hf_cache == "/shared/hf" and plan.gpu_vendor.value == "amd"
    assert plan.slurm.partition == "gpu" and plan.slurm.account == "team"
    assert plan.slurm.gpu_directive == "gpus-per-node" and plan.slurm.time_limit == "01:00:00"
    assert plan.slurm.directives == {"mem": "0"} and plan.slurm.container_mounts == {
        "/data": "/data",
        "/shared/hf": "/hf_hub_cache",
    }
    assert plan.slurm.container_image == "/sq/sglang.sqsh" and plan.slurm.pyxis
    assert plan.role("prefill-0").container_image == "/sq/sglang.sqsh"
    assert plan.role("prefill-0").env["NCCL_SOCKET_IFNAME"] == "ib0"
    local = plan_of(write, recipe.replace("path: dsr1", "path: local"), profile)
    assert local.staging.local_path == "/data/m" and local.staging.models == []


def test_a_name_no_alias_defines_is_a_directory_in_the_working_directory(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """srtctl replaces a `model.path` its cluster's `model_paths` hold and reads anything
    else but `hf:` as a directory, made absolute in the working directory
    (`resolve_config_with_defaults` in srt-slurm v1.0.68's core/config.py,
    `RuntimeContext.from_config` in core/runtime.py); it never downloads one."""
    monkeypatch.chdir(tmp_path)
    profile = ClusterProfile(models={"qwen": "hf:Qwen/Qwen3-32B", "Qwen/Qwen3-8B": "/m/q8"})
    for written, profile_used in (("dsr1", None), ("nope", profile), ("org/tiny", profile)):
        plan = plan_of(write, MINIMAL.replace("hf:org/tiny", written), profile_used)
        assert plan.staging.local_path == str(tmp_path.resolve() / written)
        assert plan.staging.models == [] and plan.bench.model_name == written.split("/")[-1]
    # an alias wins over every other reading, an `org/name` key included
    aliased = plan_of(write, MINIMAL.replace("hf:org/tiny", "Qwen/Qwen3-8B"), profile)
    assert aliased.staging.local_path == "/m/q8" and aliased.bench.model_name == "q8"
    hub = plan_of(write, MINIMAL.replace("hf:org/tiny", "qwen"), profile)
    assert [m.repo_id for m in hub.staging.models] == ["Qwen/Qwen3-32B"]
    assert hub.staging.local_path is None and hub.bench.model_name == "Qwen3-32B"
    monkeypatch.setenv("MODELS", str(tmp_path / "store"))
    expanded = plan_of(write, MINIMAL.replace("hf:org/tiny", "$MODELS/m1"))
    assert expanded.staging.local_path == str(tmp_path.resolve() / "store" / "m1")
    plan = plan_of(write, MINIMAL.replace("hf:org/tiny", "dsr1"))
    assert plan.slurm.container_image == "sglang" and not plan.slurm.pyxis


def test_frontend_args_reach_the_frontend_the_recipe_names(write: Write) -> None:
    without = MINIMAL.split("frontend:")[0]
    dynamo = without + "frontend:\n  type: dynamo\n  args:\n    router-mode: kv\n"
    plan = plan_of(write, dynamo)
    assert plan.frontend == "dynamo"
    argv = plan.role("frontend").argv  # two nodes: nginx on the head, one frontend
    assert argv[argv.index("--router-mode") + 1] == "kv"
    sglang = without + "frontend:\n  type: sglang\n  args:\n    policy: cache_aware\n"
    argv = plan_of(write, sglang).role("router").argv
    assert argv[argv.index("--policy") + 1] == "cache_aware"


@pytest.mark.parametrize("example", sorted((EXAMPLES / "sim").glob("*.yaml")), ids=str)
def test_sim_examples_plan_and_round_trip(example: Path, tmp_path: Path) -> None:
    for variant in load_variants(example):
        plan = place(variant, load_profile(EXAMPLES / "clusters" / "laptop.yaml"))
        assert plan.simulated
        plan.write(tmp_path)
        assert Plan.read(tmp_path) == plan
        assert {r.kind for r in plan.roles} >= {RoleKind.ROUTER, RoleKind.BENCH}


def test_decode_starts_on_the_next_node_the_packed_prefill_workers_leave(write: Write) -> None:
    """srtctl's allocate_endpoints (core/topology.py) packs the four 4-GPU prefill workers
    onto two nodes and walks on: decode takes node 2, not node 4 (`prefill_nodes`); the job
    still holds prefill_nodes + decode_nodes nodes, the last two idle."""
    text = with_resources(
        gpus_per_node=8,
        prefill_nodes=4,
        prefill_workers=4,
        gpus_per_prefill=4,
        decode_nodes=1,
        decode_workers=1,
    )
    plan = plan_of(write, text)
    workers = [entry for entry in layout(plan) if entry[0].startswith(("prefill", "decode"))]
    assert workers == [
        ("prefill-0", [0], [0, 1, 2, 3]),
        ("prefill-1", [0], [4, 5, 6, 7]),
        ("prefill-2", [1], [0, 1, 2, 3]),
        ("prefill-3", [1], [4, 5, 6, 7]),
        ("decode-0", [2], ALL8),
    ]
    assert plan.slurm.nodes == 5
