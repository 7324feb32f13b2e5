"""What a Dynamo plan starts for its discovery plane: etcd and NATS when the recipe (or
srt-slurm's cluster default) asks for them, file discovery said in the plan otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.plan.model import Plan, RoleKind
from engines.engine_support import plan_text

from .test_frontend_plans import SIM, WITHOUT_FRONTEND

ONE_FRONTEND = "frontend:\n  type: dynamo\n  enable_multiple_frontends: false\n"


def sim_plan(tmp_path: Path, extra: str = "") -> Plan:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    text = SIM.replace("path: hf:org/tiny", f"path: {model}") + ONE_FRONTEND + extra
    return plan_text(tmp_path, text)


def fields(plan: Plan) -> dict[str, str]:
    return {item["field"]: item["why"] for item in plan.ignored}


def test_a_simulated_run_without_etcd_or_nats_says_file_discovery_stands_in(
    tmp_path: Path,
) -> None:
    plan = sim_plan(tmp_path)
    assert plan.stages[0] == ["prefill-0", "decode-0"]
    notes = fields(plan)
    assert "files in the run directory" in notes["services.etcd"]
    assert "no Dynamo plane uses NATS" in notes["services.nats"]


def test_a_simulated_run_starts_the_etcd_and_nats_the_recipe_names(tmp_path: Path) -> None:
    services = "services:\n  - {name: etcd, type: etcd}\n  - {name: nats, type: nats}\n"
    plan = sim_plan(tmp_path, services + "dynamo:\n  event_plane: nats\n")
    assert plan.stages[0] == ["etcd", "nats"]
    assert not [field for field in fields(plan) if field.startswith("services")]
    etcd, nats = plan.role("etcd"), plan.role("nats")
    assert {etcd.kind, nats.kind} == {RoleKind.SERVICE}
    assert etcd.health is not None and etcd.health.path == "/health"
    assert nats.health is not None and nats.health.path == "/healthz"
    assert "${run.dir}/etcd" in etcd.argv and "${run.dir}/nats" in nats.argv
    for name in ("prefill-0", "decode-0", "frontend"):
        role = plan.role(name)
        assert role.env["ETCD_ENDPOINTS"] == "${etcd.url}"
        assert role.env["NATS_SERVER"] == "nats://${nats.host}:${nats.client_port}"
        assert role.env["DYN_EVENT_PLANE"] == "nats"
        # etcd is Dynamo's default discovery backend: srtctl names none, nor does disagg
        assert "--discovery-backend" not in role.argv


def test_a_nats_request_plane_alone_starts_nats_over_file_discovery(tmp_path: Path) -> None:
    plan = sim_plan(tmp_path, "dynamo:\n  request_plane: nats\n")
    assert plan.stages[0] == ["nats"]
    decode = plan.role("decode-0")
    assert "--discovery-backend file --request-plane nats" in " ".join(decode.argv)
    assert "services.etcd" in fields(plan) and "services.nats" not in fields(plan)


def test_an_external_etcd_is_used_and_none_started(tmp_path: Path) -> None:
    external = "services:\n  - {name: etcd, type: etcd, external: 'http://10.0.0.9:2379'}\n"
    plan = plan_text(tmp_path, WITHOUT_FRONTEND + ONE_FRONTEND + external)
    assert [role.name for role in plan.roles if role.kind is RoleKind.SERVICE] == ["nats"]
    assert plan.role("prefill-0").env["ETCD_ENDPOINTS"] == "http://10.0.0.9:2379"


def test_the_nats_payload_limit_reaches_nats_in_both_dialects(tmp_path: Path) -> None:
    v1 = plan_text(
        tmp_path, WITHOUT_FRONTEND + ONE_FRONTEND + "infra:\n  nats_max_payload_mb: 24\n"
    )
    conf = v1.role("nats").files["nats/nats.conf"]
    assert f"max_payload: {24 * 1024 * 1024}" in conf
    assert "-c" in v1.role("nats").argv and "infra.nats_max_payload_mb" not in fields(v1)
    services = "services:\n  - {name: nats, type: nats, options: {max_payload_mb: 96}}\n"
    big = plan_text(tmp_path, WITHOUT_FRONTEND + ONE_FRONTEND + services)
    conf = big.role("nats").files["nats/nats.conf"]
    assert f"max_pending: {96 * 1024 * 1024}" in conf  # nats-server refuses payload > pending


def test_under_smg_the_payload_limit_is_listed_as_not_carried_out(tmp_path: Path) -> None:
    text = WITHOUT_FRONTEND + "frontend:\n  type: smg\n" + "infra:\n  nats_max_payload_mb: 24\n"
    assert (
        "no NATS server is started"
        in fields(plan_text(tmp_path, text))["infra.nats_max_payload_mb"]
    )


def test_a_service_type_nobody_starts_is_listed(tmp_path: Path) -> None:
    # generic services are started now (disagg.services); `ray` is a kind nothing starts
    sidecar = "services:\n  - {name: probe, type: ray, command: [sleep, '1']}\n"
    plan = plan_text(tmp_path, WITHOUT_FRONTEND + ONE_FRONTEND + sidecar)
    assert "no ray service is started" in fields(plan)["services.probe"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("dynamo:\n  request_plane: zmq\n", r"dynamo\.request_plane must be one of tcp, nats"),
        (
            "services:\n  - {name: nats, type: nats, enabled: false}\n"
            "dynamo:\n  request_plane: nats\n",
            r"dynamo\.request_plane: nats needs a NATS server",
        ),
        (
            "services:\n  - {name: etcd, type: etcd, options: {quota: 1}}\n",
            r"services\.etcd\.options\.quota is not an option of etcd",
        ),
    ],
)
def test_discovery_settings_dynamo_cannot_run_are_refused(
    tmp_path: Path, extra: str, message: str
) -> None:
    with pytest.raises(DisaggError, match=message):
        sim_plan(tmp_path, extra)
