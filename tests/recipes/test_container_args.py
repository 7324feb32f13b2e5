"""Paths written in a recipe reach containerised roles through the container mounts.

A worker setting of the engine's path kind (its flag table's `paths`) is a host path:
translated when a mount holds it, kept when it already names the container's side,
refused at plan time otherwise. Other settings, environment values and benchmark
commands get only the host paths a mount holds translated. The run directory is
mounted at /logs, which `${run.dir}` is inside a container.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from disagg.cluster import load_profile
from disagg.errors import DisaggError
from disagg.launch.bindings import (
    Bindings,
    build_bindings,
    port_field,
    render_task,
    write_role_files,
)
from disagg.launch.srun import srun_argv
from disagg.plan.model import Plan, RolePlan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL, invoke

Write = Callable[..., Path]
MOUNTS = "  /lustre/models: /models\n  /it-share/hf-hub-cache: /hf_hub_cache\n"
RUN_DIR = Path("/lustre/runs/r1")
DATA = Path(__file__).parent / "data"  # recipes and cluster configs written for these tests


def _profile(write: Write, *, pyxis: bool = True, mounts: str = MOUNTS) -> Path:
    return write(
        f"partition: gpu\ngpus_per_node: 8\npyxis: {'true' if pyxis else 'false'}\n"
        "containers:\n  sglang: /sq/sglang.sqsh\n  vllm: /sq/vllm.sqsh\n"
        f"  trtllm: /sq/trtllm.sqsh\nhf_cache: /it-share/hf-hub-cache\nmounts:\n{mounts}",
        name="cluster.yaml",
    )


def _sglang(prefill: str, *, env: str = "") -> str:
    """MINIMAL with extra prefill settings (indented 6) and top-level environment."""
    text = MINIMAL.replace("    prefill:\n      tp-size: 8\n", f"    prefill:\n{prefill}")
    return text + (f"environment:\n{env}" if env else "")


def _plan(write: Write, text: str, profile: Path) -> Plan:
    (variant,) = load_variants(write(text))
    return place(variant, load_profile(profile))


def _ports(plan: Plan) -> dict[str, dict[str, int]]:
    return {
        r.name: {port_field(name): 8000 + 10 * i + j for j, name in enumerate(r.ports)}
        for i, r in enumerate(plan.roles)
    }


def _bindings(plan: Plan) -> Bindings:
    return build_bindings(
        plan,
        addresses=["10.0.0.1", "10.0.0.2"],
        ports=_ports(plan),
        model_path="/it-share/hf-hub-cache/hub/models--org--tiny/snapshots/0123",
        draft_path="",
        run_dir=RUN_DIR,
    )


def _task(plan: Plan, role: RolePlan) -> tuple[list[str], dict[str, str]]:
    return render_task(plan, role, role.node_ranks[0], _bindings(plan))


def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _prefill_argv(write: Write, settings: str, *, pyxis: bool = True) -> list[str]:
    """The rendered command of an 8-GPU SGLang prefill worker with `settings` (indented 6)."""
    plan = _plan(write, _sglang("      tp-size: 8\n" + settings), _profile(write, pyxis=pyxis))
    return _task(plan, plan.role("prefill-0"))[0]


def test_a_path_setting_under_a_mount_is_given_as_the_container_sees_it(write: Write) -> None:
    argv = _prefill_argv(
        write,
        "      speculative-draft-model-path: /lustre/models/draft/\n"
        "      speculative_token_map: /lustre/models/draft/map.pt\n",
    )
    assert _flag(argv, "--speculative-draft-model-path") == "/models/draft/"
    assert _flag(argv, "--speculative-token-map") == "/models/draft/map.pt"
    assert "/lustre/models" not in " ".join(argv)


def test_a_path_setting_outside_every_mount_is_refused_at_its_line(write: Write) -> None:
    text = _sglang("      tp-size: 8\n      speculative-draft-model-path: /scratch/draft\n")
    with pytest.raises(DisaggError) as caught:
        _plan(write, text, _profile(write))
    message = caught.value.message
    assert "speculative-draft-model-path /scratch/draft" in message
    assert "outside every container mount" in message
    assert "/lustre/models:/models" in message and "\n" not in message
    assert caught.value.location is not None and caught.value.location.line == 17
    code, _, error = invoke("plan", str(write(text)), "--cluster", str(_profile(write)))
    assert code == 2 and "speculative-draft-model-path /scratch/draft" in error
    assert "Traceback" not in error


def test_a_path_written_as_the_container_sees_it_is_kept(write: Write) -> None:
    argv = _prefill_argv(
        write,
        "      speculative-draft-model-path: /models/draft\n"
        "      tokenizer-path: /logs/tokenizer\n",
    )
    assert _flag(argv, "--speculative-draft-model-path") == "/models/draft"
    assert _flag(argv, "--tokenizer-path") == "/logs/tokenizer"


def test_values_that_are_no_host_path_are_left_alone(write: Write) -> None:
    text = _sglang(
        "      tp-size: 8\n"
        "      speculative-draft-model-path: org/draft\n"  # a repo id: staged, bound later
        '      deepep-config: \'{"normal_dispatch": {"num_sms": 24}}\'\n'  # JSON text
        "      chat-template: /sgl-workspace/templates/chat.jinja\n"  # the image's own file
        "      mem-fraction-static: 0.8\n"
        "      download-dir: /lustre/models/downloads\n"  # not a path-kind setting, mounted
    )
    plan = _plan(write, text, _profile(write))
    worker = plan.role("prefill-0")
    assert _flag(worker.argv, "--speculative-draft-model-path") == "${model.draft}"
    assert _flag(worker.argv, "--deepep-config") == '{"normal_dispatch": {"num_sms": 24}}'
    assert _flag(worker.argv, "--chat-template") == "/sgl-workspace/templates/chat.jinja"
    assert _flag(worker.argv, "--mem-fraction-static") == "0.8"
    assert _flag(worker.argv, "--download-dir") == "/models/downloads"


def test_environment_values_get_the_mounted_host_paths_translated(write: Write) -> None:
    env = (
        "  SGLANG_DEEPEP_CONFIG: /lustre/models/deepep.json\n"
        "  PYTHONPATH: /opt/extra:/lustre/models/lib\n"
        "  FLASHINFER_WORKSPACE_BASE: /tmp/flashinfer-cache\n"
        "  SGLANG_LOG_LEVEL: info\n"
    )
    plan = _plan(write, _sglang("      tp-size: 8\n", env=env), _profile(write))
    _, worker_env = _task(plan, plan.role("decode-0"))
    assert worker_env["SGLANG_DEEPEP_CONFIG"] == "/models/deepep.json"
    assert worker_env["PYTHONPATH"] == "/opt/extra:/models/lib"
    assert worker_env["FLASHINFER_WORKSPACE_BASE"] == "/tmp/flashinfer-cache"
    assert worker_env["SGLANG_LOG_LEVEL"] == "info"


def test_without_pyxis_written_paths_stay_host_paths(write: Write) -> None:
    argv = _prefill_argv(write, "      speculative-draft-model-path: /scratch/draft\n", pyxis=False)
    assert _flag(argv, "--speculative-draft-model-path") == "/scratch/draft"


def _vllm(speculative: str) -> str:
    return (
        "name: t\nmodel: {path: hf:org/tiny, container: vllm, precision: bf16}\n"
        "resources:\n  gpu_type: h100\n  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n"
        "backend:\n  type: vllm\n  vllm_config:\n    aggregated:\n"
        f"      tensor-parallel-size: 8\n      speculative-config: {speculative}\n"
        "benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: '1'}\n"
    )


def test_a_path_inside_a_json_setting_is_translated_or_refused(write: Write) -> None:
    profile = _profile(write)
    written = """'{"method": "eagle3", "model": "/lustre/models/eagle"}'"""
    plan = _plan(write, _vllm(written), profile)
    argv, _ = _task(plan, plan.role("aggregated-0"))
    assert '"model": "/models/eagle"' in _flag(argv, "--speculative-config")
    with pytest.raises(DisaggError, match=r"speculative-config /scratch/eagle lies outside"):
        _plan(write, _vllm("{method: eagle3, model: /scratch/eagle}"), profile)


def test_trtllm_yaml_and_run_directory_as_the_container_sees_them(write: Write) -> None:
    text = (
        "name: t\nmodel: {path: hf:org/tiny, container: trtllm, precision: bf16}\n"
        "resources:\n  gpu_type: h100\n  gpus_per_node: 8\n  agg_nodes: 1\n  agg_workers: 1\n"
        "backend:\n  type: trtllm\n  trtllm_config:\n    aggregated:\n"
        "      tensor_parallel_size: 8\n"
        "      speculative_config:\n"
        "        {decoding_type: Eagle, speculative_model_dir: /lustre/models/e}\n"
        "benchmark: {type: sa-bench, isl: 128, osl: 16, concurrencies: '1'}\n"
    )
    plan = _plan(write, text, _profile(write))
    worker = plan.role("aggregated-0")
    config = yaml.safe_load(worker.files["trtllm/aggregated.yaml"])
    assert config["speculative_config"]["speculative_model_dir"] == "/models/e"
    argv, _ = _task(plan, worker)
    # Behind Dynamo (the default frontend): `python3 -m dynamo.trtllm --extra-engine-args`.
    assert argv[argv.index("-m") + 1] == "dynamo.trtllm"
    assert _flag(argv, "--extra-engine-args") == "/logs/trtllm/aggregated.yaml"


def test_the_run_directory_is_mounted_at_logs_and_only_into_containers(write: Write) -> None:
    plan = _plan(write, _sglang("      tp-size: 8\n"), _profile(write))
    lines = {}
    for role in plan.roles:
        if not role.argv:
            continue
        argv, env = _task(plan, role)
        cmd = srun_argv(
            job_id="7",
            node="n1",
            name=role.name,
            argv=argv,
            env=env,
            slurm=plan.slurm,
            container_image=role.container_image,
            run_dir=RUN_DIR,
        )
        lines[role.name] = shlex.join(cmd)
    assert (
        "--container-mounts=/lustre/models:/models,/it-share/hf-hub-cache:/hf_hub_cache,"
        "/lustre/runs/r1:/logs"
    ) in lines["prefill-0"]
    router = next(r.name for r in plan.roles if r.argv and not r.container_image)
    assert "--container" not in lines[router]


def test_run_dir_placeholder_is_the_mount_point_in_a_container_only(
    write: Write, tmp_path: Path
) -> None:
    plan = _plan(write, _sglang("      tp-size: 8\n"), _profile(write))
    worker = plan.role("prefill-0")
    worker.files = {"notes/where.txt": "${run.dir}/x"}
    worker.env["WHERE"] = "${run.dir}/y"
    [written] = write_role_files(plan, worker, _bindings(plan), tmp_path)
    assert written.read_text() == "/logs/x"
    assert _task(plan, worker)[1]["WHERE"] == "/logs/y"
    host = next(r for r in plan.roles if not r.container_image)
    host.env["WHERE"] = "${run.dir}/y"
    assert _task(plan, host)[1]["WHERE"] == f"{RUN_DIR}/y"


def test_a_mount_onto_logs_is_refused(write: Write) -> None:
    profile = _profile(write, mounts=MOUNTS + "  /lustre/old-logs: /logs\n")
    with pytest.raises(DisaggError, match="is where containers see the run directory"):
        _plan(write, _sglang("      tp-size: 8\n"), profile)


def test_srt_slurm_default_mounts_translate_written_paths(write: Write) -> None:
    cluster = write(
        "cluster: east\ndefault_partition: batch\ngpus_per_node: 8\n"
        "default_mounts:\n  /lustre/models: /models\n"
        "containers:\n  sglang: /lustre/images/sglang.sqsh\n"
        "model_paths:\n  tiny: /lustre/models/tiny\n",
        name="srtslurm.yaml",
    )
    text = _sglang("      tp-size: 8\n      speculative-draft-model-path: /lustre/models/d\n")
    plan = _plan(write, text.replace("hf:org/tiny", "tiny"), cluster)
    assert plan.slurm.pyxis  # srt-slurm starts every worker in its container
    worker = plan.role("prefill-0")
    assert _flag(worker.argv, "--speculative-draft-model-path") == "/models/d"
    refused = text.replace("/lustre/models/d", "/home/me/d").replace("hf:org/tiny", "tiny")
    with pytest.raises(DisaggError, match="/home/me/d lies outside every container mount"):
        _plan(write, refused, cluster)
    # a setup script runs in the container first and may make the path there (InferenceX's
    # Kimi-K3 recipes write their draft model under /tmp): srtctl passes it as written
    plan = _plan(write, refused + "setup_script: make-draft.sh\n", cluster)
    assert _flag(plan.role("prefill-0").argv, "--speculative-draft-model-path") == "/home/me/d"


def test_a_custom_benchmark_command_gets_mounted_host_paths_translated(write: Write) -> None:
    command = (
        "python3 /opt/bench/run.py --dataset /lustre/models/data/sharegpt.json "
        "--out=$RESULT_DIR --tokenizer '/lustre/models/tiny'"
    )
    text = MINIMAL.replace(
        '  type: sa-bench\n  isl: 1024\n  osl: 128\n  concurrencies: "1x4"\n',
        f'  type: custom\n  command: "{command}"\n  env:\n    DATA: /lustre/models/data\n',
    )
    plan = _plan(write, text, _profile(write))
    bench = plan.role("bench")
    assert bench.container_image == "/sq/sglang.sqsh"
    argv, env = _task(plan, bench)
    assert argv[-1] == (
        "python3 /opt/bench/run.py --dataset /models/data/sharegpt.json "
        "--out=$RESULT_DIR --tokenizer '/models/tiny'"
    )
    assert env["DATA"] == "/models/data"
    assert env["DISAGG_RESULTS_DIR"].startswith("/logs/")


def test_an_srt_slurm_config_names_its_model_cache_by_the_hf_hub_cache_mount() -> None:
    """An AMD cluster config (as InferenceX's) mounts the shared cache at /hf_hub_cache,
    where its recipes point HF_HOME; that host directory is where models are staged."""
    profile = load_profile(DATA / "cluster-configs" / "amd-east.yaml")
    recipe = DATA / "amd-sglang-disagg-mtp.yaml"
    assert profile.hf_cache == "/cluster/hf-hub-cache" and profile.pyxis
    plan = place(load_variants(recipe)[0], profile)
    worker = plan.role("prefill-0")
    assert worker.container_image and plan.staging.hf_cache == "/cluster/hf-hub-cache"
    assert worker.env["HF_HUB_CACHE"] == "/hf_hub_cache/hub"  # written as the container sees it
    assert worker.env["PYTHONPATH"] == "/sgl-workspace/aiter"  # the image's own directory
    staged = "/cluster/hf-hub-cache/hub/models--org--big-moe/snapshots/1"
    bindings = build_bindings(
        plan, addresses=["10.0.0.1"] * plan.nodes, ports=_ports(plan), model_path=staged,
        draft_path="", run_dir=RUN_DIR,
    )  # fmt: skip
    argv, _ = render_task(plan, worker, worker.node_ranks[0], bindings)
    assert _flag(argv, "--model-path") == staged.replace("/cluster/hf-hub-cache", "/hf_hub_cache")
