"""`python -m disagg.job RUN_DIR [--executor local|slurm]`: run one plan in its run directory.

This is what a Slurm batch script (or `disagg run --local`) executes. It reads only
`RUN_DIR/plan.json`. Exit status: 0 every point valid; 1 the run failed (a role
died, a deadline passed, a point was invalid); 2 bad run directory or plan;
3 cancelled (SIGTERM from `scancel`, or Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from disagg.errors import EXIT_USAGE, DisaggError
from disagg.plan.model import Plan

# After a cancelled run under Slurm: how long to wait for `disagg cancel`'s scancel, so
# that the job ends CANCELLED instead of FAILED with exit status 3. A time limit or a
# plain scancel kills the job during this wait anyway (SIGTERM is default again here).
SLURM_CANCEL_LINGER_S = 10.0


def load_plan(run_dir: Path) -> Plan:
    """Read and validate `RUN_DIR/plan.json`; any problem is a DisaggError (exit 2)."""
    path = run_dir / "plan.json"
    if not run_dir.is_dir():
        raise DisaggError(f"{run_dir}: not a directory", hint="pass a run directory")
    if not path.is_file():
        raise DisaggError(
            f"{run_dir}: not a run directory (no plan.json)",
            hint="create one with `disagg run` or `disagg submit`",
        )
    return read_plan_file(path)


def read_plan_file(path: Path) -> Plan:
    """Read and validate one plan JSON file; any problem is a DisaggError (exit 2)."""
    try:
        return Plan.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise DisaggError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise DisaggError(
            f"{path}: invalid plan at {where or 'top level'}: {first['msg']}"
            + (f" ({exc.error_count()} problems)" if exc.error_count() > 1 else ""),
            hint="plan.json is written by disagg; re-create it rather than editing it by hand",
        ) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m disagg.job", description=__doc__.split("\n")[0]
    )
    parser.add_argument("run_dir", type=Path, help="run directory holding plan.json")
    parser.add_argument("--executor", default="local", help="local (default) or slurm")
    args = parser.parse_args(argv)
    try:
        from disagg.launch.launchers import make_launcher
        from disagg.launch.orchestrator import Orchestrator, OrchestratorOptions

        run_dir: Path = args.run_dir.resolve()
        plan = load_plan(run_dir)
        launcher = make_launcher(args.executor, plan, run_dir)
        options = OrchestratorOptions(executor=args.executor)
        summary = Orchestrator(run_dir, plan, launcher, options).run()
    except DisaggError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code if exc.exit_code else EXIT_USAGE
    from disagg.launch.state import RunStatus

    if args.executor == "slurm" and summary.status is RunStatus.CANCELLED:
        time.sleep(SLURM_CANCEL_LINGER_S)
    return summary.exit_code


if __name__ == "__main__":
    sys.exit(main())
