"""`benchmark.type` -> adapter, and the one-line reason for every type not built here."""

from __future__ import annotations

from disagg.errors import UnsupportedRecipe
from disagg.workloads.base import BenchmarkAdapter

_ACCURACY = (
    "an accuracy benchmark: it needs its data set on the cluster and a grader, which "
    "disagg does not ship; run it as `type: custom` with the evaluation's own command"
)

# Types srt-slurm knows that this project does not run, each with why.
REFUSED: dict[str, str] = {
    "manual": "srt-slurm leaves the servers up for manual use; disagg runs measured "
    "benchmarks only (use `disagg run` + `disagg bench` against the live frontend)",
    "router": "srt-slurm's router prefix-ratio benchmark is not built in disagg",
    "prefix-replay": "prefix replay is not built in disagg (mooncake-router/trace-replay are)",
    "sglang-bench": "SGLang's own bench_serving client is not built in disagg; sa-bench "
    "measures the same vLLM-style metrics",
    "profiling": "engine profiling runs need GPUs and the engines' profilers",
    "mlperf": "the MLPerf loadgen harness is not built in disagg",
    "agentic": "agentic replay needs AIPerf's trajectory data sets; run it as `type: custom`",
    "aiperf": "AIPerf itself is not bundled; run it as `type: custom` with its command",
    "gsm8k": _ACCURACY,
    "gsm8k-bench": _ACCURACY,
    "gpqa": _ACCURACY,
    "mmlu": _ACCURACY,
    "longbenchv2": _ACCURACY,
    "aime": _ACCURACY,
    "aime25": _ACCURACY,
    "lm-eval": _ACCURACY,
}


def _adapters() -> dict[str, BenchmarkAdapter]:
    from disagg.workloads.custom import Custom
    from disagg.workloads.sabench import SaBench
    from disagg.workloads.trace import TraceReplay

    table: dict[str, BenchmarkAdapter] = {}
    for adapter in (SaBench(), Custom(), TraceReplay()):
        for name in adapter.types:
            table[name] = adapter
    return table


def known_types() -> list[str]:
    """Every benchmark type this project runs."""
    return sorted(_adapters())


def refusal(kind: str) -> str | None:
    """The one-line `benchmark type X (why)` for a type that is not run here, else None."""
    if kind in _adapters():
        return None
    why = REFUSED.get(kind, f"runs: {', '.join(known_types())}")
    return f"benchmark type {kind} ({why})"


def adapter_for(kind: str) -> BenchmarkAdapter:
    """The adapter of `kind`; a type not run here raises the one-line refusal."""
    adapter = _adapters().get(kind)
    if adapter is None:
        reason = refusal(kind)
        assert reason is not None
        raise UnsupportedRecipe(reason)
    return adapter
