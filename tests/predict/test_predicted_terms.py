"""Terms a predicted worker takes from AIConfigurator's data: wide EP, FP8 context attention,
and a whole point on the virtual clock against the fixed-point pieces it is made of."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

import pytest

pytest.importorskip("aiconfigurator_core", reason="the `predict` group is not installed")

from disagg.predict.target import PredictTarget, compile_engine
from disagg.predict.timing import PredictedTiming, engines_for
from disagg.predict.virtual import Run, Workload, engine_args, prefill_point
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


def _gpt_oss_vllm(request_host_ms: float) -> PredictTarget:
    return PredictTarget(
        model="openai/gpt-oss-120b",
        system="h100_sxm",
        backend="vllm",
        version="0.24.0",
        moe="w4a16_mxfp4",
        request_host_ms=request_host_ms,
    )


def test_a_burst_reaches_vllm_one_api_server_span_after_another() -> None:
    """vLLM's API server does each request's host work on one thread: 300 16-token prompts
    sent at once are admitted 1.9 ms apart, so the last first token comes no sooner than
    300 x 1.9 ms, where the GPU alone prefills the whole burst sooner."""
    ends = {}
    for host_ms in (0.0, 1.9):
        target = _gpt_oss_vllm(host_ms)
        worker = (engine_args(target, "aggregated", running=1024, chunk=8192), target)
        outcome = Run([worker]).run(Workload(16, 4, 300, 300))
        ends[host_ms] = max(outcome.ttft)
    assert ends[1.9] >= 300 * 1.9e-3
    assert ends[0.0] < 300 * 1.9e-3


def test_every_iteration_carries_the_engines_exposed_host_time() -> None:
    """TensorRT-LLM's overlap loop leaves host time exposed on every iteration (prefill pass
    and decode step alike); the mapping gives it to TensorRT-LLM workers only."""
    from disagg.predict.mapping import STEP_HOST_MS

    assert STEP_HOST_MS.get("trtllm", 0.0) > 0 and STEP_HOST_MS.get("sglang", 0.0) == 0
    base = _gb200_dep(4)
    timings = [
        PredictedTiming(engine_args(t, "aggregated", running=8), t)
        for t in (base, replace(base, step_host_ms=0.58))
    ]
    plain, hosted = (t.decode_step_time(8, 8 * 2048) for t in timings)
    assert hosted - plain == pytest.approx(0.58e-3)
    plain, hosted = (t.prefill_batch_time([(2048, 0)]) for t in timings)
    assert hosted - plain == pytest.approx(0.58e-3)
