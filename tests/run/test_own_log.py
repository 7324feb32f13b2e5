"""The benchmark command writes its own log: its stdio is the log file and /dev/null, not
the executor's, so what it leaves in the background cannot hold its Slurm step open
(slurmstepd waits 60 s for a step's I/O). The real step is
`tests/slurm/test_custom_benchmark.py`; here the wrapper itself, and the log's path as a
task in a container sees it."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress
from pathlib import Path

from disagg.launch.bench_command import own_log_argv
from disagg.launch.bindings import build_bindings, render_task
from disagg.plan.container_paths import RUN_DIR_INSIDE
from disagg.plan.model import RoleKind, RolePlan, SlurmPlan

from .conftest import make_plan


def test_the_command_writes_its_log_and_what_it_left_holds_nothing_open(tmp_path: Path) -> None:
    log = tmp_path / "bench.log"
    pid_file = tmp_path / "child.pid"
    command = f"sleep 60 & echo $! > {pid_file}; echo out; echo err >&2; exit 3"
    # The executor's pipe stands for srun's I/O: it reaches end of file when the command
    # ends, though `sleep` lives on.
    done = subprocess.run(
        own_log_argv(["bash", "-c", command], str(log)),
        capture_output=True,
        timeout=30,
        check=False,
    )
    child = int(pid_file.read_text())
    try:
        assert done.returncode == 3  # the command's own exit code
        assert (done.stdout, done.stderr) == (b"", b"")
        assert log.read_text() == "out\nerr\n"
        fds = {os.readlink(f"/proc/{child}/fd/{n}") for n in (0, 1, 2)}
        assert fds == {"/dev/null", str(log)}
    finally:
        with suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_in_a_container_the_log_is_where_the_run_dir_is_mounted(tmp_path: Path) -> None:
    bench = RolePlan(
        name="bench",
        kind=RoleKind.BENCH,
        node_ranks=[0],
        argv=own_log_argv(["true"], "${run.dir}/logs/bench.log"),
        container_image="img.sqsh",
    )
    plan = make_plan([bench])
    plan.slurm = SlurmPlan(job_name="t", nodes=1, gpus_per_node=8, pyxis=True)
    bindings = build_bindings(
        plan, addresses=["n1"], ports={}, model_path="m", draft_path="", run_dir=tmp_path
    )
    argv, _env = render_task(plan, bench, 0, bindings)
    assert argv[-2:] == [f"{RUN_DIR_INSIDE}/logs/bench.log", "true"]
    plan.slurm = SlurmPlan(job_name="t", nodes=1, gpus_per_node=8, pyxis=False)
    argv, _env = render_task(plan, bench, 0, bindings)
    assert argv[-2:] == [f"{tmp_path.absolute()}/logs/bench.log", "true"]
