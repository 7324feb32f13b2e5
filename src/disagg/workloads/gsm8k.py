"""`gsm8k`: GSM8K accuracy, with the evaluator srtctl picks by `backend.type`.

Every engine but vLLM gets SGLang's harness (`disagg.workloads.accuracy`: 1319
examples, 16384 max tokens, 512 threads, 5 shots; sampling flags only when set). vLLM
gets srtctl's `/v1/completions` evaluation (1319 questions, 256 max tokens, 5 shots,
temperature 0.0, 1 repeat), run by disagg's own evaluator (`disagg.workloads.gsm8k_vllm`).
"""

from __future__ import annotations

from disagg.plan.model import BenchPlan, Plan, RolePlan
from disagg.workloads.accuracy import harness_command, run_eval_argv
from disagg.workloads.base import BenchInputs, BenchmarkAdapter
from disagg.workloads.contract import command_role
from disagg.workloads.gsm8k_vllm import DIFFERS, check_data, is_vllm_command, vllm_command

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
