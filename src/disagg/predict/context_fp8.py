"""FP8 context attention where the engine's own database measured only BF16.

SGLang's and TensorRT-LLM's 0.12.0 databases hold context MLA in BF16 only; the vLLM
database of the same GPU measured it both ways (FP8 with the kernel family SGLang and
TensorRT-LLM run on Blackwell). The engine's BF16 prefill is scaled by vLLM's FP8/BF16
ratio for the same pass: the GEMMs are the same in both, so the ratio is the attention
kernel's. Where vLLM's database cannot answer, the prefill stays BF16 (docs/predict.md).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache, lru_cache
from typing import Any

from disagg.predict.target import PredictTarget, compile_engine


class Fp8Context:
    """The FP8/BF16 ratio of one prefill pass, from the vLLM database of the target's GPU."""

    def __init__(self, fp8: Any, bf16: Any, version: str) -> None:
        self._fp8 = fp8
        self._bf16 = bf16
        self.source = f"vllm {version} database"
        self.ratio = lru_cache(maxsize=1 << 16)(self._ratio)

    def _ratio(self, batch: int, isl: int, prefix: int) -> float:
        slow = float(self._bf16.predict_prefill_latency(batch, isl, prefix))
        fast = float(self._fp8.predict_prefill_latency(batch, isl, prefix))
        return fast / slow if slow > 0 else 1.0


@cache
def fp8_context(target: PredictTarget) -> Fp8Context | None:
    """The substitute for `target` (an FP8-attention worker), None where there is none."""
    from aiconfigurator_core.sdk.errors import PerfDataNotAvailableError
    from aiconfigurator_core.sdk.perf_database import get_latest_database_version

    version = get_latest_database_version(system=target.system, backend="vllm")
    if version is None or target.backend == "vllm":
        return None
    vllm = replace(target, backend="vllm", version=str(version), nextn=0)
    try:
        fp8, bf16 = compile_engine(vllm, "fp8"), compile_engine(vllm, "bfloat16")
        substitute = Fp8Context(fp8, bf16, str(version))
        substitute.ratio(1, 128, 0)
    except (PerfDataNotAvailableError, ValueError, KeyError, RuntimeError):
        return None
    return substitute
