"""Terms a predicted worker takes from AIConfigurator's data: wide EP, FP8 context attention,
and a whole point on the virtual clock against the fixed-point pieces it is made of."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

import pytest

pytest.importorskip("aiconfigurator_core", reason="the `predict` group is not installed")

from disagg.predict.fixed_point import engine_args, prefill_point
from disagg.predict.target import PredictTarget
from disagg.predict.timing import compile_engine, engines_for
from disagg.predict.virtual import Run, Workload
from disagg.predict.wide_ep import compile_large_ep

R1 = "deepseek-ai/DeepSeek-R1"


@pytest.fixture(autouse=True, scope="module")
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


def _gb200_dep(ep: int) -> PredictTarget:
    return PredictTarget(
        model=R1,
        system="gb200",
        backend="trtllm",
        version="1.3.0rc20",
        tp=1,
        attention_dp=ep,
        moe_ep=ep,
        gemm="nvfp4",
        moe="nvfp4",
        kvcache="fp8",
        fmha="fp8",
        gpus=ep,
    )


def test_a_cross_node_ep_group_takes_the_measured_all_to_all() -> None:
    """DEP32 on GB200 NVL72 spans 8 nodes of 4 GPUs: AIConfigurator measured TRT-LLM's
    NVLink all-to-all there, and the step is the large-EP graph's, not the fused path's."""
    wide = compile_large_ep(_gb200_dep(32), "fp8")
    assert wide is not None
    fused = compile_engine(_gb200_dep(32), "fp8")
    assert wide.decode_step_latency(64, 1536, 2) < 0.8 * fused.decode_step_latency(64, 1536, 2)


def test_ep_within_one_node_or_without_attention_dp_stays_fused() -> None:
    assert compile_large_ep(_gb200_dep(4), "fp8") is None  # one GB200 node holds EP4
    tep = replace(_gb200_dep(16), tp=16, attention_dp=1)
    assert compile_large_ep(tep, "fp8") is None  # TRT-LLM's wide EP needs attention DP


def test_fp8_context_attention_uses_the_same_gpus_vllm_ratio() -> None:
    """SGLang's GB300 database has BF16 context MLA only; the FP8 prefill of a 128K prompt is
    scaled by vLLM's FP8/BF16 ratio on GB300, where the FP8 kernel is faster."""
    target = PredictTarget(
        model=R1,
        system="gb300",
        backend="sglang",
        version="0.5.14",
        pp=4,
        gemm="nvfp4",
        moe="nvfp4",
        kvcache="fp8",
        fmha="fp8",
        gpus=4,
    )
    fp8 = engines_for(target)
    bf16 = engines_for(replace(target, kvcache="bfloat16", fmha="bfloat16"))
    assert fp8.fp8_context is not None and "vllm" in fp8.fp8_context.source
    assert fp8.prefill_ms(1, 128_000, 0) < 0.95 * bf16.prefill_ms(1, 128_000, 0)


def test_one_request_on_the_virtual_clock_is_its_prefill_hand_over_and_decode() -> None:
    """A 1P1D point at concurrency 1: TTFT is the idle prefill plus the KV hand-over (the
    decode worker then takes it at once); the rest decodes alone."""
    target = PredictTarget(
        model=R1,
        system="h200_sxm",
        backend="sglang",
        version="0.5.14",
        tp=8,
        moe_ep=8,
        gemm="fp8_block",
        moe="fp8_block",
        kvcache="fp8",
        fmha="fp8",
        gpus=8,
    )
    prefill = (engine_args(target, "prefill", running=1), target)
    decode = (engine_args(target, "decode", running=1), target)
    outcome = Run([prefill], decode=[decode]).run(Workload(2048, 64, 1, 1))
    prefill_ms, transfer_ms = prefill_point(target, 2048)
    assert outcome.mean_ttft * 1e3 == pytest.approx(prefill_ms + transfer_ms, rel=1e-6)
    step_ms = engines_for(target).decode_ms(1, 2048 + 32)
    assert outcome.mean_tpot * 1e3 == pytest.approx(step_ms, rel=0.02)
