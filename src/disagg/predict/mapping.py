"""From a recipe's worker to the performance model's inputs (`PredictTarget`), or a refusal.

The engine adapter's reading of the worker (as for the simulated engine), the model, GPU
and precision become what AIConfigurator takes. What cannot be mapped (an AMD GPU, a model
without a config, FP4 without FP4 kernels, drafts without a known acceptance) is refused
with the reason: a prediction for something else would be worse than none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disagg.engines.worker import Parallelism, SimReading
from disagg.predict.target import Acceptance, PredictTarget, published_acceptance

if TYPE_CHECKING:
    from disagg.recipe.backend_section import PredictSettings

# resources.gpu_type (or the cluster profile's) -> AIConfigurator's system.
SYSTEMS = {
    "h100": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200": "gb200",
    "gb300": "gb300",
    "a100": "a100_sxm",
    "l40s": "l40s",
}
FP4_SYSTEMS = frozenset({"b200_sxm", "b300_sxm", "gb200", "gb300"})
AMD_PREFIXES = ("mi2", "mi3", "mi4")

# Checkpoints that are revisions or re-quantisations of a model whose config AIConfigurator
# ships, with the same architecture (the precision comes from the recipe, not the name).
SAME_ARCHITECTURE = {
    "deepseek-ai/deepseek-r1-0528": "deepseek-ai/DeepSeek-R1",
    "nvidia/deepseek-r1-fp4": "deepseek-ai/DeepSeek-R1",
    "nvidia/deepseek-r1-0528-fp4": "deepseek-ai/DeepSeek-R1",
    "nvidia/deepseek-r1-0528-fp4-v2": "deepseek-ai/DeepSeek-R1",
    "nvidia/deepseek-r1-0528-nvfp4": "deepseek-ai/DeepSeek-R1",
    "nvidia/deepseek-r1-0528-nvfp4-v2": "deepseek-ai/DeepSeek-R1",
    "deepseek-ai/deepseek-v3-0324": "deepseek-ai/DeepSeek-V3",
}

# Checkpoints whose KV cache is FP8 by default, known by name where the plan has only the
# name (TensorRT-LLM's DeepSeek-R1 guide: "the latest DeepSeek-R1-0528-FP4 checkpoint had
# enabled FP8 KV cache by-default").
FP8_KV_CHECKPOINTS = frozenset({"nvidia/deepseek-r1-0528-fp4", "nvidia/deepseek-r1-0528-fp4-v2"})

MEM_FRACTION = {"sglang": 0.85, "vllm": 0.9, "trtllm": 0.9}  # the engines' defaults

# Host time the kernel measurements leave out (docs/predict.md, "Host time"). Per
# iteration, what the GPU waits for: TensorRT-LLM's overlap loop leaves about 580 us of its
# host work exposed (its issue 13957, from nsys on B200); SGLang's overlap scheduler hides
# it ("zero CPU overhead", its v0.4 release); vLLM's is not measured. Per request, the CPU
# time of vLLM's API server (benchmarks/predict_host_overhead.py, vLLM 0.32 here).
STEP_HOST_MS = {"trtllm": 0.58}
REQUEST_HOST_MS = {"vllm": 1.9}


class Unmappable(Exception):
    """Why a worker cannot be predicted, and the recipe field to blame."""

    def __init__(self, what: str, path: tuple[str, ...]) -> None:
        super().__init__(what)
        self.what = what
        self.path = path


@dataclass(frozen=True)
class PredictOptions:
    """The command line's (or recipe's) settings for a predicted run."""

    accept_rate: float | None = None
    time_scale: float = 1.0
    model: str | None = None  # the model's name when the recipe names it by an alias


@dataclass(frozen=True)
class WorkerInputs:
    """What the plan knows about one worker."""

    engine: str  # backend.type: sglang, trtllm, vllm
    args: Mapping[str, Any]  # the role's settings as written
    reading: SimReading  # the adapter's reading of them
    gpu_type: str
    precision: str
    model_names: tuple[str, ...]  # served name, repo id, as written: tried in order
    model_dir: str | None  # a local checkpoint directory, when there is one


def options_for(
    engine: str | None, written: PredictSettings | None, given: PredictOptions | None
) -> PredictOptions | None:
    """A variant's predict options: `--predict`'s, else `engine: predict`'s; the command
    line's settings win over the recipe's `backend.predict`. None: not predicted."""
    if given is None and engine == "predict":
        given = PredictOptions()
    if given is None or written is None:
        return given
    scale = given.time_scale if given.time_scale != 1.0 else written.time_scale
    return PredictOptions(
        accept_rate=written.accept_rate if given.accept_rate is None else given.accept_rate,
        time_scale=scale or 1.0,
        model=given.model or written.model,
    )


def system_for(gpu_type: str) -> str:
    text = gpu_type.strip().lower().replace("nvidia-", "").replace("nvidia_", "")
    if text.startswith(AMD_PREFIXES):
        raise Unmappable(
            f"--predict: GPU type {gpu_type!r} is an AMD GPU; AIConfigurator's performance "
            "model covers NVIDIA GPUs only",
            ("resources", "gpu_type"),
        )
    for key in sorted(SYSTEMS, key=len, reverse=True):
        if text == key or text.startswith((key + "-", key + "_", key + " ")):
            return SYSTEMS[key]
    raise Unmappable(
        f"--predict: GPU type {gpu_type!r} has no AIConfigurator system "
        f"(known: {', '.join(sorted(SYSTEMS))})",
        ("resources", "gpu_type"),
    )


@cache
def shipped_models() -> dict[str, str]:
    """Lower-case `org/name` -> `org/name` of every model config AIConfigurator ships."""
    import aiconfigurator_core

    folder = Path(aiconfigurator_core.__file__).parent / "model_configs"
    names = [
        path.name.removesuffix("_config.json").replace("--", "/", 1)
        for path in folder.glob("*_config.json")
        if not path.name.endswith("_hf_quant_config.json")
    ]
    return {name.lower(): name for name in names}


def model_for(inputs: WorkerInputs) -> tuple[str, dict[str, Any]]:
    """(what AIConfigurator loads, the model's config.json) for the worker's model."""
    if inputs.model_dir is not None and (Path(inputs.model_dir) / "config.json").is_file():
        return inputs.model_dir, model_config(inputs.model_dir)
    shipped = shipped_models()
    for name in inputs.model_names:
        key = name.removeprefix("hf:").strip("/").lower()
        found = shipped.get(key) or SAME_ARCHITECTURE.get(key)
        if found is not None:
            return found, model_config(found)
    raise Unmappable(
        f"--predict: no model config for {', '.join(dict.fromkeys(inputs.model_names))}: "
        "not a local checkpoint with config.json, and not among AIConfigurator's "
        "shipped models",
        ("model", "path"),
    )


@cache
def model_config(model: str) -> dict[str, Any]:
    """The config.json of a target's model: a checkpoint directory or a shipped name."""
    path = Path(model) / "config.json"
    if path.is_file():
        return _read_json(path)
    import aiconfigurator_core

    file = model.replace("/", "--", 1) + "_config.json"
    shipped = Path(aiconfigurator_core.__file__).parent / "model_configs" / file
    return _read_json(shipped) if shipped.is_file() else {}


def _read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else {}


def quant_for(
    precision: str,
    config: Mapping[str, Any],
    system: str,
    args: Mapping[str, Any],
    names: tuple[str, ...] = (),
) -> dict[str, str]:
    """GEMM, MoE, KV-cache and attention modes: `model.precision`, else the checkpoint's.

    The KV cache is the role's `kv-cache-dtype` / `kv_cache_config.dtype`, else the
    engines' `auto`: FP8 where the checkpoint quantises its KV cache, else BF16."""
    text = precision.strip().lower()
    quant = config.get("quantization_config")
    quant = quant if isinstance(quant, Mapping) else {}
    method = str(quant.get("quant_method", "")).lower()
    if text in ("", "auto"):
        algo = str(quant.get("quant_algo", "")).lower()
        text = "fp4" if "fp4" in algo or "fp4" in method else ("fp8" if "fp8" in method else "")
        text = text or str(config.get("torch_dtype", "bf16"))
    if text == "mxfp4" or (text == "fp4" and method == "mxfp4"):
        # MXFP4 experts (gpt-oss's native format): 4-bit weights, BF16 activations, as
        # Hopper runs them and as every engine's database measured them; the rest is BF16
        modes = {"gemm": "bfloat16", "moe": "w4a16_mxfp4", "kvcache": "bfloat16"}
    elif text in ("fp4", "nvfp4"):
        if system not in FP4_SYSTEMS:
            raise Unmappable(
                f"--predict: precision {precision!r} needs FP4 kernels, which {system} lacks",
                ("model", "precision"),
            )
        modes = {"gemm": "nvfp4", "moe": "nvfp4", "kvcache": "bfloat16"}
    elif text in ("fp8", "w8a8"):
        mode = "fp8_block" if "weight_block_size" in quant else "fp8"
        modes = {"gemm": mode, "moe": mode, "kvcache": "bfloat16"}
    elif text in ("bf16", "bfloat16", "fp16", "float16"):
        modes = {"gemm": "bfloat16", "moe": "bfloat16", "kvcache": "bfloat16"}
    else:
        raise Unmappable(
            f"--predict: precision {precision!r} has no AIConfigurator quantisation "
            "(known: fp4, mxfp4, fp8, bf16)",
            ("model", "precision"),
        )
    if _fp8_kv_checkpoint(quant, names):
        modes["kvcache"] = "fp8"
    kv = _setting(args, "kv-cache-dtype", "kv_cache_config.dtype", "kv_cache_dtype")
    if isinstance(kv, str) and kv.lower().startswith("fp8"):
        modes["kvcache"] = "fp8"
    elif isinstance(kv, str) and kv.lower() in ("bf16", "bfloat16", "float16", "fp16"):
        modes["kvcache"] = "bfloat16"
    modes["fmha"] = modes["kvcache"]
    return modes


def _fp8_kv_checkpoint(quant: Mapping[str, Any], names: tuple[str, ...]) -> bool:
    """Whether the checkpoint stores an FP8 KV cache (what `auto` then runs)."""
    algo = str(quant.get("kv_cache_quant_algo") or "").lower()
    scheme = quant.get("kv_cache_scheme")
    if "fp8" in algo or isinstance(scheme, Mapping):
        return True
    lowered = {n.removeprefix("hf:").strip("/").lower() for n in names}
    return bool(lowered & FP8_KV_CHECKPOINTS)


def _setting(args: Mapping[str, Any], *names: str) -> Any:
    """A setting by any of its spellings (`a-b` == `a_b`; `x.y` reads inside map `x`)."""
    flat = {str(k).replace("_", "-"): v for k, v in args.items()}
    for name in names:
        head, _, sub = name.partition(".")
        value = flat.get(head.replace("_", "-"))
        if sub:
            value = value.get(sub) if isinstance(value, Mapping) else None
        if value is not None:
            return value
    return None


def layout_for(par: Parallelism, config: Mapping[str, Any]) -> dict[str, int]:
    """tp/attention-DP/MoE sizes of one engine replica, and how many replicas share the work."""
    adp = par.dp if par.dp_attention else 1
    replicas = par.dp if par.replicas_use_gpus and not par.dp_attention else 1
    attn_tp = max(1, par.tp // adp) if par.dp_attention else par.tp
    gpus = par.tp * par.pp
    moe = any(k in config for k in ("n_routed_experts", "num_local_experts", "num_experts"))
    ep = par.ep if moe else 1
    if ep < 1 or gpus % ep:
        ep = 1
    return {
        "tp": attn_tp,
        "pp": par.pp,
        "attention_dp": adp,
        "moe_ep": ep,
        "moe_tp": max(1, (attn_tp * adp) // ep),
        "replicas": replicas,
        "gpus": gpus,
    }


def acceptance_for(
    model: str, nextn: int, options: PredictOptions, path: tuple[str, ...]
) -> Acceptance:
    if nextn <= 0:
        return Acceptance(0.0, (), "")
    if options.accept_rate is not None:
        return Acceptance(options.accept_rate, (), "set on the command line")
    published = published_acceptance(model, nextn)
    if published is not None:
        return published
    raise Unmappable(
        f"--predict: speculative decoding with {nextn} draft token(s), and no published "
        f"acceptance rate for {model}",
        path,
    )


def link_for(system: str) -> float:
    """Bytes/s per GPU between a prefill and a decode worker: the system's inter-node link
    (InfiniBand on HGX systems, NVLink inside a GB200/GB300 NVL72 rack)."""
    import aiconfigurator_core
    import yaml

    path = Path(aiconfigurator_core.__file__).parent / "systems" / f"{system}.yaml"
    spec = yaml.safe_load(path.read_text())
    return float(spec["node"]["inter_node_bw"])


@cache
def database_version(system: str, backend: str) -> str:
    from aiconfigurator_core.sdk.perf_database import get_latest_database_version

    version = get_latest_database_version(system=system, backend=backend)
    if version is None:
        raise Unmappable(
            f"--predict: AIConfigurator has no {backend} database for {system}",
            ("backend", "type"),
        )
    return str(version)


def target_for(
    inputs: WorkerInputs, options: PredictOptions, spec_path: tuple[str, ...]
) -> PredictTarget:
    """The worker's PredictTarget; Unmappable names what cannot be predicted and where."""
    from disagg.predict import require

    require()
    if inputs.engine not in MEM_FRACTION:
        raise Unmappable(
            f"--predict: engine {inputs.engine!r} has no AIConfigurator database "
            "(sglang, trtllm and vllm have)",
            ("backend", "type"),
        )
    system = system_for(inputs.gpu_type)
    model, config = model_for(inputs)
    version = database_version(system, inputs.engine)
    modes = quant_for(inputs.precision, config, system, inputs.args, inputs.model_names)
    layout = layout_for(inputs.reading.parallel, config)
    nextn = 0
    if inputs.reading.speculative_algorithm:  # the simulated engine's default depth: 3
        steps = inputs.reading.speculative_num_steps
        nextn = 3 if steps is None else steps
    accept = acceptance_for(model, nextn, options, spec_path)
    fraction = _setting(
        inputs.args,
        "mem-fraction-static",
        "gpu-memory-utilization",
        "kv_cache_config.free_gpu_memory_fraction",
    )
    return PredictTarget(
        model=model,
        system=system,
        backend=inputs.engine,
        version=version,
        nextn=nextn,
        accept_rate=accept.rate or 0.0,
        accept_rates=",".join(f"{r:.4f}" for r in accept.rates),
        accept_source=accept.source,
        link_bytes_per_s=link_for(system),
        mem_fraction=float(fraction)
        if isinstance(fraction, int | float)
        else MEM_FRACTION[inputs.engine],
        time_scale=options.time_scale,
        step_host_ms=STEP_HOST_MS.get(inputs.engine, 0.0),
        request_host_ms=REQUEST_HOST_MS.get(inputs.engine, 0.0),
        gemm=modes["gemm"],
        moe=modes["moe"],
        kvcache=modes["kvcache"],
        fmha=modes["fmha"],
        tp=layout["tp"],
        pp=layout["pp"],
        attention_dp=layout["attention_dp"],
        moe_tp=layout["moe_tp"],
        moe_ep=layout["moe_ep"],
        replicas=layout["replicas"],
        gpus=layout["gpus"],
    )
