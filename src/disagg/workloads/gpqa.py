"""`gpqa`: GPQA accuracy, through SGLang's evaluation harness as srtctl runs it.

`python3 -m sglang.test.run_eval --eval-name gpqa` with srtctl's defaults (198
examples, 32768 max tokens, 8 repeats, 128 threads). srtctl asks the frontend's
/v1/models for the model name; disagg passes the served model name it planned, which
is what that endpoint answers. See `disagg.workloads.accuracy`.
"""

from __future__ import annotations

from disagg.plan.model import BenchPlan
from disagg.workloads.accuracy import harness_command, run_eval_argv
from disagg.workloads.base import BenchInputs, BenchmarkAdapter
from disagg.workloads.gsm8k import FIELDS, positive


class Gpqa(BenchmarkAdapter):
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
