"""scripts/engine-env: one environment per pinned spec, built atomically, reused after."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .vllm_support import REPO


def _fake_repo(tmp_path: Path, post_install: str | None = None) -> Path:
    """A copy of the script (and of bootstrap, which gives it uv) beside a spec with no
    packages (builds offline in seconds)."""
    repo = tmp_path / "repo"
    spec = repo / "scripts" / "engine-envs" / "demo"
    spec.mkdir(parents=True)
    for script in ("engine-env", "bootstrap"):
        shutil.copy2(REPO / "scripts" / script, repo / "scripts" / script)
    (spec / "requirements.lock").write_text("# no packages\n")
    (spec / "python").write_text("3.11\n")
    if post_install is not None:
        (spec / "post-install").write_text(f"#!/usr/bin/env bash\n{post_install}\n")
        (spec / "post-install").chmod(0o755)
    return repo


def _run(repo: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DISAGG_ENGINE_ENVS": str(cache)}
    return subprocess.run(
        [str(repo / "scripts" / "engine-env"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_builds_once_and_prints_the_same_path_after(tmp_path: Path) -> None:
    repo, cache = _fake_repo(tmp_path, 'touch "$1/built-marker"'), tmp_path / "cache"
    first = _run(repo, cache, "demo")
    assert first.returncode == 0, first.stderr
    path = Path(first.stdout.strip())
    assert path.parent == cache and (path / "bin" / "python").exists()
    assert "building" in first.stderr
    (path / "built-marker").unlink()
    again = _run(repo, cache, "demo")
    assert again.returncode == 0 and Path(again.stdout.strip()) == path
    assert not (path / "built-marker").exists(), "a cached environment was built again"
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == [path.name]


def test_a_changed_pin_gets_a_new_environment(tmp_path: Path) -> None:
    repo, cache = _fake_repo(tmp_path), tmp_path / "cache"
    before = Path(_run(repo, cache, "demo").stdout.strip())
    lock = repo / "scripts" / "engine-envs" / "demo" / "requirements.lock"
    lock.write_text("# no packages, other comment\n")
    after = _run(repo, cache, "demo")
    assert after.returncode == 0, after.stderr
    assert Path(after.stdout.strip()) != before and before.exists()


def test_a_failed_build_leaves_nothing_at_the_final_path(tmp_path: Path) -> None:
    repo, cache = _fake_repo(tmp_path, "exit 7"), tmp_path / "cache"
    done = _run(repo, cache, "demo")
    assert done.returncode == 1
    assert "post-install" in done.stderr and done.stdout == ""
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.parametrize("args", [(), ("no-such-engine",)])
def test_bad_usage_is_exit_2_naming_the_engines(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = _run(_fake_repo(tmp_path), tmp_path / "cache", *args)
    assert done.returncode == 2
    assert "usage: scripts/engine-env ENGINE" in done.stderr and "demo" in done.stderr


@pytest.mark.real_engine
def test_vllm_environment_is_the_cpu_build_with_its_console_script(vllm_env: Path) -> None:
    assert vllm_env.parent != REPO and REPO not in vllm_env.parents
    version = subprocess.run(
        [str(vllm_env / "bin" / "vllm"), "--version"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "cpu" in version
    imports = "import nixl, torch; print(torch.__version__)"
    torch_version = subprocess.run(
        [str(vllm_env / "bin" / "python"), "-c", imports],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert torch_version.strip().endswith("+cpu")
