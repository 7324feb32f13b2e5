"""`python -m disagg.staging FILE`: stage the models a plan lists, inside a job step.

FILE is a run directory (its `plan.json`), a `plan.json`, or a bare staging JSON
(the plan's `staging` object). Lines go to stdout; exit 0 staged, 1 not, 2 bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import ValidationError

from disagg.errors import DisaggError
from disagg.plan.model import StagingPlan
from disagg.staging.stage import stage_plan


def load_staging(path: Path) -> StagingPlan:
    """The staging section of a run directory, plan.json, or bare staging JSON."""
    if path.is_dir():
        path = path / "plan.json"
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise DisaggError(f"{path}: cannot read: {exc.strerror}") from exc
    except ValueError as exc:
        raise DisaggError(f"{path}: not valid JSON: {exc}") from exc
    section = data.get("staging", data) if isinstance(data, dict) else data
    try:
        return StagingPlan.model_validate(section)
    except ValidationError as exc:
        raise DisaggError(f"{path}: not a staging plan: {exc}") from exc


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m disagg.staging RUN_DIR|plan.json|staging.json", file=sys.stderr)
        return 2
    try:
        staged = stage_plan(load_staging(Path(argv[0])), log=lambda line: print(line, flush=True))
    except DisaggError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    for repo_id, path in staged.paths.items():
        print(f"staged {repo_id} -> {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
