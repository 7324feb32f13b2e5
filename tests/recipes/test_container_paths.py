"""Host paths reach containerised roles through the container mounts; unmounted ones are refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.cluster import load_profile
from disagg.errors import DisaggError
from disagg.launch.bindings import build_bindings, render_task
from disagg.plan.container_paths import to_container
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL, invoke

Write = Callable[..., Path]
CACHE = "/it-share/hf-hub-cache"
STAGED = f"{CACHE}/hub/models--org--tiny/snapshots/0123abcd"


def _profile(write: Write, mounts: str, *, extra: str = "") -> Path:
    return write(
        "partition: gpu\ngpus_per_node: 8\npyxis: true\n"
        "containers:\n  sglang: /sq/sglang.sqsh\n"
        f"models:\n  local: /data/models/tiny\nhf_cache: {CACHE}\n{extra}"
        f"mounts:\n{mounts}",
        name="cluster.yaml",
    )


def _plan(write: Write, profile: Path, model: str = "hf:org/tiny") -> Plan:
    (variant,) = load_variants(write(MINIMAL.replace("hf:org/tiny", model)))
    return place(variant, load_profile(profile))


def _ports(plan: Plan) -> dict[str, dict[str, int]]:
    return {
        role.name: {f"{name}_port": 8000 + 10 * i + j for j, name in enumerate(role.ports)}
        for i, role in enumerate(plan.roles)
    }


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        (STAGED, "/hf_hub_cache/hub/models--org--tiny/snapshots/0123abcd"),
        (CACHE, "/hf_hub_cache"),
        ("/data/models/x", "/models/x"),  # the more specific mount wins
        ("/data/other", "/data/other"),
        ("/database/x", None),  # a prefix of the name is not a parent directory
        ("/elsewhere/x", None),
        ("relative/x", None),
    ],
)
def test_to_container_maps_through_the_most_specific_mount(path: str, inside: str | None) -> None:
    mounts = {CACHE: "/hf_hub_cache", "/data": "/data:ro", "/data/models": "/models"}
    assert to_container(path, mounts) == inside


def test_a_containerised_worker_gets_the_staged_model_as_the_container_sees_it(
    write: Write,
) -> None:
    plan = _plan(write, _profile(write, f"  {CACHE}: /hf_hub_cache\n"))
    bindings = build_bindings(
        plan,
        addresses=["10.0.0.1", "10.0.0.2"],
        ports=_ports(plan),
        model_path=STAGED,
        draft_path="",
        run_dir=Path("/runs/r1"),
    )
    worker = plan.role("prefill-0")
    assert worker.container_image == "/sq/sglang.sqsh"
    argv, _ = render_task(plan, worker, worker.node_ranks[0], bindings)
    assert argv[argv.index("--model-path") + 1] == (
        "/hf_hub_cache/hub/models--org--tiny/snapshots/0123abcd"
    )
    assert STAGED not in " ".join(argv)


def test_without_pyxis_roles_keep_host_paths(write: Write) -> None:
    profile = write(
        f"partition: gpu\ngpus_per_node: 8\nhf_cache: {CACHE}\nmounts:\n  /x: /y\n",
        name="cluster.yaml",
    )
    plan = _plan(write, profile)
    bindings = build_bindings(
        plan,
        addresses=["10.0.0.1", "10.0.0.2"],
        ports=_ports(plan),
        model_path=STAGED,
        draft_path="",
        run_dir=Path("/runs/r1"),
    )
    worker = plan.role("decode-0")
    argv, _ = render_task(plan, worker, worker.node_ranks[0], bindings)
    assert argv[argv.index("--model-path") + 1] == STAGED


def test_a_model_cache_outside_every_mount_is_refused_at_plan_time(write: Write) -> None:
    profile = _profile(write, "  /data: /data\n")
    with pytest.raises(DisaggError) as caught:
        _plan(write, profile)
    message = str(caught.value)
    assert CACHE in message and "outside every container mount" in message
    recipe = write(MINIMAL)
    code, _, error = invoke("plan", str(recipe), "--cluster", str(profile))
    assert code == 2 and "outside every container mount" in error


def _render_worker(plan: Plan, name: str, model_path: str) -> list[str]:
    bindings = build_bindings(
        plan,
        addresses=["10.0.0.1", "10.0.0.2"],
        ports=_ports(plan),
        model_path=model_path,
        draft_path="",
        run_dir=Path("/runs/r1"),
    )
    worker = plan.role(name)
    argv, _ = render_task(plan, worker, worker.node_ranks[0], bindings)
    return argv


def test_a_local_model_is_mounted_at_model_and_the_workers_read_model(write: Write) -> None:
    # srtctl mounts a local model directory at /model in every worker container and gives
    # the engines `/model` (srt-slurm core/runtime.py: RuntimeContext.from_config and
    # worker_model_arg; backends/sglang.py build_worker_command), wherever the host keeps it
    outside = _plan(write, _profile(write, f"  {CACHE}: /hf_hub_cache\n"), model="local")
    assert outside.slurm.container_mounts["/data/models/tiny"] == "/model"
    assert outside.staging.local_path == "/data/models/tiny"
    argv = _render_worker(outside, "prefill-0", "/data/models/tiny")
    assert argv[argv.index("--model-path") + 1] == "/model"
    # a cluster mount that already holds it does not change what the engines read
    mounted = _profile(write, f"  {CACHE}: /hf_hub_cache\n  /data: /data\n")
    plan = _plan(write, mounted, model="local")
    assert plan.slurm.container_mounts == {
        CACHE: "/hf_hub_cache",
        "/data": "/data",
        "/data/models/tiny": "/model",
    }
    argv = _render_worker(plan, "decode-0", "/data/models/tiny")
    assert argv[argv.index("--model-path") + 1] == "/model"


def test_a_repo_model_gets_no_model_mount_and_is_a_listed_difference(write: Write) -> None:
    # srtctl passes an `hf:` model to the engines as the repo id and mounts nothing at
    # /model (core/runtime.py: `if not is_hf_model`); disagg stages it: a compat row
    plan = _plan(write, _profile(write, f"  {CACHE}: /hf_hub_cache\n"))
    assert "/model" not in plan.slurm.container_mounts.values()
    assert "staged-hf-model" in [row["id"] for row in plan.differs]
    local = _plan(write, _profile(write, f"  {CACHE}: /hf_hub_cache\n"), model="local")
    assert "staged-hf-model" not in [row["id"] for row in local.differs]


def test_another_mount_at_model_is_refused_for_a_local_model(write: Write) -> None:
    profile = _profile(write, f"  {CACHE}: /hf_hub_cache\n  /elsewhere: /model\n")
    with pytest.raises(DisaggError) as caught:
        _plan(write, profile, model="local")
    assert "/elsewhere:/model" in caught.value.message
    assert caught.value.location is not None and caught.value.location.line == 3
    # with a repo model nothing is mounted at /model by disagg, so the mount is the site's
    assert _plan(write, profile).slurm.container_mounts["/elsewhere"] == "/model"


def test_a_legacy_root_must_be_mounted_at_its_own_path(write: Write) -> None:
    extra = "legacy_cache_roots: [/shared/models]\n"
    moved = _profile(write, f"  {CACHE}: /hf\n  /shared/models: /m\n", extra=extra)
    with pytest.raises(DisaggError, match="must be mounted at /shared/models"):
        _plan(write, moved)
    same = _profile(write, f"  {CACHE}: /hf\n  /shared/models: /shared/models\n", extra=extra)
    assert _plan(write, same).slurm.pyxis
