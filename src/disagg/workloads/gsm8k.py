"""`gsm8k`: GSM8K accuracy, through SGLang's evaluation harness as srtctl runs it.

srtctl picks the harness by `backend.type`: SGLang (and every engine but vLLM) gets
`python3 -m sglang.test.run_eval --eval-name gsm8k` with its defaults (1319 examples,
16384 max tokens, 512 threads, 5 shots; temperature/top_p/top_k only when set).
For vLLM srtctl runs a copy of vLLM's `gsm8k_eval.py` that it bundles; disagg bundles
none, so that pairing is refused by name. See `disagg.workloads.accuracy`.
"""

from __future__ import annotations

from disagg.errors import UnsupportedRecipe
from disagg.plan.model import BenchPlan, Plan, RolePlan
from disagg.workloads.accuracy import harness_command, harness_role, run_eval_argv
from disagg.workloads.base import BenchInputs, BenchmarkAdapter

FIELDS = ("num_examples", "max_tokens", "num_threads", "repeat")


def positive(inputs: BenchInputs, names: tuple[str, ...]) -> None:
    """srtctl's check: each of these fields, when set, is above 0."""
    for name in names:
        value = getattr(inputs.section, name)
        if value is not None and value <= 0:
            raise inputs.fail(f"benchmark.{name} must be > 0", ("benchmark", name), None)


class Gsm8k(BenchmarkAdapter):
    types = ("gsm8k",)
    differs = ("accuracy-result",)
    reads = frozenset(
        {"num_examples", "max_tokens", "num_threads", "num_shots", "temperature", "top_p"}
        | {"top_k", "container_image"}
    )

    def plan(self, inputs: BenchInputs) -> BenchPlan:
        b = inputs.section
        if inputs.engine == "vllm":
            raise UnsupportedRecipe(
                "benchmark type gsm8k (with backend vllm srtctl runs a copy of vLLM's "
                "gsm8k_eval.py bundled in srt-slurm, which disagg does not ship; the SGLang "
                "harness runs for every other backend)"
            )
        ignored = self.check_fields(inputs)
        positive(inputs, FIELDS)
        if b.num_shots is not None and b.num_shots < 0:
            raise inputs.fail("benchmark.num_shots must be >= 0", ("benchmark", "num_shots"), None)
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

    def bench_role(self, plan: Plan) -> RolePlan:
        return harness_role(plan)
