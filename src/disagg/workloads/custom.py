"""`custom`: the recipe's own client script, run with `bash -lc` in the bench role.

It starts once every role is healthy and the canary passed, with `benchmark.env` on
top of the contract variables (`disagg.workloads.contract`, docs/benchmarks.md). Its
exit status decides the run, and so does a missing result (unless `expect_results:
false`); `disagg.workloads.collect` turns the point files it wrote into results.
"""

from __future__ import annotations

from disagg.plan.job_plan import env_text
from disagg.plan.model import BenchCommand, BenchPlan
from disagg.workloads.base import BenchInputs, BenchmarkAdapter
from disagg.workloads.contract import RESULTS_DIR
from disagg.workloads.sabench import concurrencies

# Load fields an sa-bench base may carry into a custom variant: handed to the command.
LOAD_FIELDS = {
    "req_rate": "REQ_RATE",
    "num_prompts": "NUM_PROMPTS",
    "num_prompts_mult": "NUM_PROMPTS_MULT",
    "num_warmup_mult": "NUM_WARMUP_MULT",
    "use_chat_template": "USE_CHAT_TEMPLATE",
    "ttft_threshold_ms": "TTFT_THRESHOLD_MS",
    "itl_threshold_ms": "ITL_THRESHOLD_MS",
}


class Custom(BenchmarkAdapter):
    types = ("custom",)
    differs = ("custom-results",)
    reads = frozenset(
        {
            "command",
            "env",
            "expect_results",
            "container_image",
            "concurrencies",
            "isl",
            "osl",
            "random_range_ratio",
            "aiperf_server_metrics",
            *LOAD_FIELDS,
        }
    )

    def plan(self, inputs: BenchInputs) -> BenchPlan:
        b = inputs.section
        ignored = self.check_fields(inputs)
        if not b.command or not b.command.strip():
            raise inputs.fail(
                "benchmark type custom needs a command",
                ("benchmark",),
                "add `command: ...` (run with bash -lc in the bench role)",
            )
        return BenchPlan(
            type=b.type,
            model_name=inputs.model_name,
            isl=b.isl or 0,
            osl=b.osl or 0,
            random_range_ratio=1.0 if b.random_range_ratio is None else b.random_range_ratio,
            use_chat_template=bool(b.use_chat_template),
            points=[],
            concurrencies=concurrencies(inputs),
            command=BenchCommand(
                argv=["bash", "-lc", b.command],
                results_dir=RESULTS_DIR,
                env={k: env_text(v) for k, v in (b.env or {}).items()},
                load_env={
                    name: env_text(getattr(b, field))
                    for field, name in LOAD_FIELDS.items()
                    if field in b.model_fields_set and getattr(b, field) is not None
                },
                container_image=inputs.image(),
                expects_results=b.expect_results is not False,
                server_metrics=b.aiperf_server_metrics is True,
            ),
            ignored=ignored,
        )
