"""From a recipe to the performance model's inputs: what maps, what is refused and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("aiconfigurator_core", reason="the `predict` group is not installed")

from disagg.engines.base import Parallelism
from disagg.engines.registry import adapter
from disagg.predict.mapping import (
    PredictOptions,
    Unmappable,
    WorkerInputs,
    layout_for,
    target_for,
)

DSR1_CONFIG = {"n_routed_experts": 256, "quantization_config": {"weight_block_size": [128, 128]}}


def _inputs(
    *,
    engine: str = "sglang",
    args: dict[str, object] | None = None,
    gpu: str = "h200",
    precision: str = "fp8",
    names: tuple[str, ...] = ("deepseek-ai/DeepSeek-R1",),
    model_dir: str | None = None,
) -> WorkerInputs:
    written = args or {"tp-size": 8, "ep-size": 8}
    return WorkerInputs(
        engine=engine,
        args=written,
        reading=adapter(engine).sim_reading(written),
        gpu_type=gpu,
        precision=precision,
        model_names=names,
        model_dir=model_dir,
    )


def _refusal(inputs: WorkerInputs, options: PredictOptions | None = None) -> Unmappable:
    with pytest.raises(Unmappable) as caught:
        target_for(inputs, options or PredictOptions(), ("backend", "sglang_config", "decode"))
    return caught.value


def test_a_deepseek_worker_maps_to_its_system_database_and_precision() -> None:
    target = target_for(_inputs(), PredictOptions(), ())
    assert (target.model, target.system, target.backend) == (
        "deepseek-ai/DeepSeek-R1",
        "h200_sxm",
        "sglang",
    )
    # the engines' `auto` KV cache for this checkpoint (no KV quantisation in it) is BF16
    assert (target.gemm, target.moe, target.kvcache) == ("fp8_block", "fp8_block", "bfloat16")
    fp8_kv = _inputs(args={"tp-size": 8, "ep-size": 8, "kv-cache-dtype": "fp8_e4m3"})
    assert target_for(fp8_kv, PredictOptions(), ()).kvcache == "fp8"
    assert (target.tp, target.moe_ep, target.moe_tp, target.gpus) == (8, 8, 1, 8)
    assert target.label() == (
        f"predicted (aiconfigurator-core 0.12.0, h200_sxm, sglang {target.version} database)"
    )


def test_attention_dp_layouts_of_sglang_and_trtllm_agree() -> None:
    sglang = adapter("sglang").parallelism(
        {"tp-size": 8, "dp-size": 8, "ep-size": 8, "enable-dp-attention": True}
    )
    trtllm = adapter("trtllm").parallelism(
        {"tensor_parallel_size": 8, "moe_expert_parallel_size": 8, "enable_attention_dp": True}
    )
    for par in (sglang, trtllm):
        layout = layout_for(par, DSR1_CONFIG)
        assert (layout["tp"], layout["attention_dp"], layout["moe_ep"]) == (1, 8, 8)
        assert layout["gpus"] == 8 and layout["replicas"] == 1


def test_plain_data_parallel_replicas_share_the_batch() -> None:
    layout = layout_for(Parallelism(tp=2, dp=4), {})
    assert (layout["tp"], layout["replicas"], layout["attention_dp"]) == (2, 4, 1)


def test_fp4_on_blackwell_and_a_served_revision_of_the_same_architecture() -> None:
    target = target_for(
        _inputs(gpu="b200", precision="fp4", names=("nvidia/DeepSeek-R1-0528-FP4-v2",)),
        PredictOptions(),
        (),
    )
    assert (target.system, target.gemm, target.moe) == ("b200_sxm", "nvfp4", "nvfp4")
    assert target.model == "deepseek-ai/DeepSeek-R1"


def test_a_local_checkpoint_config_is_used_as_is(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16"}))
    target = target_for(
        _inputs(precision="bf16", names=("whatever",), model_dir=str(tmp_path)),
        PredictOptions(),
        (),
    )
    assert target.model == str(tmp_path)
    assert target.gemm == "bfloat16"


def test_an_amd_gpu_is_refused_not_guessed() -> None:
    refusal = _refusal(_inputs(gpu="mi355x"))
    assert "AMD" in refusal.what and refusal.path == ("resources", "gpu_type")


def test_an_unknown_gpu_or_model_is_refused_with_the_reason() -> None:
    assert "no AIConfigurator system" in _refusal(_inputs(gpu="sim")).what
    refusal = _refusal(_inputs(names=("acme/NotAModel-7B",)))
    assert "no model config for acme/NotAModel-7B" in refusal.what
    assert refusal.path == ("model", "path")


def test_fp4_on_hopper_is_refused() -> None:
    refusal = _refusal(_inputs(precision="fp4"))
    assert "FP4" in refusal.what and refusal.path == ("model", "precision")


def test_speculative_decoding_takes_the_published_acceptance_or_the_given_one() -> None:
    args = {"tp-size": 8, "speculative-algorithm": "EAGLE", "speculative-num-steps": 2}
    published = target_for(_inputs(args=args), PredictOptions(), ())
    # TensorRT-LLM's published DeepSeek-R1 accepted length with 2 MTP layers: 2.58 tokens/step
    assert published.nextn == 2 and published.tokens_per_step() == pytest.approx(2.58, abs=1e-3)
    assert "TensorRT-LLM" in published.accept_source
    three = target_for(_inputs(args={**args, "speculative-num-steps": 3}), PredictOptions(), ())
    assert three.tokens_per_step() == pytest.approx(2.82, abs=1e-3)
    given = target_for(_inputs(args=args), PredictOptions(accept_rate=0.6), ())
    assert given.accept_rate == 0.6 and given.accept_source == "set on the command line"
    qwen = _inputs(args=args, precision="bf16", names=("Qwen/Qwen3-32B",))
    assert "no published acceptance rate" in _refusal(qwen).what


@pytest.mark.parametrize("precision", ["mxfp4", "fp4"])
def test_gpt_oss_mxfp4_on_hopper_runs_mxfp4_weights_with_bf16_activations(precision: str) -> None:
    """gpt-oss ships MXFP4 experts (its config says so); Hopper runs them as W4A16, which
    is what AIConfigurator's H100 vLLM database measured (`w4a16_mxfp4`)."""
    inputs = _inputs(
        engine="vllm",
        args={"tensor-parallel-size": 2},
        gpu="h100",
        precision=precision,
        names=("openai/gpt-oss-120b",),
    )
    target = target_for(inputs, PredictOptions(), ())
    assert (target.system, target.moe, target.gemm) == ("h100_sxm", "w4a16_mxfp4", "bfloat16")
    from disagg.predict.timing import Engines

    engines = Engines(target)  # the database has what it needs: no refusal
    assert engines.decode_ms(8, 2048) > 0 and engines.prefill_ms(1, 4000, 0) > 0
