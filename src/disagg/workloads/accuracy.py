"""What the accuracy benchmarks (`gsm8k`, `gpqa`) share: their command and their result.

srtctl runs SGLang's evaluation harness (`python3 -m sglang.test.run_eval`) against the
frontend and copies the score file it writes under /tmp. disagg renders the same call,
wrapped so that a harness missing from the image ends the run at once (no harness, no
score), only a score file written by this run is taken (a marker file dates the start),
and the score becomes one judged `AccuracyResult`: a score missing, not a number or
outside 0..1 fails the run, and so does a role that stopped serving meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from disagg.atomic import write_json
from disagg.bench.gate import finite_numbers
from disagg.bench.results import read_object
from disagg.plan.model import BenchCommand, BenchPlan, Plan
from disagg.workloads.base import BenchInputs, command_plan
from disagg.workloads.collect import Collected, CollectedPoint
from disagg.workloads.contract import ENDPOINT, RESULTS_DIR

ACCURACY_DIR = "accuracy"  # run-dir folder of the judged results (not load points)
MARKER = ".started"

# `bash -c WRAPPER accuracy EVAL TOOL_ARGV...`: $1 is the eval name, the rest the tool.
WRAPPER = """set -u
eval_name=$1; shift
out=${DISAGG_RESULTS_DIR:?}
mkdir -p "$out"
if ! python3 -c 'import sglang.test.run_eval' 2>/dev/null; then
  echo "benchmark $eval_name: SGLang's evaluation harness (python3 -m sglang.test.run_eval)" \\
       "is not importable in the bench role's environment; it needs the sglang package" \\
       "(srtctl runs it inside the job's SGLang container). Nothing was evaluated." >&2
  exit 3
fi
export OPENAI_API_KEY="${OPENAI_API_KEY:-EMPTY}"
: > "$out/.started"
echo "benchmark $eval_name: $*"
"$@" || exit $?
found=0
for f in /tmp/"${eval_name}"_*.json /tmp/"${eval_name}"_*.html; do
  if [ -f "$f" ] && [ "$f" -nt "$out/.started" ]; then cp "$f" "$out/"; found=1; fi
done
[ "$found" = 1 ] || echo "benchmark $eval_name: the harness wrote no /tmp/${eval_name}_*.json" >&2
"""


def harness_command(
    inputs: BenchInputs, eval_name: str, tool_argv: list[str], ignored: dict[str, str]
) -> BenchPlan:
    """The BenchPlan of an accuracy harness run as a command in the bench role."""
    return command_plan(
        inputs,
        BenchCommand(
            argv=["bash", "-c", WRAPPER, "accuracy", eval_name, *tool_argv],
            results_dir=RESULTS_DIR,
            container_image=inputs.image(),
            accuracy=eval_name,
        ),
        ignored,
    )


def run_eval_argv(
    eval_name: str, flags: list[tuple[str, object | None]], *, model: str | None = None
) -> list[str]:
    """`python3 -m sglang.test.run_eval --base-url URL [--model M] --eval-name NAME` plus
    each set flag, in srtctl's order."""
    argv = ["python3", "-m", "sglang.test.run_eval", "--base-url", ENDPOINT]
    argv += ["--model", model] if model is not None else []
    argv += ["--eval-name", eval_name]
    for flag, value in flags:
        if value is not None:
            argv += [flag, str(value)]
    return argv


@dataclass(frozen=True)
class AccuracyResult:
    """One evaluation's score as the harness reported it, judged."""

    eval_name: str
    score: float | None
    metrics: dict[str, float]
    source: Path
    reason: str | None  # why it is invalid, else None

    @property
    def valid(self) -> bool:
        return self.reason is None

    def to_json(self, plan: Plan, point: str) -> dict[str, Any]:
        return {
            "run_name": plan.name,
            "benchmark_type": plan.bench.type,
            "point": point,
            "eval_name": self.eval_name,
            "score": self.score,
            "metrics": self.metrics,
            "valid": self.valid,
            "invalid_reason": self.reason,
            "simulated": plan.simulated,
            "model_id": plan.bench.model_name,
            "client_result_file": str(self.source),
        }


def judge(eval_name: str, path: Path, not_serving: str | None) -> AccuracyResult:
    """The score file at `path` as a typed result; what is wrong with it is its reason."""
    data = read_object(path, "score file")
    metrics = finite_numbers(data) if data is not None else {}
    raw = data.get("score") if data is not None else None
    score = metrics.get("score")
    reason: str | None = None
    if data is None:
        reason = f"{path.name} is not a JSON object"
    elif raw is None:
        reason = f"{path.name} has no `score`"
    elif score is None or not 0.0 <= score <= 1.0:
        reason = f"score {raw!r} in {path.name} is not a number in 0..1"
    reason = not_serving or reason
    return AccuracyResult(eval_name, score, metrics, path, reason)


def collect_accuracy(
    results_dir: Path, plan: Plan, run_dir: Path, *, not_serving: str | None = None
) -> Collected:
    """The score files the harness left in `results_dir`, judged and written under
    `run_dir/accuracy/`; every other file is listed."""
    found = Collected()
    eval_name = plan.bench.command.accuracy if plan.bench.command else None
    if eval_name is None or not results_dir.is_dir():
        return found
    files = sorted(p for p in results_dir.iterdir() if p.is_file() and not p.is_symlink())
    scored = [p for p in files if p.name.startswith(f"{eval_name}_") and p.suffix == ".json"]
    found.other_files += [p for p in files if p.name != MARKER and p not in scored]
    for path in scored:
        result = judge(eval_name, path, not_serving)
        # One file per repeat (gsm8k_run1.json, ...): each is its own point.
        key = f"accuracy_{eval_name}" if len(scored) == 1 else f"accuracy_{path.stem}"
        target = run_dir / ACCURACY_DIR / path.name
        write_json(target, result.to_json(plan, key))
        headline = {"score": result.score} if result.score is not None else {}
        found.points.append(
            CollectedPoint(
                key=key,
                source=path,
                result=target,
                valid=result.valid,
                reason=result.reason,
                headline=headline,
            )
        )
    return found
