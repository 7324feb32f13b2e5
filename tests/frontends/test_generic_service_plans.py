"""Where and when a plan starts a recipe's `services:` entries, as srt-slurm places them.

srt-slurm 2.x (docs/schema-reference.md: ServiceConfig, ServicePlacementConfig,
ServiceReadinessConfig): a generic service runs its command as written, on `head` unless
`placement.node` says otherwise (one instance per node of the named role's workers),
after the frontend unless `start: before_workers`, gated on its readiness probe; a
`mooncake-store` runs a standalone store wired to the job's master, before the workers,
critical by default.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants
from recipes.recipe_helpers import MINIMAL

Write = Callable[[str], Path]
# a generic service as InferenceX's UMBP tier, in a recipe written for these tests
UMBP = Path(__file__).parent / "data" / "generic-service-umbp.yaml"


@pytest.fixture
def write(tmp_path: Path) -> Write:
    def _write(text: str) -> Path:
        path = tmp_path / "recipe.yaml"
        path.write_text(text)
        return path

    return _write


def planned(write: Write, entry: str, recipe: str = MINIMAL) -> Plan:
    text = recipe + "services:\n  - name: side\n    command: [side-server, --flag]\n" + entry
    return place(load_variants(write(text))[0])


@pytest.mark.parametrize(
    ("node", "ranks"),
    [
        ("head", [0]),
        ("infra", [0]),
        ("prefill", [0]),
        ("decode", [1]),
        ("workers", [0, 1]),
        ("compute", [0, 1]),
        ("all", [0, 1]),
    ],
)
def test_the_service_runs_once_on_each_node_its_placement_names(
    write: Write, node: str, ranks: list[int]
) -> None:
    plan = planned(write, f"    placement: {{node: {node}}}\n")
    role = plan.role("service_side")
    assert role.node_ranks == ranks
    assert role.argv == ["side-server", "--flag"]


def test_by_default_it_runs_on_the_head_after_the_frontend(write: Write) -> None:
    plan = planned(write, "")
    role = plan.role("service_side")
    assert role.node_ranks == [0] and role.critical is False and role.readiness is None
    assert role.container_image == "sglang"  # the job's image, as no `container` is given
    assert plan.stages[-1] == ["service_side"]
    assert plan.stages.index(["service_side"]) > plan.stages.index(["router"])
    assert [row["id"] for row in plan.differs if row["id"] == "service-log"] == ["service-log"]


def test_before_workers_starts_it_ahead_of_the_workers(write: Write) -> None:
    plan = planned(write, "    start: before_workers\n    container: side:1\n")
    assert plan.stages[0] == ["service_side"]
    assert plan.stages[1] == ["prefill-0", "decode-0"]
    assert plan.role("service_side").container_image == "side:1"


def test_args_env_preamble_and_readiness_are_carried(write: Write) -> None:
    entry = (
        "    args: [--more]\n"
        "    env: {SIDE_LEVEL: '3', SIDE_ON: 'true'}\n"
        "    preamble: ulimit -n 4096\n"
        "    readiness: {port: 9000, timeout_seconds: 7, interval_seconds: 1}\n"
    )
    role = planned(write, entry).role("service_side")
    assert role.argv == [
        "bash",
        "-c",
        'ulimit -n 4096\nexec "$@"\n',
        "service_side",
        "side-server",
        "--flag",
        "--more",
    ]
    assert role.env == {"SIDE_LEVEL": "3", "SIDE_ON": "true"}
    assert role.readiness is not None
    assert (role.readiness.tcp_port, role.readiness.timeout_s) == (9000, 7.0)
    assert role.readiness.interval_s == 1.0


def test_a_disabled_service_is_not_started(write: Write) -> None:
    plan = planned(write, "    enabled: false\n")
    assert "service_side" not in [role.name for role in plan.roles]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("    placement: {node: nowhere}\n", "unknown placement.node 'nowhere'"),
        ("    readiness: {timeout_seconds: 5}\n", "`readiness` names no probe"),
        ("    readiness: {log: {pattern: '('}}\n", "is not a regular expression"),
    ],
)
def test_bad_service_settings_are_bad_input(write: Write, entry: str, message: str) -> None:
    with pytest.raises(DisaggError, match=message):
        planned(write, entry)


def test_a_generic_service_without_a_command_is_bad_input(write: Write) -> None:
    text = MINIMAL + "services:\n  - name: side\n    type: generic\n"
    with pytest.raises(DisaggError, match="a generic service needs `command`"):
        place(load_variants(write(text))[0])


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ("    placement: {node: prefill, per: worker}\n", "services.side.placement.per"),
        ("    placement: {pool: ray}\n", "services.side.placement.pool"),
        ("    nodes: 2\n", "services.side.nodes"),
        ("    source: {git: 'https://example.invalid/x.git', rev: abc}\n", "services.side.source"),
    ],
)
def test_what_is_not_laid_out_is_refused_by_name(write: Write, entry: str, field: str) -> None:
    with pytest.raises(UnsupportedRecipe, match=f"unsupported: {field} "):
        planned(write, entry)


WIRED = MINIMAL.replace(
    "      tp-size: 8\n", "      tp-size: 8\n      disaggregation-transfer-backend: mooncake\n"
).replace("backend:\n", "backend:\n  mooncake_kv_store:\n    env: {MOONCAKE_PROTOCOL: tcp}\n")


def test_a_mooncake_store_runs_on_every_worker_node_after_the_master(write: Write) -> None:
    text = (
        WIRED
        + "services:\n  - name: store\n    type: mooncake-store\n    args: [--protocol=rdma]\n"
    )
    plan = place(load_variants(write(text))[0])
    assert plan.stages[:3] == [["mooncake-master"], ["service_store"], ["prefill-0", "decode-0"]]
    store = plan.role("service_store")
    assert store.node_ranks == [0, 1] and store.critical is True
    assert store.ports == ["rpc", "http"]
    assert store.argv == [
        "mooncake_client",
        "--master_server_address=${mooncake-master.host}:${mooncake-master.rpc_port}",
        "--metadata_server=http://${mooncake-master.host}:${mooncake-master.metadata_port}/metadata",
        "--host=${self.bind_host}",
        "--port=${self.rpc_port}",
        "--enable_http_server=true",
        "--http_port=${self.http_port}",
        "--protocol=rdma",
    ]
    assert store.readiness is not None
    assert (store.readiness.http_port, store.readiness.http_path) == ("http", "/health")
    assert {"service-log", "mooncake-store"} <= {row["id"] for row in plan.differs}
    assert not [item for item in plan.ignored if item["field"].startswith("services.store")]


def test_a_store_can_be_made_non_critical_and_placed(write: Write) -> None:
    entry = "    critical: false\n    placement: {node: decode}\n"
    text = WIRED + "services:\n  - name: store\n    type: mooncake-store\n" + entry
    store = place(load_variants(write(text))[0]).role("service_store")
    assert store.critical is False and store.node_ranks == [1]


def test_the_umbp_variants_start_their_tier_on_the_prefill_node_before_the_workers() -> None:
    files = [UMBP]
    umbp = [
        plan
        for path in files
        for plan in (place(variant) for variant in load_variants(path))
        if any(role.name == "service_umbp" for role in plan.roles)
    ]
    assert len(umbp) == 2  # every UMBP variant plans
    for plan in umbp:
        role = plan.role("service_umbp")
        prefill = {rank for r in plan.roles if r.kind.value == "prefill" for rank in r.node_ranks}
        assert set(role.node_ranks) == prefill
        assert role.critical is True
        assert role.argv[:2] == ["bash", "-c"]
        assert role.argv[-2:] == [
            "/sgl-workspace/mori/python/mori/umbp_standalone_server",
            "unix:///logs/umbp.sock",
        ]
        assert "UMBP_DRAM_CAPACITY" in role.env and "ETCD_ENDPOINTS" not in role.env
        assert role.readiness is not None
        assert role.readiness.log_pattern == "host memory registered for GPU access"
        workers = next(i for i, stage in enumerate(plan.stages) if "prefill-0" in stage)
        assert plan.stages[workers - 1] == ["service_umbp"]


DYNAMO = MINIMAL.replace("  type: sglang\n", "  type: dynamo\n")


@pytest.mark.parametrize("inherit", [True, False])
def test_the_discovery_plane_is_inherited_unless_the_entry_says_not(
    write: Write, inherit: bool
) -> None:
    entry = f"    inherit_discovery_env: {str(inherit).lower()}\n    env: {{OWN: '1'}}\n"
    plan = planned(write, entry, recipe=DYNAMO)
    env = plan.role("service_side").env
    worker = plan.role("prefill-0").env
    if inherit:
        assert env["ETCD_ENDPOINTS"] == worker["ETCD_ENDPOINTS"]
        assert env["NATS_SERVER"] == worker["NATS_SERVER"]
    else:
        assert "ETCD_ENDPOINTS" not in env and "NATS_SERVER" not in env
    assert env["OWN"] == "1"


def test_two_services_of_one_name_are_bad_input(write: Write) -> None:
    text = MINIMAL + (
        "services:\n"
        "  - {name: side, command: [a]}\n"
        "  - {name: side, command: [b], placement: {node: decode}}\n"
    )
    with pytest.raises(DisaggError, match="services named twice: side"):
        place(load_variants(write(text))[0])
