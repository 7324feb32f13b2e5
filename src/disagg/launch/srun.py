"""The Slurm executor inside an allocation: every task is one `srun --overlap` step.

Node addresses come from `scontrol` (NodeAddr), never from a step's output. A step's
end stops only what Slurm still tracks as the step's; what a task left outside it is
found by its mark and stopped by a short sweep step on each of its nodes (`procs.py`).
A step's command line is what the Slurm golden tests record: the task's variables are
set on the srun process, never joined into `--export`; Slurm sets GPU visibility from
the step's GRES, so the plan's pinning is re-applied with `env`.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch import procs, slurmctl
from disagg.launch.executor import RoleLauncher, StartedTask, Task, spawn_logged
from disagg.plan.container_paths import RUN_DIR_INSIDE
from disagg.plan.model import GpuVendor, MpiPlan, SlurmPlan

PROBE_WINDOW = 256
STEP_GONE_TIMEOUT_S = 30.0
STEP_PREFIX = "disagg."
# Variables Slurm rewrites for a step from its GPU allocation.
GPU_VARS = frozenset(
    var for vendor in GpuVendor for var in vendor.visible_devices_vars
) | frozenset({"GPU_DEVICE_ORDINAL"})


def step_name(role: str, node_rank: int) -> str:
    return f"{STEP_PREFIX}{role}.{node_rank}"


def srun_argv(
    *,
    job_id: str,
    node: str,
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    slurm: SlurmPlan,
    container_image: str | None = None,
    container_env: Sequence[str] = (),
    mpi: MpiPlan | None = None,
    mpi_nodes: Sequence[str] = (),
    run_dir: Path | None = None,
    het_group: int | None = None,
    role_options: Mapping[str, str] | None = None,
) -> list[str]:
    """The full srun command line of one task. `role_options` go over the job's and an MPI
    step's, as srtctl merges them; `het_group` lets a step reach another component's node."""
    if mpi is not None and mpi_nodes:
        count = len(mpi_nodes)
        placement = [
            f"--nodes={count}",
            f"--ntasks={count * mpi.tasks_per_node}",
            f"--ntasks-per-node={mpi.tasks_per_node}",
            f"--nodelist={','.join(mpi_nodes)}",
            f"--mpi={mpi.mpi}",
        ]
    else:
        placement = ["--nodes=1", "--ntasks=1", f"--nodelist={node}"]
    if het_group is not None:
        placement.append(f"--het-group={het_group}")
    cmd = [
        "srun",
        "--overlap",
        f"--jobid={job_id}",
        *placement,
        f"--job-name={name}",
        "--kill-on-bad-exit=1",
    ]
    options = dict(slurm.srun_options)
    if mpi is not None and mpi_nodes:
        options.update(mpi.srun_options)
    options.update(role_options or {})
    for key, value in sorted(options.items()):
        cmd.append(f"--{key}={value}" if value != "" else f"--{key}")
    if container_image and slurm.pyxis:
        cmd.append(f"--container-image={container_image}")
        mounts = [_mount_text(host, target) for host, target in slurm.container_mounts.items()]
        if run_dir is not None:
            mounts.append(_mount_text(str(run_dir), RUN_DIR_INSIDE))
        if mounts:
            cmd.append(f"--container-mounts={','.join(mounts)}")
        if container_env:
            # Names only (no values): the host's values win over the image's defaults.
            cmd.append(f"--container-env={','.join(sorted(container_env))}")
    pinned = [f"{key}={env[key]}" for key in sorted(env) if key in GPU_VARS]
    if pinned:
        cmd += ["env", *pinned]
    cmd += list(argv)
    return cmd


def _mount_text(host: str, target: str) -> str:
    """One `--container-mounts` entry; `target` may carry pyxis options (`/data:ro`)."""
    if "," in host or "," in target or ":" in host:
        raise DisaggError(
            f"container mount {host}:{target} contains ',' (or ':' in the host path)",
            hint="pyxis splits --container-mounts on both; use a path without them",
        )
    return f"{host}:{target}"


class SrunLauncher(RoleLauncher):
    """Starts role tasks as srun steps of the current job."""

    def __init__(
        self,
        *,
        job_id: str,
        node_names: Sequence[str],
        slurm: SlurmPlan,
        run_dir: Path | None = None,
        component_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(f"slurm-{job_id}-{secrets.token_hex(6)}")
        self.job_id = job_id
        # a heterogeneous job's steps and nodes are Slurm's under its components' ids
        self.component_ids = list(component_ids) or [job_id]
        self.slurm = slurm
        self.run_dir = run_dir  # mounted into every container
        self._names = list(node_names)
        self._nodes: dict[str, slurmctl.NodeInfo] | None = None
        self._busy: dict[int, tuple[range, set[int]]] = {}
        self._swept: set[str] = set()  # marks whose nodes were swept

    @classmethod
    def from_environment(cls, slurm: SlurmPlan, *, run_dir: Path | None = None) -> SrunLauncher:
        job_id = os.environ.get("SLURM_JOB_ID")
        nodelist = os.environ.get("SLURM_JOB_NODELIST")
        if not job_id or not nodelist:
            raise DisaggError(
                "the slurm executor runs inside a Slurm job (SLURM_JOB_ID is not set)",
                hint="submit the run with `disagg submit`, or use `disagg run --local`",
            )
        if not slurm.het_nodes:
            names = slurmctl.hostnames(nodelist)
            return cls(job_id=job_id, node_names=names, slurm=slurm, run_dir=run_dir)
        groups = _het_groups(slurm.het_nodes)
        names = [name for group_names, _ in groups for name in group_names]
        ids = [component for _, component in groups]
        return cls(job_id=job_id, node_names=names, slurm=slurm, run_dir=run_dir, component_ids=ids)

    # ---- nodes ----------------------------------------------------------------------

    def node_names(self) -> list[str]:
        return list(self._names)

    def _node_info(self) -> dict[str, slurmctl.NodeInfo]:
        if self._nodes is None:
            self._nodes = {info.name: info for info in slurmctl.nodes(self._names)}
            missing = [name for name in self._names if name not in self._nodes]
            if missing:
                raise DisaggError(f"scontrol show node does not know {', '.join(missing)}")
        return self._nodes

    def node_addresses(self) -> list[str]:
        info = self._node_info()
        return [info[name].address for name in self._names]

    def port_is_free(self, node_rank: int, port: int) -> bool:
        """Bind probe: here for nodes on this host, else one srun step per window of ports."""
        info = self._node_info()[self._names[node_rank]]
        here = socket.gethostname().split(".", 1)[0]
        if info.hostname.split(".", 1)[0] == here or info.address.startswith("127."):
            return super().port_is_free(node_rank, port)
        window, busy = self._busy.get(node_rank, (range(0), set()))
        if port not in window:
            window = range(port, min(port + PROBE_WINDOW, 65536))
            busy = self.busy_ports(node_rank, window)
            self._busy[node_rank] = (window, busy)
        return port not in busy

    def busy_ports(self, node_rank: int, window: range) -> set[int]:
        """Ports of `window` that cannot be bound on the node, from one quick srun step."""
        args = ["--ports", str(window.start), str(len(window))]
        out = self._on_node(node_rank, "portprobe", args, timeout_s=60.0)
        return {int(word) for word in out.split() if word.isdigit()}

    def _on_node(self, node_rank: int, name: str, args: list[str], timeout_s: float) -> str:
        """Run `procs.py ARGS` on the node as a short srun step; its output."""
        argv = srun_argv(
            job_id=self.job_id,
            node=self._names[node_rank],
            name=f"{STEP_PREFIX}{name}",
            argv=[sys.executable, "-I", "-c", Path(procs.__file__).read_text(), *args],
            env={},
            slurm=self.slurm,
            het_group=self.slurm.het_group(node_rank),
        )
        return slurmctl.run(argv, timeout_s=timeout_s)

    def lost_nodes(self) -> dict[int, str]:
        """Nodes the job no longer holds: Slurm removes a failed node from a `--no-kill`
        job's node list, whatever state the node is in now."""
        held: set[str] = set()
        try:
            for component in self.component_ids:
                info = slurmctl.job(component)
                if info is None or not info.nodes:
                    return {}
                held |= set(slurmctl.hostnames(info.nodes))
        except DisaggError:
            return {}
        lost = {rank: name for rank, name in enumerate(self._names) if name not in held}
        if not lost:
            return {}
        try:
            states = {node.name: node for node in slurmctl.nodes(list(lost.values()))}
        except DisaggError:
            states = {}
        described: dict[int, str] = {}
        for rank, name in lost.items():
            node = states.get(name)
            why = f"{node.state}: {node.reason}" if node and node.reason else (node and node.state)
            described[rank] = f"{name} ({why})" if why else name
        return described

    # ---- tasks ----------------------------------------------------------------------

    def start(self, task: Task, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        for rank in (task.node_rank, *task.mpi_nodes):
            if not 0 <= rank < len(self._names):
                raise DisaggError(
                    f"role {task.role} wants node rank {rank}; the job has "
                    f"{len(self._names)} node(s)"
                )
        cmd = srun_argv(
            mpi=task.mpi,
            mpi_nodes=[self._names[rank] for rank in task.mpi_nodes],
            job_id=self.job_id,
            node=self._names[task.node_rank],
            name=step_name(task.role, task.node_rank),
            argv=task.argv,
            env=env,
            slurm=self.slurm,
            container_image=task.container_image,
            container_env=list(env),
            run_dir=self.run_dir,
            het_group=self.slurm.het_group(task.node_rank),
            role_options=task.srun_options,
        )
        return spawn_logged(
            cmd,
            env=env,
            log_path=task.log_path,
            banner=f"{task.role} node {task.node_rank} ({self._names[task.node_rank]})",
            failure=f"role {task.role}: cannot start srun",
            hint="the slurm executor needs srun on the first node of the job",
        )

    def stop(self, process: StartedTask, grace_s: float) -> int | None:
        """End the step (TERM to its tasks, then cancel it, then kill srun), then stop what
        its tasks left outside it on each of its nodes (`NAME (pid N) on NODE`)."""
        code = self._end_step(process, grace_s)
        if process.mark not in self._swept:
            self._swept.add(process.mark)
            for rank in dict.fromkeys([process.node_rank, *process.task.mpi_nodes]):
                process.swept = (*process.swept, *self._sweep(rank, process.mark, grace_s))
        return code

    def _sweep(self, node_rank: int, mark: str, grace_s: float) -> list[str]:
        try:
            out = self._on_node(
                node_rank, "sweep", [mark, f"{grace_s:g}"], timeout_s=30.0 + grace_s
            )
        except DisaggError:  # Slurm refused the step: nothing to name
            return []
        node = self._names[node_rank]
        return [f"{line.strip()} on {node}" for line in out.splitlines() if line.strip()]

    def _end_step(self, process: StartedTask, grace_s: float) -> int | None:
        popen = process.popen
        code = popen.poll()
        if code is not None:
            return code
        step = self.step_id(step_name(process.role, process.node_rank))
        # TERM to the tasks themselves (srun exits when they are gone), then scancel's TERM,
        # KillWait, KILL of the whole step; without a step, srun forwards SIGTERM to them.
        for step_signal, wait_s in (("TERM", grace_s), (None, grace_s + 5.0)):
            if step is not None:
                self._cancel(step, signal=step_signal)
            else:
                _signal(popen, signal.SIGTERM)
            try:
                return popen.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                pass
        _signal(popen, signal.SIGKILL)
        return popen.wait()

    def step_id(self, name: str) -> str | None:
        """The `JOB.STEP` id of this job's step called `name`, if it still runs."""
        try:
            found = slurmctl.steps(",".join(self.component_ids))
        except DisaggError:
            return None
        return next((s.step_id for s in found if s.name == name), None)

    def close(self) -> None:
        """Cancel any step this run started that is still there, and wait until none is."""
        for process in self.launched:
            if process.poll() is None:
                process.stop(grace_s=1.0)
        cancelled: set[str] = set()
        deadline = time.monotonic() + STEP_GONE_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                steps = slurmctl.steps(",".join(self.component_ids))
            except DisaggError:
                return
            left = [s for s in steps if s.name.startswith(STEP_PREFIX)]
            if not left:
                return
            for step in left:
                if step.step_id not in cancelled:
                    cancelled.add(step.step_id)
                    self._cancel(step.step_id)
            time.sleep(0.2)

    @staticmethod
    def _cancel(step: str, signal: str | None = None) -> None:
        """Teardown goes on when one scancel fails (the step may already be gone)."""
        with suppress(DisaggError):
            slurmctl.cancel(step, signal=signal)


def _het_groups(planned: Sequence[int]) -> list[tuple[list[str], str]]:
    """(node names, component job id) of each component of this heterogeneous job, checked
    against the plan's component sizes."""
    size = os.environ.get("SLURM_HET_SIZE", "")
    if not size.isdigit() or int(size) != len(planned):
        raise DisaggError(
            f"the plan is a heterogeneous job of {len(planned)} components, but this job "
            f"has SLURM_HET_SIZE={size or 'unset'}",
            hint="submit the run with `disagg submit`, which writes the `#SBATCH hetjob` groups",
        )
    groups: list[tuple[list[str], str]] = []
    for group, count in enumerate(planned):
        nodelist = os.environ.get(f"SLURM_JOB_NODELIST_HET_GROUP_{group}", "")
        component = os.environ.get(f"SLURM_JOB_ID_HET_GROUP_{group}", "")
        names = slurmctl.hostnames(nodelist) if nodelist else []
        if len(names) != count or not component:
            raise DisaggError(
                f"heterogeneous job component {group} has {len(names)} node(s) "
                f"({nodelist or 'no SLURM_JOB_NODELIST_HET_GROUP_' + str(group)}); "
                f"the plan asked for {count}"
            )
        groups.append((names, component))
    return groups


def _signal(popen: subprocess.Popen[bytes], signum: int) -> None:
    with suppress(ProcessLookupError):
        popen.send_signal(signum)
