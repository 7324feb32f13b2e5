"""`setup_script` runs where srtctl runs it: in every worker's and Dynamo frontend's
container, from the configs directory, before the program (srt-slurm v1.0.68,
`WorkerStageMixin._build_worker_preamble`, `DynamoFrontend._build_preamble`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from disagg.cluster import load_profile
from disagg.launch.bindings import build_bindings, port_field, render_task
from disagg.launch.slurm import render
from disagg.plan.model import WORKER_KINDS, Plan, RolePlan
from disagg.plan.placement import place
from disagg.plan.setup_script import running_setup_script
from disagg.recipe.variants import load_variants
from engines.engine_support import plan_text, recipe

PD = (
    "  gpus_per_node: 8\n  prefill_nodes: 1\n  prefill_workers: 1\n"
    "  decode_nodes: 1\n  decode_workers: 1\n"
)
ROLES = "    prefill:\n      tp-size: 8\n    decode:\n      tp-size: 8\n"


def dynamo_recipe(extra: str = "setup_script: rebuild-deepep.sh\n") -> str:
    return recipe("sglang", ROLES, resources=PD, frontend="dynamo") + extra


def test_workers_and_dynamo_frontends_run_it_first_and_the_job_script_does_not(
    tmp_path: Path,
) -> None:
    plan = plan_text(tmp_path, dynamo_recipe())
    wrapped = {r.name for r in plan.roles if r.argv[:1] == ["bash"] and "setup-script" in r.argv}
    workers = {r.name for r in plan.roles if r.kind in WORKER_KINDS}
    frontends = {r.name for r in plan.roles if "dynamo.frontend" in r.argv}
    assert workers and frontends and wrapped == workers | frontends
    assert "nginx" not in wrapped and "etcd" not in wrapped
    prefill = plan.role("prefill-0").argv
    # before the Dynamo install and the engine, which follow as the wrapper's arguments
    assert prefill[3] == "setup-script" and prefill[4:7] == ["bash", "-c", prefill[6]]
    assert "dynamo.sglang" in prefill
    assert plan.setup_script == "rebuild-deepep.sh"
    assert "setup-script-missing" in [row["id"] for row in plan.differs]
    assert "rebuild-deepep.sh" not in render(plan, tmp_path / "run", python="python3")


def test_a_simulated_run_lists_it_as_ignored(tmp_path: Path) -> None:
    text = recipe("sglang", ROLES, resources=PD, frontend="sglang") + "setup_script: s.sh\n"
    text = text.replace("  type: sglang\n", "  type: sglang\n  engine: sim\n", 1)
    plan = plan_text(tmp_path, text)
    assert not any("setup-script" in role.argv for role in plan.roles)
    assert [i["field"] for i in plan.ignored if i["field"] == "setup_script"] == ["setup_script"]


def test_srtctl_root_mounts_its_configs_directory(tmp_path: Path) -> None:
    """srtctl mounts `<srtctl_root>/configs` at /configs in every container."""
    root = tmp_path / "srt-slurm"
    (root / "configs").mkdir(parents=True)
    cluster = tmp_path / "srtslurm.yaml"
    cluster.write_text(
        f"default_account: a\ndefault_partition: p\nsrtctl_root: {root}\n"
        f"default_mounts: {{{tmp_path / 'hub'}: /hf_hub_cache}}\n"
    )
    (tmp_path / "r.yaml").write_text(dynamo_recipe())
    [variant] = load_variants(tmp_path / "r.yaml")
    plan = place(variant, load_profile(cluster))
    assert plan.slurm.container_mounts[str(root / "configs")] == "/configs"
    worker = plan.role("prefill-0")
    argv, _env = render_task(plan, worker, worker.node_ranks[0], _bindings(plan, tmp_path))
    assert '"/configs"/rebuild-deepep.sh' in argv[2]  # the container's view of it


def _bindings(plan: Plan, run_dir: Path) -> dict[str, dict[str, str]]:
    ports = {r.name: {port_field(p): 31000 + 10 * i + j for j, p in enumerate(r.ports)}
             for i, r in enumerate(plan.roles)}  # fmt: skip
    return build_bindings(
        plan,
        addresses=[f"127.0.0.{i + 1}" for i in range(plan.nodes)],
        ports=ports,
        model_path=str(run_dir / "hub" / "models--org--model" / "snapshots" / "main"),
        draft_path="",
        run_dir=run_dir,
    )


def _run_wrapped(configs: Path, name: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The wrapper bound for a task on a host whose configs directory is `configs`, run."""
    role = RolePlan(name="w", kind="aggregated", node_ranks=[0], argv=["echo", "engine", "ran"])
    argv = running_setup_script(role.argv, name)
    bound = [arg.replace("${run.configs}", str(configs)) for arg in argv]
    return subprocess.run(bound, capture_output=True, text=True, cwd=tmp_path, check=False)


@pytest.mark.parametrize("where", ["", "patches/"])
def test_the_script_runs_from_configs_then_patches_before_the_program(
    tmp_path: Path, where: str
) -> None:
    configs = tmp_path / "configs"
    (configs / where).mkdir(parents=True, exist_ok=True)
    marker = tmp_path / "ran-setup"
    (configs / where / "my setup.sh").write_text(f"echo setup >> {marker}\n")
    done = _run_wrapped(configs, "my setup.sh", tmp_path)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "setup\n"
    assert done.stdout.splitlines()[-1] == "engine ran"  # the program, after the script
    assert f"Running setup script: {configs}/{where}my setup.sh" in done.stdout


def test_a_missing_script_fails_the_task_naming_both_places(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    done = _run_wrapped(configs, "rebuild-deepep.sh", tmp_path)
    assert done.returncode == 1 and "engine ran" not in done.stdout
    assert f"{configs}/rebuild-deepep.sh" in done.stderr
    assert f"{configs}/patches/rebuild-deepep.sh" in done.stderr


def test_a_failing_script_stops_the_program(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "bad.sh").write_text("exit 3\n")
    done = _run_wrapped(configs, "bad.sh", tmp_path)
    assert done.returncode != 0 and "engine ran" not in done.stdout
