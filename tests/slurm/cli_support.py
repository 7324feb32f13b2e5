"""The CLI as a Slurm user drives it (`submit`, `status`), and what is left running after.

Shared by the tests that submit real jobs to the local rig.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .conftest import REPO, job_state, job_steps, wait_job_end

DATA = Path(__file__).parent / "data"
RECIPE = DATA / "sim-1p2d-3node.yaml"
PROFILE = DATA / "local-slurm.yaml"


def disagg(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "disagg", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


def submit(selector: str | None, out: Path, *extra: str, recipe: Path = RECIPE, **kw: Any) -> str:
    """Submit `recipe` (one selected variant, or the whole file when `selector` is None)."""
    done = disagg(
        "submit",
        str(recipe) if selector is None else f"{recipe}:{selector}",
        "--cluster",
        str(PROFILE),
        "--out",
        str(out),
        "--json",
        *extra,
        **kw,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [row["run_dir"] for row in rows] == [str(out.resolve())]
    return str(rows[0]["job_id"])


def submit_and_complete(recipe: Path, out: Path) -> str:
    """Submit a whole recipe file, wait for its job, and require that Slurm completed it
    (the job's output tail is the failure message); returns the job id."""
    job_id = submit(None, out, recipe=recipe)
    final = wait_job_end(job_id, timeout_s=300)
    assert final == "COMPLETED", (out / f"slurm-{job_id}.out").read_text()[-3000:]
    return job_id


def status(target: str) -> tuple[int, dict[str, Any]]:
    done = disagg("status", target, "--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def wait_for(predicate: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def wait_point(run_dir: Path, index: int, status: str, timeout_s: float, what: str) -> None:
    """Wait until the run's state says point `index` (0: the first) has `status`."""

    def reached() -> bool:
        points = read_json(run_dir / "state.json").get("points", [])
        return len(points) > index and points[index]["status"] == status

    wait_for(reached, timeout_s, what)


def read_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data


def role_processes(run_dir: Path) -> dict[str, list[int]]:
    """PIDs of the run's role processes on this host, found by the ports they serve."""
    state = read_json(run_dir / "state.json")
    ports = {
        str(port): role["name"]
        for role in state.get("roles", [])
        for name, port in role.get("ports", {}).items()
        if name == "http_port"
    }
    found: dict[str, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if Path(words[0]).name in ("srun", "env"):
            continue  # the launcher's side of the step, not the role's own process
        for i, word in enumerate(words[:-1]):
            if word == "--port" and words[i + 1] in ports:
                found.setdefault(ports[words[i + 1]], []).append(int(proc.name))
    return found


def assert_nothing_left(run_dir: Path, job_id: str) -> None:
    assert job_steps(job_id) == []
    left = wait_for_gone(run_dir)
    assert not left, f"role processes left running: {left}"


def wait_for_gone(run_dir: Path, timeout_s: float = 5.0) -> dict[str, list[int]]:
    deadline = time.monotonic() + timeout_s
    left = role_processes(run_dir)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = role_processes(run_dir)
    return left


def wait_started(job_id: str, timeout_s: float = 600.0) -> None:
    """Wait out the queue (other jobs on a shared rig), so later waits count run time only."""
    wait_for(lambda: job_state(job_id) not in ("PENDING", "CONFIGURING"), timeout_s, "start")
