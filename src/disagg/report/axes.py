"""The two axes of the Pareto chart, as `disagg report` takes them on its command line.

Apart from the report's data model so that the command line, which names them as
option types, can be listed (`disagg --help`) without loading that model.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from disagg.report.model import ResultPoint


class YMetric(StrEnum):
    """The throughput axis of the Pareto chart.

    `output` divides output tokens/s by every GPU the run used (prefill and decode),
    so variants with different prefill/decode splits compare fairly. `output-decode`
    is InferenceX's `output_tput_per_gpu` (decode GPUs only), `total` its
    `tput_per_gpu` (input plus output tokens over all GPUs) and `input` its
    `input_tput_per_gpu` (input tokens over prefill GPUs).
    """

    OUTPUT = "output"
    OUTPUT_DECODE = "output-decode"
    TOTAL = "total"
    INPUT = "input"

    @property
    def label(self) -> str:
        return {
            YMetric.OUTPUT: "Output tokens/s per GPU (all GPUs)",
            YMetric.OUTPUT_DECODE: "Output tokens/s per decode GPU",
            YMetric.TOTAL: "Total tokens/s per GPU (input + output)",
            YMetric.INPUT: "Input tokens/s per prefill GPU",
        }[self]

    @property
    def header(self) -> str:
        """The short column header of tables (terminal and HTML)."""
        return {
            YMetric.OUTPUT: "out tok/s/GPU",
            YMetric.OUTPUT_DECODE: "out tok/s/decode GPU",
            YMetric.TOTAL: "tok/s/GPU",
            YMetric.INPUT: "in tok/s/prefill GPU",
        }[self]

    def of(self, point: ResultPoint) -> float | None:
        """InferenceX's own field where the result has it, else the same from throughputs."""
        output = point.metric("output_throughput")
        total = point.metric("total_token_throughput")
        if self is YMetric.OUTPUT:
            return _per_gpu(output, point.total_gpus)
        if self is YMetric.OUTPUT_DECODE:
            field, derived = "output_tput_per_gpu", _per_gpu(output, point.decode_gpus)
        elif self is YMetric.INPUT:
            inputs = total - output if total is not None and output is not None else None
            gpus = point.prefill_gpus or point.total_gpus
            field, derived = "input_tput_per_gpu", _per_gpu(inputs, gpus)
        else:
            field, derived = "tput_per_gpu", _per_gpu(total, point.total_gpus)
        value = point.metric(field)
        return derived if value is None else value


def _per_gpu(tokens_per_s: float | None, gpus: int) -> float | None:
    return tokens_per_s / gpus if tokens_per_s is not None and gpus > 0 else None


X_LABEL = "Interactivity: output tokens/s per user (1000 / median TPOT ms)"


class XMetric(StrEnum):
    """The per-user axis: interactivity (higher is better) or a latency (lower is better)."""

    INTERACTIVITY = "interactivity"
    E2EL = "e2el"
    TTFT = "ttft"

    @property
    def label(self) -> str:
        return {
            XMetric.INTERACTIVITY: X_LABEL,
            XMetric.E2EL: "Median end-to-end latency per request (s)",
            XMetric.TTFT: "Median time to first token (ms)",
        }[self]

    @property
    def short(self) -> str:
        return {
            XMetric.INTERACTIVITY: "tok/s/user",
            XMetric.E2EL: "E2E s",
            XMetric.TTFT: "TTFT ms",
        }[self]

    @property
    def higher_is_better(self) -> bool:
        return self is XMetric.INTERACTIVITY

    def of(self, point: ResultPoint) -> float | None:
        if self is XMetric.INTERACTIVITY:
            return point.interactivity
        if self is XMetric.E2EL:
            value = point.metric("median_e2el_ms")
            return value / 1000.0 if value is not None else None
        return point.metric("median_ttft_ms")
