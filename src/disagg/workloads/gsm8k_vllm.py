"""`gsm8k` on a vLLM backend: disagg's own evaluator, as srtctl's vLLM path calls its own.

srtctl runs, for `backend.type: vllm`, a GSM8K script it bundles against
`/v1/completions` (`vllm-bench.sh HOST PORT MODEL 1319 256 5 0.0 1`: questions, max
tokens, shots, temperature, repeat). disagg renders the same arguments for
`disagg.workloads.gsm8k_eval`, run from disagg's own Python (`${run.python}`, no
container: it needs only the standard library), each repeat's file judged as an
accuracy result. The data is read, never downloaded: `benchmark.dataset_path`, else
the bench node's temporary directory, where srtctl's script caches its download.
"""

from __future__ import annotations

from pathlib import Path

from disagg.errors import DisaggError
from disagg.plan.model import BenchCommand, BenchPlan
from disagg.workloads.base import BenchInputs, command_plan
from disagg.workloads.contract import ENDPOINT, RESULTS_DIR
from disagg.workloads.gsm8k_eval import DATA_FILES

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
