"""The Dynamo a recipe asks for is the Dynamo the job runs, installed as srt-slurm installs it.

The reference is srt-slurm v1.0.68's `srtctl/core/schema.py`: `DynamoConfig`
(`__post_init__`, `_build_install_commands`), `_hash_cached_source_install`,
`dynamo_source_cache_key` and `dynamo_cargo_patch_commands`; 2.x spells the same fields
`dynamo.source.pypi / wheel / git + rev / patches` (docs/schema-reference.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.frontends import dynamo_install
from disagg.frontends.dynamo_install import (
    install_of,
    installed_version,
    installing,
    with_installed_version,
)
from disagg.plan.model import RoleKind
from disagg.recipe.schema import DynamoSection
from engines.engine_support import plan_text
from needs import unavailable

from .test_frontend_plans import WITHOUT_FRONTEND


def _dynamo(**fields: object) -> DynamoSection:
    return DynamoSection.model_validate(fields)


def test_a_release_installs_the_runtime_and_the_package_at_that_version() -> None:
    # _build_install_commands: `ai-dynamo-runtime==V ai-dynamo==V` for `version`
    for fields in ({"version": "1.4.2"}, {"version": "ai-dynamo==1.4.2"}):
        commands = install_of(_dynamo(**fields)).commands()  # type: ignore[union-attr]
        assert commands.endswith(" ai-dynamo-runtime==1.4.2 ai-dynamo==1.4.2")
        assert "--target ${run.dir}/dynamo-install" in commands


def test_a_staged_wheel_version_installs_exactly_that_version_never_a_bare_word() -> None:
    # `wheel` is a package version: dynamo_wheels.py installs `--pre --no-deps`
    # ai-dynamo-runtime==V ai-dynamo==V
    commands = install_of(_dynamo(wheel="1.2.0.dev20260426")).commands()  # type: ignore[union-attr]
    assert "--pre --no-deps ai-dynamo-runtime==1.2.0.dev20260426 ai-dynamo==1.2.0.dev20260426" in (
        commands
    )
    assert not commands.endswith(" 1.2.0.dev20260426")


@pytest.mark.parametrize("wheel", ["ai_dynamo-1.2.0-py3-none-any.whl", "wheels/ai_dynamo", " "])
def test_a_wheel_that_is_not_a_version_is_refused(wheel: str) -> None:
    # __post_init__: "dynamo.wheel must be a package version ..., not a filename"
    with pytest.raises(DisaggError, match=r"dynamo\.wheel"):
        install_of(_dynamo(wheel=wheel))


def test_a_commit_is_built_from_the_upstream_repository_and_cached_by_it() -> None:
    # _hash_cached_source_install: clone, checkout, maturin build of lib/bindings/python,
    # cached under <cache>/<hash> built under <cache>/.<hash>.lock, .complete written last
    commands = install_of(_dynamo(hash="0123abc")).commands()  # type: ignore[union-attr]
    assert f"git clone --quiet {dynamo_install.UPSTREAM} dynamo" in commands
    assert "git checkout --quiet 0123abc" in commands
    assert "cd lib/bindings/python && " in commands and "maturin build --release" in commands
    assert f'OUT="{dynamo_install.CACHE}/0123abc"' in commands
    assert f"flock {dynamo_install.CACHE}/0123abc.lock" in commands
    assert commands.index("maturin build") < commands.index('touch "$OUT/.complete"')
    assert '"$OUT"/ai_dynamo_runtime-*.whl "$SRC/dynamo"' in commands


def test_schema_two_git_and_rev_build_that_repository_at_that_rev() -> None:
    # schema 2's source.rev arrives as v1's hash (the dialect's mapping); git is kept
    dynamo = _dynamo(hash="v1.4.0", source={"git": "https://example.invalid/fork.git"})
    commands = install_of(dynamo).commands()  # type: ignore[union-attr]
    assert "git clone --quiet https://example.invalid/fork.git dynamo" in commands
    assert "git checkout --quiet v1.4.0" in commands


def test_cargo_patches_replace_each_crate_and_key_the_cache_as_srtctl_does() -> None:
    # dynamo_source_cache_key: f"{hash}-patch-{sha1('dep-override-v3\n' + lines)[:8]}"
    patch = 'dynamo-tokenizers = { git = "https://example.invalid/crates", branch = "b" }'
    commands = install_of(_dynamo(hash="abc", cargo_patches=[patch])).commands()  # type: ignore[union-attr]
    digest = hashlib.sha1(("dep-override-v3\n" + patch).encode()).hexdigest()[:8]
    assert f"/abc-patch-{digest}" in commands
    assert "find . -name Cargo.toml -exec sed -i -E" in commands
    assert "s|^dynamo-tokenizers[[:space:]]*=.*|" in commands


def test_top_of_tree_builds_head_every_time() -> None:
    commands = install_of(_dynamo(top_of_tree=True)).commands()  # type: ignore[union-attr]
    assert "git checkout" not in commands and "maturin build" in commands
    assert dynamo_install.CACHE not in commands


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"hash": "abc", "wheel": "1.2.0"}, "more than one source"),
        ({"top_of_tree": True, "hash": "abc"}, "more than one source"),
        ({"cargo_patches": ["x = 1"]}, "cargo_patches"),
        ({"source": {"git": "https://example.invalid/d.git"}}, "without a rev"),
    ],
)
def test_what_srtctl_refuses_is_refused(fields: dict[str, object], said: str) -> None:
    with pytest.raises(DisaggError, match=said):
        install_of(_dynamo(**fields))


def test_a_requested_commit_is_installed_not_listed_as_ignored(tmp_path: Path) -> None:
    for dynamo in ("dynamo:\n  hash: 0123abc\n", "dynamo:\n  top_of_tree: true\n"):
        plan = plan_text(tmp_path, WITHOUT_FRONTEND + dynamo)
        assert not [i for i in plan.ignored if i["field"].startswith("dynamo")]
        for role in plan.roles:
            if role.kind is not RoleKind.SERVICE and role.argv:
                assert "maturin build" in role.argv[2], role.name
        assert [d["id"] for d in plan.differs if d["id"].startswith("dynamo")] == ["dynamo-install"]
    plan = plan_text(tmp_path, WITHOUT_FRONTEND)
    assert {"dynamo-install", "dynamo-default"} <= {d["id"] for d in plan.differs}
    plan = plan_text(tmp_path, WITHOUT_FRONTEND + "dynamo:\n  install: false\n")
    assert not [d for d in plan.differs if d["id"].startswith("dynamo")]


def _wheel(directory: Path, name: str, version: str) -> None:
    """A minimal pure-Python wheel of distribution `name` (a module of the same name)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}_mod.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(directory / f"{dist}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


@pytest.fixture
def pip() -> None:
    """python3 with pip, and flock, as the rendered install runs them: skipped without
    them, failed where the test command provides them (DISAGG_REQUIRE_PIP=1, scripts/pip-up)."""
    found = subprocess.run(
        ["python3", "-m", "pip", "--version"], capture_output=True, check=False, timeout=60
    )
    if found.returncode != 0 or shutil.which("flock") is None:
        unavailable("needs python3 with pip, and flock (scripts/pip-up)", "DISAGG_REQUIRE_PIP")


@pytest.mark.usefixtures("pip")
def test_the_rendered_install_installs_once_per_job_and_records_the_version(
    tmp_path: Path,
) -> None:
    """For real: the rendered commands, pip reading local wheels only, into a run directory."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("ai-dynamo-runtime", "ai-dynamo"):
        _wheel(wheels, name, "9.9.1")
    run_dir = tmp_path / "runs" / "job" / "base-1"
    run_dir.mkdir(parents=True)
    commands = install_of(_dynamo(version="9.9.1")).commands()  # type: ignore[union-attr]
    argv = installing(["python3", "-c", "import ai_dynamo_mod as m; print(m.VERSION)"], commands)
    argv = [arg.replace("${run.dir}", str(run_dir)) for arg in argv]
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    env["PYTHONPATH"] = dynamo_install.env()["PYTHONPATH"].replace("${run.dir}", str(run_dir))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    first = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "9.9.1"  # the role ran on the installed Dynamo
    assert installed_version(run_dir) == "9.9.1"
    shutil.rmtree(wheels)  # a second role of the job must not install again
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "9.9.1"


@pytest.mark.usefixtures("pip")
def test_a_failed_install_leaves_no_marker_and_fails_the_role(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    commands = install_of(_dynamo(version="9.9.2")).commands()  # type: ignore[union-attr]
    argv = [a.replace("${run.dir}", str(run_dir)) for a in installing(["true"], commands)]
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path)}
    failed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert failed.returncode != 0
    assert installed_version(run_dir) is None


def test_results_record_the_installed_dynamo_as_the_routers_version(tmp_path: Path) -> None:
    setup = {"router": "dynamo", "router_version": None, "hw": "h100"}
    assert with_installed_version(setup, tmp_path) == setup  # no install: unknown
    (tmp_path / "dynamo-install").mkdir()
    (tmp_path / "dynamo-install" / ".installed").write_text("1.4.2\n")
    assert with_installed_version(setup, tmp_path)["router_version"] == "1.4.2"
    smg = {"router": "smg", "router_version": "1.13.0"}
    assert with_installed_version(smg, tmp_path) == smg
