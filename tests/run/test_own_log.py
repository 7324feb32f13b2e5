"""A task that writes its own log (the benchmark command): its stdio is the log file and
/dev/null, not slurmstepd's pipes, so what it leaves in the background cannot hold its
step open (slurmstepd waits 60 s for a step's I/O). Seen through a stand-in `srun` that
records its command line and runs the task part as srun would; the real step is
`tests/slurm/test_custom_benchmark.py`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from disagg.launch.base import RoleProcess
from disagg.launch.srun import SrunLauncher
from disagg.plan.container_paths import RUN_DIR_INSIDE
from disagg.plan.model import SlurmPlan

# Records its arguments, then runs what follows the last `--`-less srun option (the task).
FAKE_SRUN = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["SRUN_SEEN"], "w") as out:
    json.dump(args, out)
task = [a for a in args if not a.startswith("--")]
os.execvp(task[0], task)
"""


@pytest.fixture
def fake_srun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun = bin_dir / "srun"
    srun.write_text(FAKE_SRUN)
    srun.chmod(srun.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    seen = tmp_path / "srun-args.json"
    monkeypatch.setenv("SRUN_SEEN", str(seen))
    return seen


def launcher(run_dir: Path, *, pyxis: bool) -> SrunLauncher:
    slurm = SlurmPlan(job_name="t", nodes=1, gpus_per_node=8, pyxis=pyxis)
    return SrunLauncher(job_id="7", node_names=["node1"], slurm=slurm, run_dir=run_dir)


def wait_exit(process: RoleProcess) -> int:
    while (code := process.poll()) is None:
        time.sleep(0.05)
    return code


def test_the_task_writes_its_log_and_what_it_left_holds_nothing_open(
    tmp_path: Path, fake_srun: Path
) -> None:
    log = tmp_path / "logs" / "bench.log"
    log.parent.mkdir()
    pid_file = tmp_path / "child.pid"
    command = f"sleep 60 & echo $! > {pid_file}; echo out; echo err >&2; exit 3"
    process = launcher(tmp_path, pyxis=False).launch(
        role="bench",
        node_rank=0,
        argv=["bash", "-c", command],
        env={},
        log_path=log,
        writes_own_log=True,
    )
    child = int(pid_file.read_text()) if pid_file.exists() else None
    try:
        # The step ends with the command, its exit code unchanged, though `sleep` lives on.
        assert wait_exit(process) == 3
        text = log.read_text()
        assert "out\n" in text and "err\n" in text  # both streams, appended to the log
        child = int(pid_file.read_text())
        fds = {os.readlink(f"/proc/{child}/fd/{n}") for n in (0, 1, 2)}
        assert fds == {"/dev/null", str(log)}
    finally:
        if child is not None:
            subprocess.run(["kill", str(child)], check=False)


def test_in_a_container_the_log_is_named_where_the_run_dir_is_mounted(
    tmp_path: Path, fake_srun: Path
) -> None:
    log = tmp_path / "logs" / "bench.log"
    log.parent.mkdir()
    process = launcher(tmp_path, pyxis=True).launch(
        role="bench",
        node_rank=0,
        argv=["true"],
        env={},
        log_path=log,
        container_image="img.sqsh",
        writes_own_log=True,
    )
    wait_exit(process)
    args = json.loads(fake_srun.read_text())
    task = args[args.index("--container-image=img.sqsh") :]
    assert task[-2:] == [f"{RUN_DIR_INSIDE}/logs/bench.log", "true"]
    assert any(a.startswith("--container-mounts=") and RUN_DIR_INSIDE in a for a in task)
