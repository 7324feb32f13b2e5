"""`benchmark.type` -> adapter, and the one-line reason for every type not built here."""

from __future__ import annotations

from disagg.adapter_table import AdapterTable
from disagg.errors import UnsupportedRecipe
from disagg.workloads.base import BenchmarkAdapter

_ACCURACY = (
    "an accuracy benchmark: it needs its data set on the cluster and a grader, which "
    "disagg does not ship; run it as `type: custom` with the evaluation's own command"
)

# Types srt-slurm knows that this project does not run, each with why.
REFUSED: dict[str, str] = {
    "router": "srt-slurm's router prefix-ratio benchmark is not built in disagg",
    "prefix-replay": "prefix replay is not built in disagg (mooncake-router/trace-replay are)",
    "sglang-bench": "SGLang's own bench_serving client is not built in disagg; sa-bench "
    "measures the same vLLM-style metrics",
    "profiling": "engine profiling runs need GPUs and the engines' profilers",
    "mlperf": "the MLPerf loadgen harness is not built in disagg",
    "agentic": "agentic replay needs AIPerf's trajectory data sets; run it as `type: custom`",
    "aiperf": "AIPerf itself is not bundled; run it as `type: custom` with its command",
    "gsm8k-bench": "srt-slurm defines no benchmark of this name (its runner registry has "
    "`gsm8k`, and srtctl's job fails with `Unknown benchmark type`); write `type: gsm8k`",
    "mmlu": _ACCURACY,
    "longbenchv2": _ACCURACY,
    "aime": _ACCURACY,
    "aime25": _ACCURACY,
    "lm-eval": _ACCURACY,
}


# `benchmark.type` -> (module, class) of its adapter, imported when a recipe names the
# type. Adding a benchmark: its module and its line here; tests/workloads/test_registry.py
# checks each line against the class's `types`.
_ADAPTERS: dict[str, tuple[str, str]] = {
    "sa-bench": ("disagg.workloads.sabench", "SaBench"),
    "custom": ("disagg.workloads.custom", "Custom"),
    "mooncake-router": ("disagg.workloads.mooncake_aiperf", "MooncakeRouter"),
    "trace-replay": ("disagg.workloads.trace", "TraceReplay"),
    "gsm8k": ("disagg.workloads.accuracy", "Gsm8k"),
    "gpqa": ("disagg.workloads.accuracy", "Gpqa"),
    "manual": ("disagg.workloads.manual", "Manual"),
}
_TABLE: AdapterTable[BenchmarkAdapter] = AdapterTable(BenchmarkAdapter, _ADAPTERS)


def known_types() -> list[str]:
    """Every benchmark type this project runs."""
    return sorted(_TABLE.names())


def refusal(kind: str) -> str | None:
    """The one-line `benchmark type X (why)` for a type that is not run here, else None."""
    if kind in _TABLE:
        return None
    why = REFUSED.get(kind, f"runs: {', '.join(known_types())}")
    return f"benchmark type {kind} ({why})"


def adapter_for(kind: str) -> BenchmarkAdapter:
    """The adapter of `kind`; a type not run here raises the one-line refusal."""
    adapter = _TABLE.get(kind)
    if adapter is None:
        reason = refusal(kind)
        assert reason is not None
        raise UnsupportedRecipe(reason)
    return adapter
