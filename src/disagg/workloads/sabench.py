"""`sa-bench`: disagg's own load generator, one in-process measured point per concurrency.

Each point sends `num_prompts` (else concurrency x `num_prompts_mult`, default 10, at
least 16) after a warm-up of concurrency x `num_warmup_mult` (default 2). `req_rate`
sends on a Poisson schedule, capped by the concurrency; `slow_down_*` slows the decode
workers at each window's start (`disagg.workloads.slow_down`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from disagg.plan.model import BenchPlan, Plan, PointPlan
from disagg.recipe.benchmark_section import concurrency_points
from disagg.recipe.limits import MAX_POINT_REQUESTS, load_bound_problem
from disagg.workloads import slow_down
from disagg.workloads.base import BenchInputs, BenchmarkAdapter

if TYPE_CHECKING:
    from disagg.bench.runner import PointRequests

DEFAULT_PROMPTS_MULT = 10
MIN_PROMPTS = 16
DEFAULT_WARMUP_MULT = 2

TOKENIZER_IGNORED = (
    "a tokenizer class for srt-slurm's own client; disagg builds prompts with the "
    "model's tokenizer.json and counts output tokens from the server's usage"
)


def request_rate(inputs: BenchInputs) -> float | None:
    """`req_rate` in requests/s; None for "inf" (as fast as the concurrency allows)."""
    raw = inputs.section.req_rate
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("inf", "")):
        return None
    try:
        rate = float(raw)
    except ValueError:
        raise inputs.fail(
            f"benchmark.req_rate {raw!r} is not a number or inf",
            ("benchmark", "req_rate"),
            'write requests per second, e.g. 10, or "inf"',
        ) from None
    if rate <= 0:
        raise inputs.fail("benchmark.req_rate must be positive", ("benchmark", "req_rate"), None)
    return None if rate == float("inf") else rate


def concurrencies(inputs: BenchInputs) -> list[int]:
    try:
        return concurrency_points(inputs.section.concurrencies)
    except ValueError as exc:
        raise inputs.fail(
            f"benchmark.concurrencies: {exc}",
            ("benchmark", "concurrencies"),
            'write e.g. "1x2x4" or [1, 2, 4]',
        ) from None


def slo(inputs: BenchInputs) -> dict[str, float]:
    """The thresholds as SLO limits in ms (srtctl's ITL threshold is a TPOT limit here)."""
    b = inputs.section
    limits = {"ttft": b.ttft_threshold_ms, "tpot": b.itl_threshold_ms}
    return {key: float(ms) for key, ms in limits.items() if ms is not None}


class SaBench(BenchmarkAdapter):
    types = ("sa-bench",)
    differs = ("load-generator",)
    reads = frozenset(
        {
            "isl",
            "osl",
            "concurrencies",
            "req_rate",
            "random_range_ratio",
            "use_chat_template",
            "num_prompts",
            "num_prompts_mult",
            "num_warmup_mult",
            "ttft_threshold_ms",
            "itl_threshold_ms",
            *slow_down.FIELDS,
        }
    )
    ignores: ClassVar[dict[str, str]] = {
        "custom_tokenizer": TOKENIZER_IGNORED,
        # InferenceX's field, newer than srt-slurm v1.0.68: its sa-bench client's `--tokenizer-mode`
        "tokenizer_mode": "how srt-slurm's own client loads the tokenizer (vLLM's tokenizer "
        "modes); disagg builds prompts with the model's tokenizer.json and counts output "
        "tokens from the server's usage",
    }

    def plan(self, inputs: BenchInputs) -> BenchPlan:
        b = inputs.section
        ignored = self.check_fields(inputs)
        if b.isl is None or b.osl is None:
            raise inputs.fail(
                f"benchmark type {b.type} needs isl and osl",
                ("benchmark",),
                "add `isl:` and `osl:` (input and output tokens per request)",
            )
        rate = request_rate(inputs)
        levels = concurrencies(inputs)
        if not levels and rate is None:
            raise inputs.fail(
                "no load points: benchmark.concurrencies is empty and req_rate is inf",
                ("benchmark",),
                'add e.g. `concurrencies: "1x2x4x8"`',
            )
        points = [self.point(inputs, c, rate) for c in levels] or [self.point(inputs, None, rate)]
        simulated = inputs.simulated
        slowed, skipped = slow_down.planned(b, inputs.frontend)
        if skipped is not None:
            ignored.update(
                {name: skipped for name in slow_down.FIELDS if name in b.model_fields_set}
            )
        return BenchPlan(
            type=b.type,
            model_name=inputs.model_name,
            isl=b.isl,
            osl=b.osl,
            random_range_ratio=1.0 if b.random_range_ratio is None else b.random_range_ratio,
            # Without a tokenizer (the simulated engine) the chat endpoint stands in for
            # a client-side chat template: the server applies its own.
            endpoint="chat" if b.use_chat_template and simulated else "completions",
            use_chat_template=bool(b.use_chat_template) and not simulated,
            tokenizer=None if simulated else "${model.path}",
            arrival="poisson" if rate is not None else "constant",
            slo=slo(inputs),
            points=points,
            concurrencies=levels,
            slow_down=slowed,
            ignored=ignored,
        )

    def complete(self, plan: Plan) -> BenchPlan:
        return slow_down.with_targets(plan.bench, plan)

    def differs_for(self, bench: BenchPlan) -> tuple[str, ...]:
        return (*self.differs, slow_down.COMPAT) if bench.slow_down is not None else self.differs

    @staticmethod
    def point(inputs: BenchInputs, concurrency: int | None, rate: float | None) -> PointPlan:
        b = inputs.section
        c = concurrency or 1
        if b.num_prompts is not None:
            prompts = b.num_prompts
        else:
            prompts = max(c * (b.num_prompts_mult or DEFAULT_PROMPTS_MULT), MIN_PROMPTS)
        warmup_mult = b.num_warmup_mult if b.num_warmup_mult is not None else DEFAULT_WARMUP_MULT
        problem = load_bound_problem(
            "requests of one point", prompts + c * warmup_mult, MAX_POINT_REQUESTS
        )
        if problem is not None:
            raise inputs.fail(
                f"benchmark: {problem} (concurrency {c}: {prompts:,} measured and "
                f"{c * warmup_mult:,} warm-up requests)",
                ("benchmark",),
                "lower num_prompts / num_prompts_mult / num_warmup_mult",
            )
        return PointPlan(
            concurrency=concurrency,
            request_rate=rate,
            num_prompts=prompts,
            warmup_requests=c * warmup_mult,
        )

    def requests(self, bench: BenchPlan, point: PointPlan) -> PointRequests:
        from disagg.bench.runner import synthetic_requests

        return synthetic_requests(bench, point)
