"""`python -m disagg.job RUN_DIR [--executor local|slurm]`: run one plan in its run directory.

What a Slurm batch script (or `disagg run --local`) executes; it reads only plan.json.
Exit status: 0 every point valid; 1 the run failed; 2 bad run directory or plan;
3 cancelled. Under Slurm, SIGUSR1 before the time limit stops the run as timed out and
the job waits for Slurm's kill, so that it ends TIMEOUT, as it did, rather than FAILED.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from disagg.errors import EXIT_USAGE, DisaggError
from disagg.plan.model import Plan

# After a cancelled run: wait for `disagg cancel`'s scancel, so the job ends CANCELLED
# rather than FAILED with exit status 3.
SLURM_CANCEL_LINGER_S = 10.0
# After a timed-out run: Slurm checks time limits about every 30 s and kills that late.
SLURM_TIMEOUT_LINGER_S = 90.0
# `disagg submit` holds the run directory's lock until sbatch answered, and a fast
# scheduler may start the job before that.
LOCK_WAIT_S = 30.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m disagg.job", description=__doc__.split("\n")[0]
    )
    parser.add_argument("run_dir", type=Path, help="run directory holding plan.json")
    parser.add_argument("--executor", default="local", help="local (default) or slurm")
    args = parser.parse_args(argv)
    try:
        from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions, make_launcher
        from disagg.launch.runlock import hold_run_dir, own_slurm_job

        run_dir: Path = args.run_dir.resolve()
        plan = Plan.read(run_dir)
        lock = hold_run_dir(
            run_dir, wait_s=LOCK_WAIT_S, own_job=own_slurm_job(), log=lambda line: print(line)
        )
        try:
            launcher = make_launcher(args.executor, plan, run_dir)
            options = OrchestratorOptions(executor=args.executor)
            summary = Orchestrator(run_dir, plan, launcher, options).run()
        finally:
            lock.release()
    except DisaggError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code or EXIT_USAGE
    from disagg.launch.state import RunStatus

    if args.executor == "slurm" and summary.status is RunStatus.CANCELLED:
        time.sleep(SLURM_CANCEL_LINGER_S)
    if args.executor == "slurm" and summary.status is RunStatus.TIMEOUT:
        _await_time_limit(plan, summary.started_at, _job_end_time())
    return summary.exit_code


def _job_end_time() -> float | None:
    """When Slurm will end this job (its limit may have been changed since submission)."""
    from disagg.launch import slurmctl

    job_id = os.environ.get("SLURM_JOB_ID")
    try:
        return slurmctl.end_time(job_id) if job_id else None
    except DisaggError:
        return None


def _await_time_limit(plan: Plan, started_at: float, end_time: float | None) -> None:
    """Sleep until Slurm ends the job at its time limit, when that limit is near.

    `end_time` is Slurm's; without it, the plan's limit counted from the run's start.
    """
    from disagg.plan.limits import slurm_margin_s, slurm_seconds

    limit = plan.slurm.time_limit
    if end_time is None:
        allowed = slurm_seconds(limit) if limit else None
        if allowed is None:
            return
        end_time = started_at + allowed
    left = end_time - time.time()
    if left > slurm_margin_s(limit) + SLURM_TIMEOUT_LINGER_S:
        return  # the recipe's own run_timeout ended it, long before Slurm's limit
    print(f"timed out: waiting for Slurm's time limit (in about {max(0, int(left))} s)")
    sys.stdout.flush()
    time.sleep(max(0.0, left) + SLURM_TIMEOUT_LINGER_S)


if __name__ == "__main__":
    sys.exit(main())
