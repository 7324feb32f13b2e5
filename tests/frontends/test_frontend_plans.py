"""What each frontend adapter plans for a recipe: the frontend it names, its services, the
start order, where the load goes, and a one-line reason for anything it does not run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.model import RoleKind
from engines.engine_support import plan_text
from recipes.recipe_helpers import MINIMAL

WITHOUT_FRONTEND = MINIMAL[: MINIMAL.index("frontend:")]


def test_a_recipe_without_frontend_runs_dynamo_as_srt_slurm_does(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, WITHOUT_FRONTEND)
    assert plan.frontend == "dynamo" and plan.simulator is None
    # Two worker nodes, multiple frontends by default: srtctl's frontend_stage.py puts nginx
    # on the head node and one frontend on each other node, capped by their number (one).
    assert plan.stages == [["etcd", "nats"], ["prefill-0", "decode-0"], ["frontend"], ["nginx"]]
    assert plan.role("nginx").node_ranks == [0] and plan.role("frontend").node_ranks == [1]
    assert plan.serving_role == "nginx"
    assert plan.bench.prompt_format == "token_ids"
    worker = plan.role("prefill-0")
    assert "python3 -m dynamo.sglang --model-path ${model.path}" in " ".join(worker.argv)
    assert "--tp-size 8" in " ".join(worker.argv)  # the engine's own flags
    assert worker.env["ETCD_ENDPOINTS"] == "${etcd.url}"
    # srtctl gives the worker's system server a port of its own, apart from SGLang's --port
    # (`endpoints_to_processes`: sys_port; `build_worker_command`: --port http_port)
    assert worker.env["DYN_SYSTEM_PORT"] == "${self.system_port}"
    assert worker.argv[worker.argv.index("--port") + 1] == "${self.http_port}"
    assert worker.health is not None and worker.health.path == "/health"
    frontend = plan.role("frontend")
    assert frontend.health is not None and frontend.health.path == "/v1/models"
    # srtctl tells the worker its request plane with `--request-plane`, the frontend with
    # DYN_REQUEST_PLANE (DynamoFrontend.start_frontends); neither is told the discovery
    # backend (etcd, Dynamo's default)
    plane = worker.argv[worker.argv.index("--request-plane") + 1]
    assert frontend.env["DYN_REQUEST_PLANE"] == worker.env["DYN_REQUEST_PLANE"] == plane
    assert "--discovery-backend" not in worker.argv + frontend.argv
    assert "--request-plane" not in frontend.argv
    assert frontend.health.expect == json.dumps(plan.bench.model_name)
    assert {plan.role(name).kind for name in ("etcd", "nats", "nginx")} == {RoleKind.SERVICE}


def test_dynamo_is_installed_once_per_job_from_the_recipe_source(tmp_path: Path) -> None:
    plan = plan_text(tmp_path, WITHOUT_FRONTEND + "dynamo:\n  version: 1.2.0\n")
    dynamo_roles = [r for r in plan.roles if r.kind is not RoleKind.SERVICE and r.argv]
    for role in dynamo_roles:
        assert role.argv[:2] == ["bash", "-c"]
        assert "flock ${run.dir}/dynamo-install.lock" in role.argv[2]
        # srtctl (DynamoConfig._build_install_commands): the runtime and the package pinned
        assert "ai-dynamo-runtime==1.2.0 ai-dynamo==1.2.0" in role.argv[2]
        assert role.env["PYTHONPATH"] == "${run.dir}/dynamo-install"
    git = "dynamo:\n  source:\n    git: https://example.invalid/dynamo.git\n    rev: abc123\n"
    plan = plan_text(tmp_path, WITHOUT_FRONTEND + git)
    # srtctl (_hash_cached_source_install): the commit built from its repository with maturin
    script = plan.role("decode-0").argv[2]
    assert "git clone --quiet https://example.invalid/dynamo.git dynamo" in script
    assert "git checkout --quiet abc123" in script and "maturin build --release" in script
    plan = plan_text(tmp_path, WITHOUT_FRONTEND + "dynamo:\n  install: false\n")
    assert plan.role("decode-0").argv[:3] == ["python3", "-m", "dynamo.sglang"]


def test_nginx_fans_out_with_session_affinity(tmp_path: Path) -> None:
    three_nodes = WITHOUT_FRONTEND.replace(
        "decode_nodes: 1\n  decode_workers: 1", "decode_nodes: 2\n  decode_workers: 2"
    )
    text = three_nodes + (
        "frontend:\n  type: dynamo\n  num_additional_frontends: 1\n"
        "  nginx_session_affinity: true\n  nginx_session_affinity_header: X-Correlation-ID\n"
    )
    conf = plan_text(tmp_path, text).role("nginx").argv[3]
    assert "server ${frontend-0.host}:${frontend-0.http_port};" in conf
    assert "server ${frontend-1.host}:${frontend-1.http_port};" in conf
    assert "map $http_x_correlation_id $affinity_key" in conf
    assert "hash $affinity_key consistent;" in conf
    assert "listen ${self.bind_host}:${self.http_port};" in conf
    # srtctl's templates/nginx.conf.j2: its workers, body cap, keep-alive and timeouts
    for line in (
        "worker_processes auto;",
        "worker_connections 65535;",
        "client_max_body_size 45m;",
        "keepalive 512;",
        "keepalive_timeout 600s;",
        "proxy_read_timeout 24h;",
        "proxy_send_timeout 24h;",
    ):
        assert line in conf
    script = plan_text(tmp_path, text).role("nginx").argv[2]
    assert "ulimit" not in script and "worker_rlimit_nofile" not in script
    raised = plan_text(tmp_path, text + "  nginx_raise_ulimit: true\n").role("nginx").argv[2]
    assert 'ulimit -n "$n"' in raised and "worker_rlimit_nofile $n;" in raised
    assert "n=1048576" in raised  # srtctl's `ulimit -n 1048576`, where the hard limit allows


def test_one_dynamo_frontend_without_fan_out(tmp_path: Path) -> None:
    text = WITHOUT_FRONTEND + "frontend:\n  type: dynamo\n  enable_multiple_frontends: false\n"
    plan = plan_text(tmp_path, text)
    assert plan.serving_role == "frontend" and plan.stages[-1] == ["frontend"]


def test_frontend_args_cannot_take_over_what_disagg_sets(tmp_path: Path) -> None:
    text = WITHOUT_FRONTEND + "frontend:\n  type: dynamo\n  args:\n    http-port: 1\n"
    with pytest.raises(DisaggError, match=r"frontend\.args\.http-port is set by disagg"):
        plan_text(tmp_path, text)


@pytest.mark.parametrize("kind", ["none", "infera"])
def test_frontends_not_built_here_are_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    with pytest.raises(UnsupportedRecipe) as caught:
        plan_text(tmp_path, WITHOUT_FRONTEND + f"frontend:\n  type: {kind}\n")
    assert caught.value.message.startswith(f"unsupported: frontend type {kind} (")
    assert "\n" not in caught.value.message
    assert caught.value.location is not None and caught.value.location.line is not None


def test_sglang_router_stays_selectable_for_recipes_that_pin_it(tmp_path: Path) -> None:
    text = WITHOUT_FRONTEND + "frontend:\n  type: sglang-router\n  package: sglang-router\n"
    plan = plan_text(tmp_path, text)
    assert plan.frontend == "sglang-router"
    assert plan.role("router").argv[1:3] == ["-m", "sglang_router.launch_router"]
    assert plan.bench.prompt_format == "text"  # it refuses token ids (HTTP 422)
    smg = plan_text(tmp_path, WITHOUT_FRONTEND + "frontend:\n  type: sglang-router\n")
    assert smg.frontend == "smg" and smg.role("router").argv[2] == "smg.launch_router"
    # Fan-out as srtctl's frontend_stage.py does it for every frontend type: nginx on the
    # head node, a router on the other worker node (two nodes: one router).
    assert smg.serving_role == "nginx" and smg.stages[-2:] == [["router"], ["nginx"]]
    assert smg.role("nginx").node_ranks == [0] and smg.role("router").node_ranks == [1]
    assert not [i for i in smg.ignored if i["field"].startswith("frontend.")]


SIM = WITHOUT_FRONTEND.replace("backend:\n", "backend:\n  engine: sim\n")


def test_simulated_recipe_defaulting_to_dynamo_without_tokenizer_says_smg_runs(
    tmp_path: Path,
) -> None:
    plan = plan_text(tmp_path, SIM)
    assert plan.frontend == "smg"
    [note] = [i for i in plan.ignored if i["field"] == "frontend.type"]
    assert "mocker needs model.path to be a local model directory" in note["why"]


def test_simulated_recipe_naming_dynamo_without_tokenizer_is_refused_with_the_fix(
    tmp_path: Path,
) -> None:
    """A part the recipe names is run or refused, never replaced: no smg for `dynamo`."""
    missing = tmp_path / "no-model"
    text = SIM.replace("path: hf:org/tiny", f"path: {missing}") + "frontend:\n  type: dynamo\n"
    with pytest.raises(DisaggError) as caught:
        plan_text(tmp_path, text)
    assert "frontend.type dynamo" in caught.value.message
    assert caught.value.hint is not None
    assert f"tests/tiny_model.py {missing}" in caught.value.hint
    assert caught.value.location is not None and caught.value.location.line is not None
    with pytest.raises(DisaggError) as hub:
        plan_text(tmp_path, SIM + "frontend:\n  type: dynamo\n")
    assert hub.value.hint is not None and "local model directory" in hub.value.hint


def test_simulated_dynamo_with_a_model_directory_runs_the_mocker(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    text = SIM.replace("path: hf:org/tiny", f"path: {model}") + (
        "frontend:\n  type: dynamo\n  enable_multiple_frontends: false\n"
    )
    plan = plan_text(tmp_path, text)
    assert plan.simulator == "dynamo.mocker" and plan.bench.tokenizer == "${model.path}"
    prefill = plan.role("prefill-0")
    assert prefill.argv[2] == "dynamo.mocker"
    assert "--disaggregation-mode prefill --bootstrap-ports ${self.bootstrap_port}" in " ".join(
        prefill.argv
    )
    assert prefill.env["DYN_FILE_KV"] == "${run.dir}/dynamo-discovery"
    assert not any(r.kind is RoleKind.SERVICE for r in plan.roles)  # no etcd/NATS needed
