"""The Mooncake master a plan starts, and what its workers are told, as srt-slurm does it.

A recipe's Mooncake KV store (v1 `backend.mooncake_kv_store`, schema 2 a `services:`
entry of type mooncake-master) gets `mooncake_master` with srtctl's flags on the first
node before the workers; every worker gets the master's RPC and metadata addresses
(which the recipe cannot override), its own address for transfers (which it can), the
recipe's env, and for vLLM the store config file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from recipes.recipe_helpers import MINIMAL

Write = Callable[[str], Path]
# a Mooncake store as InferenceX's vLLM recipes run it, in a recipe written for these tests
STORE_RECIPE = Path(__file__).parent / "data" / "mooncake-store-vllm-agg.yaml"


@pytest.fixture
def write(tmp_path: Path) -> Write:
    def _write(text: str) -> Path:
        path = tmp_path / "recipe.yaml"
        path.write_text(text)
        return path

    return _write


# SGLang prefill/decode settings that use the master (srtctl refuses a master no worker uses).
WIRED = MINIMAL.replace(
    "      tp-size: 8\n", "      tp-size: 8\n      disaggregation-transfer-backend: mooncake\n"
)
STORE = (
    "  mooncake_kv_store:\n"
    "    env:\n      MOONCAKE_PROTOCOL: rdma\n      MOONCAKE_MASTER: nowhere:1\n"
    "      MOONCAKE_LOCAL_HOSTNAME: 10.0.0.9\n"
)


def test_the_master_runs_srtctls_command_first_and_workers_get_its_addresses(
    write: Write,
) -> None:
    text = WIRED.replace("backend:\n", "backend:\n" + STORE)
    plan = place(load_variants(write(text))[0])
    assert plan.stages[0] == ["mooncake-master"]
    master = plan.role("mooncake-master")
    assert master.node_ranks == [0] and master.container_image == "sglang"
    assert master.argv == [
        "mooncake_master",
        "--port=${self.rpc_port}",
        "--enable_http_metadata_server=true",
        "--http_metadata_server_port=${self.metadata_port}",
        "--eviction_high_watermark_ratio=0.9",
        "--default_kv_lease_ttl=10000",
        "--rpc_thread_num=16",
        "--enable_metric_reporting=true",
        "--metrics_port=${self.http_port}",
    ]
    assert master.health is not None and master.health.path == "/health"
    for name in ("prefill-0", "decode-0"):
        env = plan.role(name).env
        assert env["MOONCAKE_MASTER"] == "${mooncake-master.host}:${mooncake-master.rpc_port}"
        assert env["MOONCAKE_TE_META_DATA_SERVER"] == (
            "http://${mooncake-master.host}:${mooncake-master.metadata_port}/metadata"
        )
        assert env["MOONCAKE_LOCAL_HOSTNAME"] == "10.0.0.9"  # the recipe's own wins here
        assert env["MOONCAKE_PROTOCOL"] == "rdma"
        assert "MOONCAKE_CONFIG_PATH" not in env  # vLLM's file only
    assert not [item for item in plan.ignored if "mooncake" in item["field"]]
    assert [row["id"] for row in plan.differs if "mooncake" in row["id"]] == ["mooncake-ports"]


def test_a_plan_without_a_store_starts_no_master(write: Write) -> None:
    plan = place(load_variants(write(MINIMAL))[0])
    assert "mooncake-master" not in [role.name for role in plan.roles]
    assert "mooncake-ports" not in [row["id"] for row in plan.differs]
    assert not any("MOONCAKE_MASTER" in role.env for role in plan.roles)


def test_a_vllm_recipe_gets_its_store_config_with_the_masters_address() -> None:
    [variant] = load_variants(STORE_RECIPE)
    plan = place(variant)
    assert plan.stages[:3] == [["etcd", "nats"], ["mooncake-master"], ["aggregated-0"]]
    master = plan.role("mooncake-master")
    [(name, text)] = master.files.items()
    written = json.loads(text)
    assert written["master_server_address"] == "${self.host}:${self.rpc_port}"
    assert written["global_segment_size"] == "64GB" and written["mode"] == "embedded"
    worker = plan.role("aggregated-0")
    assert worker.env["MOONCAKE_CONFIG_PATH"] == "${run.dir}/" + name
    assert worker.env["VLLM_MOONCAKE_LOAD_RECV_THREADS"] == "8"


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ("    external: 10.0.0.1:8700\n", "services.mc.external"),
        ("    options:\n      device_names_by_gpu: {0: mlx5_0}\n", "services.mc.options"),
    ],
)
def test_what_the_master_does_not_carry_out_is_refused_by_name(
    write: Write, entry: str, field: str
) -> None:
    text = MINIMAL + "services:\n  - name: mc\n    type: mooncake-master\n" + entry
    [variant] = load_variants(write(text))
    with pytest.raises(UnsupportedRecipe, match=f"unsupported: {field}"):
        place(variant)


def test_a_disabled_master_is_not_started(write: Write) -> None:
    text = MINIMAL + "services:\n  - name: mc\n    type: mooncake-master\n    enabled: false\n"
    plan = place(load_variants(write(text))[0])
    assert "mooncake-master" not in [role.name for role in plan.roles]


def test_a_master_placed_elsewhere_runs_on_the_first_node_and_says_so(write: Write) -> None:
    text = WIRED + (
        "services:\n  - name: mc\n    type: mooncake-master\n    placement: {node: dedicated}\n"
    )
    plan = place(load_variants(write(text))[0])
    assert plan.role("mooncake-master").node_ranks == [0]
    [note] = [item for item in plan.ignored if item["field"].startswith("services.mc")]
    assert note["field"] == "services.mc.placement.node" and "first node" in note["why"]


def test_a_master_no_worker_uses_is_refused_as_srtctl_refuses_it(write: Write) -> None:
    text = MINIMAL.replace("backend:\n", "backend:\n  mooncake_kv_store: {}\n")
    [variant] = load_variants(write(text))
    with pytest.raises(DisaggError) as caught:
        place(variant)
    assert "neither the prefill nor the decode SGLang settings use it" in caught.value.message
    assert caught.value.exit_code == 2 and caught.value.hint is not None
    assert "disaggregation-transfer-backend: mooncake" in caught.value.hint
    assert caught.value.location is not None and caught.value.location.line == 14


def test_each_node_of_a_worker_tells_mooncake_its_own_address(write: Write) -> None:
    """srtctl's start_worker resolves MOONCAKE_LOCAL_HOSTNAME per process: each node of a
    worker over several nodes runs a transfer engine of its own."""
    from engines.engine_support import worker_tasks

    store = "  mooncake_kv_store:\n    env:\n      MOONCAKE_PROTOCOL: rdma\n"
    text = WIRED.replace("backend:\n", "backend:\n" + store).replace(
        "  prefill_nodes: 1\n", "  prefill_nodes: 2\n"
    )
    text = text.replace("      tp-size: 8\n", "      tp-size: 16\n", 1)
    plan = place(load_variants(write(text))[0])
    assert plan.role("prefill-0").nnodes == 2
    hosts = {
        rank: env["MOONCAKE_LOCAL_HOSTNAME"]
        for role, rank, _argv, env in worker_tasks(plan)
        if role.name == "prefill-0"
    }
    assert hosts == {0: "10.0.0.1", 1: "10.0.0.2"}
