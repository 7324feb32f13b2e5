"""The accuracy benchmarks (`gsm8k`, `gpqa`): their command and their result.

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
from disagg.errors import DisaggError
from disagg.plan.model import BenchCommand, BenchPlan, Plan, RolePlan
from disagg.workloads.base import BenchInputs, BenchmarkAdapter, command_plan
from disagg.workloads.collect import Collected, CollectedPoint
from disagg.workloads.contract import ENDPOINT, RESULTS_DIR, command_role
from disagg.workloads.gsm8k_eval import DATA_FILES

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


# `gsm8k` on a vLLM backend: srtctl runs a GSM8K script it bundles against
# `/v1/completions` (`vllm-bench.sh HOST PORT MODEL 1319 256 5 0.0 1`: questions, max
# tokens, shots, temperature, repeat). disagg renders the same arguments for its own
# evaluator, run from disagg's Python (`${run.python}`, no container: it needs only the
# standard library), each repeat's file judged as an accuracy result. The data is read,
# never downloaded: `benchmark.dataset_path`, else the bench node's temporary directory,
# where srtctl's script caches its download.
EVAL_MODULE = "disagg.workloads.gsm8k_eval"
DIFFERS = ("gsm8k-vllm-evaluator",)
DEFAULT_DATA = "the bench node's temporary directory ($TMPDIR, else /tmp)"
# Fields srtctl's vLLM path does not pass on (they go to SGLang's harness only).
NOT_PASSED = {
    "num_threads": "srtctl's vLLM GSM8K evaluator does not take a thread count",
    "top_p": "srtctl's vLLM GSM8K evaluator sends no top_p",
    "top_k": "srtctl's vLLM GSM8K evaluator sends no top_k",
    "container_image": "disagg's GSM8K evaluator runs from disagg's own environment, "
    "outside any container",
}


def data_dir(inputs: BenchInputs) -> str | None:
    """`benchmark.dataset_path` as the host path the evaluator (in no container) reads, or
    None: relative to the recipe; inside a container mount, from the mount's host side."""
    written = inputs.section.dataset_path
    if not written:
        return None
    path = Path(written).expanduser()
    if not path.is_absolute():
        return str((inputs.recipe_dir / path).absolute())
    found = inputs.host_side(path)
    return str(found[1] if found else path)


def vllm_command(inputs: BenchInputs, ignored: dict[str, str]) -> BenchPlan:
    """The evaluator's call with srtctl's arguments and defaults."""
    b = inputs.section
    for name, why in NOT_PASSED.items():
        if getattr(b, name) is not None:
            ignored[name] = why
    argv = ["${run.python}", "-m", EVAL_MODULE, "--url", ENDPOINT]
    argv += ["--model", inputs.model_name]
    argv += ["--num-questions", str(b.num_examples or 1319)]
    argv += ["--max-tokens", str(b.max_tokens or 256)]
    argv += ["--num-shots", str(5 if b.num_shots is None else b.num_shots)]
    argv += ["--temperature", str(0.0 if b.temperature is None else b.temperature)]
    argv += ["--repeat", str(b.repeat or 1)]
    data = data_dir(inputs)
    argv += ["--data-dir", data] if data is not None else []
    argv += ["--out", RESULTS_DIR]
    return command_plan(
        inputs,
        BenchCommand(
            argv=argv,
            results_dir=RESULTS_DIR,
            accuracy="gsm8k",
            dataset=f"{data}/{{train,test}}.jsonl" if data else DEFAULT_DATA,
        ),
        ignored,
    )


def is_vllm_command(bench: BenchPlan) -> bool:
    return bench.command is not None and EVAL_MODULE in bench.command.argv


def check_data(bench: BenchPlan) -> None:
    """In the job, before any role starts: a named dataset_path holds both files (the
    temporary-directory default is the bench node's own: the evaluator checks it)."""
    command = bench.command
    if command is None or "--data-dir" not in command.argv:
        return
    where = Path(command.argv[command.argv.index("--data-dir") + 1])
    missing = [str(where / name) for name in DATA_FILES if not (where / name).is_file()]
    if missing:
        raise DisaggError(
            f"benchmark.dataset_path: GSM8K data file {missing[0]} does not exist",
            hint="give a directory holding train.jsonl and test.jsonl (grade_school_math/"
            "data of the GSM8K release), readable from the job's nodes",
        )


FIELDS = ("num_examples", "max_tokens", "num_threads", "repeat")


def positive(inputs: BenchInputs, names: tuple[str, ...]) -> None:
    """srtctl's check: each of these fields, when set, is above 0."""
    for name in names:
        value = getattr(inputs.section, name)
        if value is not None and value <= 0:
            raise inputs.fail(f"benchmark.{name} must be > 0", ("benchmark", name), None)


class Gsm8k(BenchmarkAdapter):
    """GSM8K with the evaluator srtctl picks by `backend.type`: SGLang's harness (1319
    examples, 16384 max tokens, 512 threads, 5 shots; sampling flags only when set) for
    every engine but vLLM, which gets srtctl's `/v1/completions` evaluation, run by
    disagg's own evaluator (`vllm_command`)."""

    types = ("gsm8k",)
    differs = ("accuracy-result",)
    reads = frozenset(
        {"num_examples", "max_tokens", "num_threads", "num_shots", "temperature", "top_p"}
        | {"top_k", "container_image", "repeat", "dataset_path"}
    )

    def plan(self, inputs: BenchInputs) -> BenchPlan:
        b = inputs.section
        ignored = self.check_fields(inputs)
        positive(inputs, FIELDS)
        if b.num_shots is not None and b.num_shots < 0:
            raise inputs.fail("benchmark.num_shots must be >= 0", ("benchmark", "num_shots"), None)
        if inputs.engine == "vllm":
            return vllm_command(inputs, ignored)
        if b.repeat is not None:
            ignored["repeat"] = "srtctl repeats GSM8K only with backend vllm"
        if b.dataset_path is not None:
            ignored["dataset_path"] = "SGLang's harness reads its own copy of GSM8K"
        argv = run_eval_argv(
            "gsm8k",
            [
                ("--num-examples", b.num_examples or 1319),
                ("--max-tokens", b.max_tokens or 16384),
                ("--num-threads", b.num_threads or 512),
                ("--num-shots", 5 if b.num_shots is None else b.num_shots),
                ("--temperature", b.temperature),
                ("--top-p", b.top_p),
                ("--top-k", b.top_k),
            ],
        )
        return harness_command(inputs, "gsm8k", argv, ignored)

    def differs_for(self, bench: BenchPlan) -> tuple[str, ...]:
        return DIFFERS if is_vllm_command(bench) else self.differs

    def bench_role(self, plan: Plan) -> RolePlan:
        """vLLM's evaluator runs from disagg's own Python, in no container."""
        return command_role(plan, contained=not is_vllm_command(plan.bench))

    def prepare(self, bench: BenchPlan) -> None:
        if is_vllm_command(bench):
            check_data(bench)


class Gpqa(BenchmarkAdapter):
    """GPQA with srtctl's defaults (198 examples, 32768 max tokens, 8 repeats, 128
    threads). srtctl asks /v1/models for the model name; disagg passes the served name
    it planned, which is what that endpoint answers."""

    types = ("gpqa",)
    differs = ("accuracy-result",)
    reads = frozenset({"num_examples", "max_tokens", "repeat", "num_threads", "container_image"})

    def plan(self, inputs: BenchInputs) -> BenchPlan:
        b = inputs.section
        ignored = self.check_fields(inputs)
        positive(inputs, FIELDS)
        argv = run_eval_argv(
            "gpqa",
            [
                ("--num-examples", b.num_examples or 198),
                ("--max-tokens", b.max_tokens or 32768),
                ("--repeat", b.repeat or 8),
                ("--num-threads", b.num_threads or 128),
            ],
            model=inputs.model_name,
        )
        return harness_command(inputs, "gpqa", argv, ignored)


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
