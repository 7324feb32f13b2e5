"""Render `RUN_DIR/job.sbatch`: the directives a plan asks for, then the in-job orchestrator.

Every value is shell-quoted and no environment value is written: secrets reach the
job through the submitter's environment. `--signal=B:USR1@N` warns the orchestrator
before the time limit (it keeps its results, the run times out), and `--no-kill` keeps
a multi-node job alive when a node fails, so that the run names the roles it lost.
A heterogeneous job is one block of directives per component, as srtctl writes it.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from disagg.errors import DisaggError
from disagg.plan.limits import slurm_margin_s
from disagg.plan.model import Plan, SlurmPlan

SBATCH_FILE = "job.sbatch"
OUTPUT_PATTERN = "slurm-%j.out"
# The signal Slurm sends the orchestrator before the time limit (see disagg.job).
TIME_LIMIT_SIGNAL = "USR1"
WARNING_SIGNALS = ("USR1", "USR2")  # what a recipe's own `signal` directive may name
_SIGNAL_SPEC = re.compile(r"^(?:(?P<flags>[A-Za-z]+):)?(?:SIG)?(?P<name>[A-Za-z0-9]+)(?:@\d+)?$")
# Directives the run itself needs; a recipe or profile may not replace them.
RESERVED = frozenset({"job-name", "output", "error", "chdir", "nodes", "parsable", "wrap"})
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")


def directives(
    slurm: SlurmPlan, run_dir: Path, component: int | None = None
) -> list[tuple[str, str | None]]:
    """(key, value) pairs in file order; None is a bare flag (`--exclusive`). `component`:
    one component of a heterogeneous job, the job-wide ones only in the first, as srtctl."""
    first = not component
    nodes = slurm.nodes if component is None else slurm.het_nodes[component]
    pairs: dict[str, str | None] = {}
    if first:
        pairs["job-name"] = slurm.job_name
        pairs["output"] = str(run_dir / OUTPUT_PATTERN)
        pairs["chdir"] = str(run_dir)
    pairs["nodes"] = str(nodes)
    pairs["ntasks-per-node"] = "1"
    if slurm.partition:
        pairs["partition"] = slurm.partition
    if slurm.account:
        pairs["account"] = slurm.account
    if slurm.time_limit:
        pairs["time"] = slurm.time_limit
    if first:  # the batch shell, and so the orchestrator, runs in the first component
        # Slurm may send it up to a minute early; the run's own limit stops it near then too.
        margin = max(1, int(slurm_margin_s(slurm.time_limit)))
        pairs["signal"] = f"B:{TIME_LIMIT_SIGNAL}@{margin}"
    if slurm.nodes > 1:
        pairs["no-kill"] = None
    if slurm.gpus_per_node > 0:
        if slurm.gpu_directive == "gres":
            pairs["gres"] = f"gpu:{slurm.gpus_per_node}"
        elif slurm.gpu_directive == "gpus-per-node":
            pairs["gpus-per-node"] = str(slurm.gpus_per_node)
    if slurm.exclusive:
        pairs["exclusive"] = None
    if slurm.segment:
        pairs["segment"] = str(slurm.segment if component is None else nodes)
    for key, value in slurm.directives.items():
        name = key.removeprefix("--")
        if not _KEY.match(name):
            raise DisaggError(
                f"sbatch directive {key!r} is not an option name",
                hint="write directives as `option-name: value`, e.g. `constraint: h100`",
            )
        if name in RESERVED:
            raise DisaggError(
                f"sbatch directive {name!r} is set by disagg and cannot be overridden",
                hint=f"remove it from sbatch_directives (reserved: {', '.join(sorted(RESERVED))})",
            )
        pairs[name] = value if value != "" else None  # replaces a default of the same name
    check_signal_directive(slurm)
    for key, given in pairs.items():
        if given is not None and ("\n" in given or "\r" in given):
            raise DisaggError(f"sbatch directive {key!r} has a line break in its value")
    return list(pairs.items())


def warning_signal(slurm: SlurmPlan) -> str | None:
    """The signal that warns the orchestrator of the time limit: USR1, or what the recipe's
    own `signal` directive names; None when that directive cannot serve (see
    `check_signal_directive`)."""
    given = _signal_directive(slurm)
    if given is None:
        return TIME_LIMIT_SIGNAL
    match = _SIGNAL_SPEC.match(given.strip())
    if match is None or "B" not in (match["flags"] or "").upper():
        return None
    name = match["name"].upper()
    return name if name in WARNING_SIGNALS else None


def check_signal_directive(slurm: SlurmPlan) -> None:
    """Refuse a `signal` directive that would change what a time limit does to the run."""
    given = _signal_directive(slurm)
    if given is not None and warning_signal(slurm) is None:
        raise DisaggError(
            f"sbatch directive signal={given!r}: disagg needs Slurm's time-limit warning "
            "as B:USR1@N or B:USR2@N",
            hint="B: sends it to the orchestrator alone (a role would die of it), and "
            "SIGTERM would read as a cancel; or drop the directive (B:USR1@60 by default)",
        )


def _signal_directive(slurm: SlurmPlan) -> str | None:
    return next((v for k, v in slurm.directives.items() if k.removeprefix("--") == "signal"), None)


def render(plan: Plan, run_dir: Path, *, python: str | None = None) -> str:
    """The whole batch script as text (golden-tested)."""
    run_dir = run_dir.resolve()
    python = python or sys.executable
    lines = [
        "#!/bin/bash",
        f"# disagg run of {' '.join(plan.selector.split())}",
        "# Resubmit with `disagg submit --resume RUN_DIR`; results already measured are kept.",
    ]
    q = shlex.quote
    components: list[int | None] = list(range(len(plan.slurm.het_nodes))) or [None]
    for component in components:
        if component:
            lines.append("#SBATCH hetjob")
        for key, value in directives(plan.slurm, run_dir, component):
            lines.append(f"#SBATCH --{key}" if value is None else f"#SBATCH --{key}={q(value)}")
    lines += ["", "set -euo pipefail", f"cd {q(str(run_dir))}"]
    lines.append(f"exec {q(python)} -m disagg.job {q(str(run_dir))} --executor slurm")
    return "\n".join(lines) + "\n"
