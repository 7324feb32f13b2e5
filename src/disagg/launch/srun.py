"""The Slurm executor inside an allocation: every role task is one `srun --overlap` step.

The orchestrator (`python -m disagg.job RUN_DIR --executor slurm`) runs in the batch
step on the first node and starts each task with

    srun --overlap --jobid J --nodes 1 --ntasks 1 --nodelist NODE --job-name ROLE.RANK ARGV

Environment: the task's variables are set on the srun process itself (srun
propagates its caller's environment by default), so values such as
`MODEL_REPOS=a/x,b/y` arrive whole; nothing is ever joined into `--export`. Slurm
sets the GPU visibility variables of a step from its GRES, so the orchestrator's
GPU pinning is re-applied with `env VAR=ids` in front of the command.

Node names come from `scontrol show hostnames $SLURM_JOB_NODELIST` and addresses from
`scontrol show node` (NodeAddr), never from a step's output. In a heterogeneous job
(`SlurmPlan.het_nodes`) the node ranks run through the components' node lists
(`SLURM_JOB_NODELIST_HET_GROUP_<n>`, group 0 first), every step names its node's
component with `--het-group=N` as srtctl's `start_srun_process` does (Slurm refuses a
step on another component's node without it), and the steps and nodes of every
component (`SLURM_JOB_ID_HET_GROUP_<n>`) are watched. Teardown signals each
step, then cancels it, and `close()` waits until none of this run's steps is left.
A step's end stops only what Slurm still tracks as the step's; what a task left
outside it (`setsid cmd &`) is found by its task mark and stopped by a short sweep
step on each of the task's nodes (`disagg.launch.sweep`).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from functools import partial
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch import slurmctl, sweep
from disagg.launch.base import RoleLauncher, RoleProcess, spawn_logged
from disagg.launch.launchers import register
from disagg.plan.container_paths import RUN_DIR_INSIDE
from disagg.plan.model import GpuVendor, MpiPlan, Plan, SlurmPlan

STEP_PREFIX = "disagg."
PROBE_WINDOW = 256
STEP_GONE_TIMEOUT_S = 30.0
# Variables Slurm rewrites for a step from its GPU allocation.
GPU_VARS = frozenset(
    var for vendor in GpuVendor for var in vendor.visible_devices_vars
) | frozenset({"GPU_DEVICE_ORDINAL"})

_PROBE_CODE = """\
import socket, sys
start, count = int(sys.argv[1]), int(sys.argv[2])
for port in range(start, start + count):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("0.0.0.0", port))
    except OSError:
        print(port)
    finally:
        s.close()
"""


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
    """The full srun command line of one task (also what the golden tests record).

    `role_options` (the role's own srun options) go over the job's, and over an MPI
    step's own, as srtctl merges a role's over the recipe's on its worker steps.

    In a container, `run_dir` is mounted at `RUN_DIR_INSIDE` (`${run.dir}` there).

    With `mpi`, the step spans `mpi_nodes` (the head node first) with one rank per GPU:
    `--nodes/--ntasks/--ntasks-per-node/--mpi` instead of one task on `node`.
    """
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


class SrunProcess(RoleProcess):
    """One srun step; `stop` signals the tasks, then cancels the step, then kills srun."""

    def __init__(
        self,
        launcher: SrunLauncher,
        role: str,
        node_rank: int,
        popen: subprocess.Popen[bytes],
        *,
        mark: str = "",
        nodes: Sequence[int] = (),
    ) -> None:
        self.role = role
        self.node_rank = node_rank
        self.name = step_name(role, node_rank)
        self.mark = mark  # DISAGG_TASK_MARK of the step's tasks
        self.nodes = list(dict.fromkeys([node_rank, *nodes]))  # node ranks the step ran on
        self._launcher = launcher
        self._popen = popen
        self._swept = False

    @property
    def pid(self) -> int:
        return self._popen.pid

    def poll(self) -> int | None:
        return self._popen.poll()

    def stop(self, grace_s: float = 5.0) -> int | None:
        """End the step, then stop what its tasks left outside it on its nodes."""
        code = self._end_step(grace_s)
        if self.mark and not self._swept:
            self._swept = True
            for rank in self.nodes:
                self.swept = (*self.swept, *self._launcher.sweep(rank, self.mark, grace_s))
        return code

    def _end_step(self, grace_s: float) -> int | None:
        code = self._popen.poll()
        if code is not None:
            return code
        step = self._launcher.step_id(self.name)
        if step is not None:
            # TERM reaches the task processes themselves; srun exits when they are gone.
            _quietly(partial(slurmctl.cancel, step, signal="TERM"))
        else:
            _signal(self._popen, signal.SIGTERM)  # srun forwards it to the tasks
        try:
            return self._popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        if step is not None:
            _quietly(partial(slurmctl.cancel, step))  # TERM, KillWait, KILL: the whole step
        else:
            _signal(self._popen, signal.SIGTERM)
        try:
            return self._popen.wait(timeout=grace_s + 5.0)
        except subprocess.TimeoutExpired:
            _signal(self._popen, signal.SIGKILL)
            return self._popen.wait()


class SrunLauncher(RoleLauncher):
    """Starts role tasks as srun steps of the current job."""

    def __init__(
        self,
        *,
        job_id: str,
        node_names: Sequence[str],
        slurm: SlurmPlan,
        python: str = sys.executable,
        run_dir: Path | None = None,
        component_ids: Sequence[str] = (),
    ) -> None:
        self.job_id = job_id
        # A heterogeneous job's component job ids (group order); its steps and nodes are
        # Slurm's under these ids, not the job's own.
        self.component_ids = list(component_ids) or [job_id]
        self.slurm = slurm
        self.run_dir = run_dir  # mounted into every container
        self.python = python
        self._names = list(node_names)
        self._nodes: dict[str, slurmctl.NodeInfo] | None = None
        self._busy: dict[int, tuple[range, set[int]]] = {}
        self._launched: list[SrunProcess] = []
        self.token = f"slurm-{job_id}-{secrets.token_hex(6)}"  # this run's task marks

    @classmethod
    def from_environment(
        cls,
        slurm: SlurmPlan,
        environ: Mapping[str, str] = os.environ,
        *,
        run_dir: Path | None = None,
    ) -> SrunLauncher:
        job_id = environ.get("SLURM_JOB_ID")
        nodelist = environ.get("SLURM_JOB_NODELIST")
        if not job_id or not nodelist:
            raise DisaggError(
                "the slurm executor runs inside a Slurm job (SLURM_JOB_ID is not set)",
                hint="submit the run with `disagg submit`, or use `disagg run --local`",
            )
        if not slurm.het_nodes:
            names = slurmctl.hostnames(nodelist)
            return cls(job_id=job_id, node_names=names, slurm=slurm, run_dir=run_dir)
        groups = _het_groups(environ, slurm.het_nodes)
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

    def _is_this_host(self, node_rank: int) -> bool:
        info = self._node_info()[self._names[node_rank]]
        here = socket.gethostname().split(".", 1)[0]
        return info.hostname.split(".", 1)[0] == here or info.address.startswith("127.")

    def port_is_free(self, node_rank: int, port: int) -> bool:
        """Bind probe: here for nodes on this host, else one srun step per window of ports."""
        if self._is_this_host(node_rank):
            return super().port_is_free(node_rank, port)
        window, busy = self._busy.get(node_rank, (range(0), set()))
        if port not in window:
            window = range(port, min(port + PROBE_WINDOW, 65536))
            busy = self.busy_ports(node_rank, window)
            self._busy[node_rank] = (window, busy)
        return port not in busy

    def busy_ports(self, node_rank: int, window: range) -> set[int]:
        """Ports of `window` that cannot be bound on the node, from one quick srun step."""
        argv = srun_argv(
            job_id=self.job_id,
            node=self._names[node_rank],
            name=f"{STEP_PREFIX}portprobe",
            argv=[self.python, "-c", _PROBE_CODE, str(window.start), str(len(window))],
            env={},
            slurm=self.slurm,
            het_group=self.slurm.het_group(node_rank),
        )
        out = slurmctl.run(argv, timeout_s=60.0)
        return {int(word) for word in out.split() if word.isdigit()}

    def sweep(self, node_rank: int, mark: str, grace_s: float) -> list[str]:
        """Stop the processes carrying `mark` on the node, from one quick srun step;
        `NAME (pid N) on NODE` for each (nothing when Slurm refuses the step)."""
        node = self._names[node_rank]
        argv = srun_argv(
            job_id=self.job_id,
            node=node,
            name=f"{STEP_PREFIX}sweep",
            argv=[self.python, "-I", "-c", _sweep_source(), mark, f"{grace_s:g}"],
            env={},
            slurm=self.slurm,
            het_group=self.slurm.het_group(node_rank),
        )
        try:
            out = slurmctl.run(argv, timeout_s=30.0 + grace_s)
        except DisaggError:
            return []
        return [f"{line.strip()} on {node}" for line in out.splitlines() if line.strip()]

    # ---- tasks ----------------------------------------------------------------------

    def launch(
        self,
        *,
        role: str,
        node_rank: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        container_image: str | None = None,
        mpi: MpiPlan | None = None,
        mpi_nodes: Sequence[int] = (),
        srun_options: Mapping[str, str] | None = None,
    ) -> RoleProcess:
        if not argv:
            raise DisaggError(f"role {role} has an empty command")
        for rank in (node_rank, *mpi_nodes):
            if not 0 <= rank < len(self._names):
                raise DisaggError(
                    f"role {role} wants node rank {rank}; the job has {len(self._names)} node(s)"
                )
        mark = f"{self.token}/{role}.{node_rank}"
        env = {**env, sweep.MARK_VAR: mark}
        cmd = srun_argv(
            mpi=mpi,
            mpi_nodes=[self._names[rank] for rank in mpi_nodes],
            job_id=self.job_id,
            node=self._names[node_rank],
            name=step_name(role, node_rank),
            argv=argv,
            env=env,
            slurm=self.slurm,
            container_image=container_image,
            container_env=list(env),
            run_dir=self.run_dir,
            het_group=self.slurm.het_group(node_rank),
            role_options=srun_options,
        )
        popen = spawn_logged(
            cmd,
            env=env,
            log_path=log_path,
            banner=f"{role} node {node_rank} ({self._names[node_rank]})",
            failure=f"role {role}: cannot start srun",
            hint="the slurm executor needs srun on the first node of the job",
        )
        process = SrunProcess(self, role, node_rank, popen, mark=mark, nodes=mpi_nodes)
        self._launched.append(process)
        return process

    def step_id(self, name: str) -> str | None:
        """The `JOB.STEP` id of this job's step called `name`, if it still runs."""
        try:
            found = slurmctl.steps(",".join(self.component_ids))
        except DisaggError:
            return None
        return next((s.step_id for s in found if s.name == name), None)

    def lost_nodes(self) -> dict[int, str]:
        """Nodes the job no longer holds: Slurm removes a failed node from a `--no-kill`
        job's node list (and ends the steps on it), whatever state the node is in now."""
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

    def close(self) -> None:
        """Cancel any step this run started that is still there, and wait until none is."""
        for process in self._launched:
            if process.poll() is None:
                process.stop(grace_s=1.0)
        cancelled: set[str] = set()
        deadline = time.monotonic() + STEP_GONE_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                steps = slurmctl.steps(",".join(self.component_ids))
                left = [s for s in steps if s.name.startswith(STEP_PREFIX)]
            except DisaggError:
                return
            if not left:
                return
            for step in left:
                if step.step_id not in cancelled:
                    cancelled.add(step.step_id)
                    _quietly(partial(slurmctl.cancel, step.step_id))
            time.sleep(0.2)


def _het_groups(environ: Mapping[str, str], planned: Sequence[int]) -> list[tuple[list[str], str]]:
    """(node names, component job id) of each component of the heterogeneous job this
    runs in, checked against the component sizes the plan asked for."""
    size = environ.get("SLURM_HET_SIZE", "")
    if not size.isdigit() or int(size) != len(planned):
        raise DisaggError(
            f"the plan is a heterogeneous job of {len(planned)} components, but this job "
            f"has SLURM_HET_SIZE={size or 'unset'}",
            hint="submit the run with `disagg submit`, which writes the `#SBATCH hetjob` groups",
        )
    groups: list[tuple[list[str], str]] = []
    for group, count in enumerate(planned):
        nodelist = environ.get(f"SLURM_JOB_NODELIST_HET_GROUP_{group}", "")
        component = environ.get(f"SLURM_JOB_ID_HET_GROUP_{group}", "")
        names = slurmctl.hostnames(nodelist) if nodelist else []
        if len(names) != count or not component:
            raise DisaggError(
                f"heterogeneous job component {group} has {len(names)} node(s) "
                f"({nodelist or 'no SLURM_JOB_NODELIST_HET_GROUP_' + str(group)}); "
                f"the plan asked for {count}"
            )
        groups.append((names, component))
    return groups


def _sweep_source() -> str:
    """`sweep.py` itself, run with `python -c` on a node (standard library only)."""
    return Path(sweep.__file__).read_text()


def _signal(popen: subprocess.Popen[bytes], signum: int) -> None:
    with suppress(ProcessLookupError):
        popen.send_signal(signum)


def _quietly(action: Callable[[], None]) -> None:
    """Teardown goes on when one scancel fails (the step may already be gone)."""
    with suppress(DisaggError):
        action()


def _factory(plan: Plan, run_dir: Path) -> RoleLauncher:
    return SrunLauncher.from_environment(plan.slurm, run_dir=run_dir)


register("slurm", _factory)
