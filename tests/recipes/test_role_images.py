"""Schema 2's `roles.<role>.container` and `roles.<role>.srun_options`: each role's worker
steps run in that role's image (an alias resolved through the cluster's `containers`, as
`model.container` is) with its srun options over the job's; roles without their own keep
the job's, and routers run in the job's image (srtctl: "static routers use the
model/backend image")."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.cluster import load_profile
from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.launch.srun import srun_argv
from disagg.plan.model import WORKER_KINDS, Plan, RoleKind
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .recipe_helpers import invoke
from .test_schema2 import SCHEMA2

Write = Callable[..., Path]
TILERT = Path(__file__).parent / "data" / "schema2-role-engines-and-images.yaml"
PREFILL = "  prefill:\n    nodes: 1\n    workers: 1\n"
OWN = PREFILL + "    container: sglang-prefill\n    srun_options:\n      mem: 10G\n"


def _profile(write: Write, *, pyxis: bool = True) -> Path:
    return write(
        f"partition: gpu\ngpus_per_node: 8\npyxis: {'true' if pyxis else 'false'}\n"
        "srun_options:\n  cpu-bind: none\n"
        "containers:\n  sglang: /sq/sglang.sqsh\n"
        "  sglang-prefill:\n    image: docker://lmsysorg/sglang:dev\n"
        "    squashfs: /sq/prefill.sqsh\n"
        "mounts:\n  /lustre/models: /models\nhf_cache: /lustre/models/hub\n",
        name="cluster.yaml",
    )


def _plan(write: Write, text: str, *, pyxis: bool = True) -> Plan:
    (variant,) = load_variants(write(text))
    return place(variant, load_profile(_profile(write, pyxis=pyxis)))


def _images(plan: Plan) -> dict[str, str | None]:
    return {role.name: role.container_image for role in plan.roles if role.kind in WORKER_KINDS}


def test_a_role_runs_in_its_own_image_resolved_through_the_cluster_aliases(write: Write) -> None:
    plan = _plan(write, SCHEMA2.replace(PREFILL, OWN))
    assert plan.slurm.container_image == "/sq/sglang.sqsh"
    assert _images(plan) == {
        "prefill-0": "/sq/prefill.sqsh",
        "decode-0": "/sq/sglang.sqsh",
    }
    # plan.json carries each role's image and its own srun options
    roles = {r["name"]: r for r in json.loads(plan.model_dump_json())["roles"]}
    assert roles["prefill-0"]["container_image"] == "/sq/prefill.sqsh"
    assert roles["prefill-0"]["srun_options"] == {"mem": "10G"}
    assert roles["decode-0"]["srun_options"] == {}
    assert "roles.prefill.container" not in [item["field"] for item in plan.ignored]
    assert "roles.prefill.srun_options" not in [item["field"] for item in plan.ignored]


def test_every_role_image_an_alias_imports_is_staged(write: Write) -> None:
    plan = _plan(write, SCHEMA2.replace(PREFILL, OWN))
    staged = {(c.squashfs, c.image) for c in plan.staging.containers}
    assert staged == {("/sq/prefill.sqsh", "docker://lmsysorg/sglang:dev")}
    # the image the role runs in is one the preflight checks
    from disagg.launch.slurm_preflight import check_containers

    found = check_containers(plan)
    assert any("/sq/prefill.sqsh" in line for line in found.warnings), found
    assert any("/sq/sglang.sqsh" in line for line in found.errors), found


def test_a_role_image_written_as_a_reference_is_used_as_written(write: Write) -> None:
    text = SCHEMA2.replace(PREFILL, PREFILL + "    container: lmsysorg/sglang:v0.5.8\n")
    plan = _plan(write, text)
    assert _images(plan)["prefill-0"] == "lmsysorg/sglang:v0.5.8"
    assert _images(plan)["decode-0"] == "/sq/sglang.sqsh"


def test_a_role_naming_the_jobs_image_changes_nothing(write: Write) -> None:
    same = _plan(write, SCHEMA2.replace(PREFILL, PREFILL + "    container: sglang\n"))
    plain = _plan(write, SCHEMA2)
    assert _images(same) == _images(plain)


def test_an_unknown_role_alias_is_refused_at_its_line(write: Write) -> None:
    text = SCHEMA2.replace(PREFILL, PREFILL + "    container: sglang-prefil\n")
    with pytest.raises(DisaggError) as caught:
        _plan(write, text)
    error = caught.value
    assert not isinstance(error, UnsupportedRecipe)
    assert "'sglang-prefil' is not an alias" in error.message
    assert "sglang, sglang-prefill" in error.message
    assert error.location is not None and error.location.file.endswith("recipe.yaml")
    line = next(n for n, text in enumerate(text.splitlines(), 1) if "sglang-prefil" in text)
    assert error.location.line == line
    assert error.hint is not None and "full image reference" in error.hint


def test_the_cli_names_the_unknown_alias_with_file_and_line(write: Write) -> None:
    text = SCHEMA2.replace(PREFILL, PREFILL + "    container: sglang-prefil\n")
    recipe = write(text)
    code, _out, err = invoke("plan", str(recipe), "--cluster", str(_profile(write)))
    assert code == 2
    line = next(n for n, text in enumerate(text.splitlines(), 1) if "sglang-prefil" in text)
    assert f"recipe.yaml:{line}:" in err and "sglang-prefil" in err


def test_the_role_image_is_rendered_on_its_srun_steps(write: Write) -> None:
    plan = _plan(write, SCHEMA2.replace(PREFILL, OWN))
    lines = {}
    for role in plan.roles:
        if role.kind not in (RoleKind.PREFILL, RoleKind.DECODE):
            continue
        lines[role.name] = srun_argv(
            job_id="1",
            node="n1",
            name=role.name,
            argv=["true"],
            env={},
            slurm=plan.slurm,
            container_image=role.container_image,
            role_options=role.srun_options,
        )
    assert "--container-image=/sq/prefill.sqsh" in lines["prefill-0"]
    assert "--mem=10G" in lines["prefill-0"] and "--cpu-bind=none" in lines["prefill-0"]
    assert "--container-image=/sq/sglang.sqsh" in lines["decode-0"]
    assert not [word for word in lines["decode-0"] if word.startswith("--mem")]


def test_a_role_srun_option_goes_over_the_recipes(write: Write) -> None:
    text = SCHEMA2.replace(PREFILL, OWN) + "srun_options:\n  mem: 1G\n  cpu-bind: cores\n"
    plan = _plan(write, text)
    prefill = next(role for role in plan.roles if role.name == "prefill-0")
    argv = srun_argv(
        job_id="1",
        node="n1",
        name="p",
        argv=["true"],
        env={},
        slurm=plan.slurm,
        role_options=prefill.srun_options,
    )
    assert "--mem=10G" in argv and "--mem=1G" not in argv and "--cpu-bind=cores" in argv


def test_plan_output_names_each_roles_own_image(write: Write) -> None:
    recipe = write(SCHEMA2.replace(PREFILL, OWN))
    code, out, err = invoke("plan", str(recipe), "--cluster", str(_profile(write)))
    assert code == 0, err
    row = " ".join(line.strip() for line in out.splitlines() if "sqsh" in line)
    assert "/sq/sglang.sqsh; prefill in /sq/prefill.sqsh" in row


def test_roles_with_engines_of_their_own_run_each_in_its_image() -> None:
    """As srt-slurm 2.x's TileRT example: prefill and decode each name an image (and an
    engine of their own, run as TileRT's layout); each role runs in its image, the router
    in the model's."""
    (variant,) = load_variants(TILERT)
    plan = place(variant)
    assert _images(plan) == {
        "prefill-0": "registry.example/tilert-rocm-prefill:0.2",
        "decode-0": "registry.example/tilert-rocm-decode:0.2",
    }
    router = next(role for role in plan.roles if role.kind is RoleKind.ROUTER)
    assert router.container_image == "registry.example/tilert-rocm-decode:0.2"  # model's
