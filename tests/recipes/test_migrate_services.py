"""`disagg migrate` writes v1's `infra` and `backend.mooncake_kv_store` as schema-2 services,
in override blocks too, and proves every variant plans as before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from disagg.plan.placement import place
from disagg.recipe.migrate import migrate_file, plan_outcomes
from disagg.recipe.variants import load_variants

from .test_migrate import OVERRIDES

Write = Callable[..., Path]


def _migrated(write: Write, text: str) -> tuple[Path, Path]:
    path = write(text)
    result = migrate_file(path, plan_outcomes)  # raises unless every variant plans the same
    assert result.text is not None
    return path, write(result.text, "migrated.yaml")


def test_infra_in_an_override_block_gets_the_whole_services_list(write: Write) -> None:
    text = OVERRIDES.replace(
        "override_more:\n  backend:\n",
        "override_more:\n  infra:\n    etcd_nats_dedicated_node: true\n  backend:\n",
    )
    path, migrated = _migrated(write, text)
    before = {v.name: v for v in load_variants(path)}
    after = {v.name: v for v in load_variants(migrated)}
    assert after["override_more"].config.infra == before["override_more"].config.infra
    assert before["override_more"].config.infra.nats_max_payload_mb == 32  # merged from base
    services = after["override_more"].config.services
    assert [(s.type, s.placement.node if s.placement else None) for s in services] == [
        ("etcd", "dedicated"),
        ("nats", "dedicated"),
    ]
    assert services[1].options == {"max_payload_mb": 32}
    other = after["zip_override_conc[0]"].config  # keeps base's list
    assert other.infra == before["zip_override_conc[0]"].config.infra
    assert [s.type for s in other.services] == ["nats"]


def test_infra_in_a_zip_block_is_one_literal_list_for_every_variant(write: Write) -> None:
    text = OVERRIDES + "  infra:\n    nats_max_payload_mb: 64\n"
    _, migrated = _migrated(write, text)
    assert "services:\n  - - name: nats" in migrated.read_text()
    for variant in load_variants(migrated):
        expected = 64 if variant.name.startswith("zip_override_conc") else 32
        assert variant.config.infra.nats_max_payload_mb == expected, variant.name


# The decode settings name Mooncake as their KV transfer (srtctl refuses a master no
# worker uses).
MOONCAKE = OVERRIDES.replace(
    "    type: sglang\n    prefill",
    "    type: sglang\n    mooncake_kv_store:\n      container: mc\n"
    "      master_extra_args: [--port, '5000']\n      store_config: {protocol: tcp}\n"
    "    prefill",
).replace(
    "      decode: {tp-size: 4}",
    "      decode: {tp-size: 4, disaggregation-transfer-backend: mooncake}",
)


def test_mooncake_kv_store_becomes_a_mooncake_master_service(write: Write) -> None:
    path, migrated = _migrated(write, MOONCAKE)
    text = migrated.read_text()
    assert "mooncake_kv_store" not in text
    assert "type: mooncake-master" in text and "args: [--port, '5000']" in text
    before = load_variants(path)
    after = load_variants(migrated)
    assert [v.config.backend.mooncake_kv_store for v in after] == [
        v.config.backend.mooncake_kv_store for v in before
    ]


def test_a_mooncake_master_is_started_alike_in_both_dialects(write: Write) -> None:
    path, migrated = _migrated(write, MOONCAKE)
    old = place(load_variants(path)[0])
    new = place(load_variants(migrated)[0])
    for plan in (old, new):
        master = plan.role("mooncake-master")
        assert master.argv[0] == "mooncake_master" and master.argv[-2:] == ["--port", "5000"]
        assert master.container_image == "mc"
        assert plan.stages[0] == ["mooncake-master"]
        assert "MOONCAKE_MASTER" in plan.role("prefill-0").env
    assert old.role("mooncake-master") == new.role("mooncake-master")
    assert old.role("decode-0").env == new.role("decode-0").env


def test_an_empty_mooncake_kv_store_still_asks_for_a_master(write: Write) -> None:
    text = OVERRIDES.replace(
        "    type: sglang\n    prefill", "    type: sglang\n    mooncake_kv_store: {}\n    prefill"
    ).replace(
        "      decode: {tp-size: 4}",
        "      decode: {tp-size: 4, disaggregation-transfer-backend: mooncake}",
    )
    [variant] = load_variants(write(text), pattern="base")
    assert place(variant).stages[0] == ["mooncake-master"]
