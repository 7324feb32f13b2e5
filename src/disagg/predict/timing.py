"""Step durations from AIConfigurator's performance model, for one predicted worker.

Two engines are compiled once per process (context and generation attention may need
different kernels' data); every step is then a cached lookup by batch shape, so a
predicted run goes as fast as a simulated one. Durations carry AIConfigurator's
per-phase corrections and are divided by the target's time scale.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

from disagg.engines.sim.args import EngineArgs
from disagg.engines.sim.timing import TimingModel
from disagg.errors import DisaggError
from disagg.predict.context_fp8 import Fp8Context, fp8_context
from disagg.predict.target import (
    DECODE_CORRECTION,
    PREFILL_CORRECTION,
    PredictTarget,
    compile_engine,
)

log = logging.getLogger("disagg.predict")

_CTX_STEP = 16  # decode steps are looked up at the mean context rounded to this many tokens


def compile_for(target: PredictTarget, fmha: str) -> Any:
    """The target's engine: on AIConfigurator's large-EP graph where its data covers the
    target's cross-node EP group (`wide_ep`), else on the fused MoE graph."""
    from disagg.predict.wide_ep import compile_large_ep

    return compile_large_ep(target, fmha) or compile_engine(target, fmha)


class Engines:
    """The context and generation engines of one target, with the context attention
    resolved by the data: the target's FMHA mode where the database has context
    measurements for it, else BF16 (what AIConfigurator's own estimates fall back to)."""

    def __init__(self, target: PredictTarget) -> None:
        from aiconfigurator_core.sdk.errors import PerfDataNotAvailableError

        try:
            self.generation = compile_for(target, target.fmha)
            self.generation.decode_step_latency(1, 128, 2)
        except (PerfDataNotAvailableError, ValueError, KeyError, RuntimeError) as exc:
            raise DisaggError(f"{target.label()}: cannot model decode steps: {exc}") from None
        self.context_fmha = target.fmha
        self.context = self.generation
        self.fp8_context: Fp8Context | None = None
        try:
            self.context.predict_prefill_latency(1, 128, 0)
        except PerfDataNotAvailableError:
            self.context_fmha = "bfloat16"
            self.context = compile_for(target, "bfloat16")
            self.fp8_context = fp8_context(target) if target.fmha == "fp8" else None
            if self.fp8_context is not None:
                self.context_fmha = (
                    f"fp8 (BF16 x the FP8/BF16 ratio of the {self.fp8_context.source})"
                )
        try:
            self.context.predict_prefill_latency(1, 128, 0)
        except (PerfDataNotAvailableError, ValueError, KeyError, RuntimeError) as exc:
            raise DisaggError(f"{target.label()}: cannot model prefill: {exc}") from None
        self.dispatch_ms = dispatch_ms(target)

    def prefill_ms(self, batch: int, isl: int, prefix: int) -> float:
        """One prefill pass of `batch` requests of `isl` tokens, `prefix` of them cached."""
        ms = float(self.context.predict_prefill_latency(batch, isl, prefix)) * PREFILL_CORRECTION
        if self.fp8_context is not None:
            ms *= self.fp8_context.ratio(batch, isl, prefix)
        return ms

    def decode_ms(self, batch: int, context: int) -> float:
        """One decode step of `batch` sequences (per attention rank) at `context` tokens."""
        return float(self.generation.decode_step_latency(batch, context, 2)) * DECODE_CORRECTION


def dispatch_ms(target: PredictTarget) -> float:
    """AIConfigurator's fixed per-pass prefill cost for the target's engine (CPU-side
    dispatch over every layer, calibrated by AIConfigurator; vLLM has one, the others
    none), for the model's layer count."""
    from types import SimpleNamespace

    from aiconfigurator_core.sdk.backends.factory import get_backend

    from disagg.predict.mapping import model_config

    config = model_config(target.model)
    layers = int(config.get("num_hidden_layers") or 0)
    backend = get_backend(target.backend)
    model: Any = SimpleNamespace(_num_layers=layers)  # all the term reads of the model
    return float(backend._prefill_dispatch_overhead_ms(model))


engines_for = cache(Engines)  # one target's engines, built once per process


@cache
def kv_capacity(target: PredictTarget) -> tuple[int, int]:
    """(tokens the worker's KV cache holds, bytes per token per GPU) from the memory model."""
    from aiconfigurator_core.sdk.memory import estimate_kv_cache

    kind = "of_free" if target.backend == "trtllm" else "of_total"
    try:
        estimate = estimate_kv_cache(
            target.model,
            target.system,
            target.backend,
            target.version,
            max_num_tokens=8192,
            max_batch_size=256,
            memory_fraction_kind=kind,
            memory_fraction_value=target.mem_fraction,
            **target.layout(target.fmha),
            nextn=target.nextn,
        )
    except ValueError as exc:
        raise DisaggError(f"{target.label()}: no KV-cache estimate: {exc}") from None
    tokens = int(estimate["total_kv_size_tokens"]) * target.attention_dp * target.replicas
    if tokens <= 0:
        raise DisaggError(
            f"{target.label()}: the model's weights leave no memory for a KV cache "
            f"({target.gpus} GPU(s) per replica)",
            hint="give the workers more GPUs or a smaller precision",
        )
    return tokens, int(estimate["kv_size_per_token_bytes"])


class PredictedTiming(TimingModel):
    """The simulated engine's timing with AIConfigurator's step latencies."""

    def __init__(self, args: EngineArgs, target: PredictTarget) -> None:
        super().__init__(args)
        self.target = target
        self.engines = engines_for(target)
        self.kv_capacity, self.kv_bytes_per_token = kv_capacity(target)
        self.scale = 1.0 / max(target.time_scale, 1e-9)
        # Each GPU sends its share of a token's KV over its own link.
        self.kv_transfer_us_per_token = (
            self.kv_bytes_per_token / target.link_bytes_per_s * 1e6 * self.scale
        )
        self.draft_steps = target.nextn
        self.draft_rates = target.draft_rates()
        # A pipeline-parallel worker overlaps prefill passes over its stages (scheduler).
        self.prefill_stages = max(1, target.pp)
        # Host time kernel measurements miss: per prefill pass, AIConfigurator's own dispatch
        # term (vLLM); per iteration, what the GPU waits for; per request, the API server's.
        self.step_s = target.step_host_ms * 1e-3 * self.scale
        self.dispatch_s = self.engines.dispatch_ms * 1e-3 * self.scale + self.step_s
        self.request_s = target.request_host_ms * 1e-3 * self.scale
        self._prefill = lru_cache(maxsize=1 << 16)(self.engines.prefill_ms)
        self._decode = lru_cache(maxsize=1 << 16)(self.engines.decode_ms)
        log.info(
            "%s: KV cache %d tokens, %d B/token/GPU; context attention %s",
            target.label(),
            self.kv_capacity,
            self.kv_bytes_per_token,
            self.engines.context_fmha,
        )

    def tokens_this_step(self, rng: random.Random) -> int:
        """1 + the drafts kept: draft k is kept with its own chance once 1..k-1 were."""
        accepted = 0
        for rate in self.draft_rates:
            if rng.random() >= rate:
                break
            accepted += 1
        return 1 + accepted

    def expected_tokens_per_step(self) -> float:
        return self.target.tokens_per_step()

    def prefill_time(self, tokens: int) -> float:
        return self._prefill(1, max(1, tokens), 0) * 1e-3 * self.scale + self.dispatch_s

    def prefill_batch_time(self, chunks: Sequence[tuple[int, int]]) -> float:
        """One prefill pass over (tokens this pass, tokens already prefilled) per request."""
        if not chunks:
            return 0.0
        n = self._per_rank(len(chunks))
        take = sum(c for c, _ in chunks) // len(chunks)
        done = sum(d for _, d in chunks) // len(chunks)
        return self._prefill(n, max(1, take + done), done) * 1e-3 * self.scale + self.dispatch_s

    def decode_step_time(self, batch: int, kv_tokens: int) -> float:
        if batch <= 0:
            return 0.0
        context = max(1, round(kv_tokens / batch / _CTX_STEP) * _CTX_STEP)
        return self._decode(self._per_rank(batch), context) * 1e-3 * self.scale + self.step_s

    def _per_rank(self, batch: int) -> int:
        """The batch one attention rank of one replica runs (the slowest rank's share)."""
        return max(1, math.ceil(batch / (self.target.replicas * self.target.attention_dp)))
