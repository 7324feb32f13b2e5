"""What a result file says about the setup that measured it, under InferenceX's names.

InferenceX keys every row on hardware, framework, precision, speculative decoding,
ISL/OSL, concurrency and the prefill/decode parallelism; results without them compare
with nothing. They come from the plan, so every benchmark type writes the same ones
(docs/results.md lists them). Parallelism the plan did not record is read from each
worker's command line, with the engines' flag spellings; a missing flag counts 1.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from disagg.plan.model import ParallelPlan, Plan, RoleKind, RolePlan

# Every spelling of a parallel size in SGLang and vLLM worker commands.
_SIZE_FLAGS = {
    "tp": ("--tensor-parallel-size", "--tp-size", "--tp"),
    "dp": ("--data-parallel-size", "--dp-size", "--dp"),
    "ep": ("--expert-parallel-size", "--ep-size", "--ep"),
}
_DP_ATTENTION_FLAGS = ("--enable-dp-attention",)
_EXPERT_PARALLEL_FLAGS = ("--enable-expert-parallel",)  # vLLM: EP = TP x DP
_SPEC_FLAGS = ("--speculative-algorithm", "--speculative-algo")
_SPEC_CONFIG_FLAGS = ("--speculative-config",)  # vLLM: JSON with `method`

# Router programs by the module or executable the router role starts, with the
# distribution whose version this environment can report.
_ROUTERS = {
    "sglang_router.launch_router": ("sglang-router", "sglang-router"),
    "smg": ("smg", "smg"),
    "smg.launch_router": ("smg", "smg"),
    "dynamo.frontend": ("dynamo", "ai-dynamo"),
    "vllm-router": ("vllm-router", "vllm-router"),
}

# Every setup field a result carries (null when unknown), in the order written.
SETUP_FIELDS = (
    "hw",
    "framework",
    "engine",
    "precision",
    "image",
    "model",
    "infmax_model_prefix",
    "spec_decoding",
    "is_multinode",
    "tp",
    "ep",
    "dp_attention",
    "prefill_tp",
    "prefill_ep",
    "prefill_dp_attention",
    "prefill_num_workers",
    "decode_tp",
    "decode_ep",
    "decode_dp_attention",
    "decode_num_workers",
    "router",
    "router_version",
    "recipe",
    "recipe_fingerprint",
    "predicted",  # the label of a predicted run (`disagg run --predict`), else null
    "predicted_assumptions",  # what the prediction assumed beyond the recipe, in words
)


def _flag_value(argv: Sequence[str], names: Sequence[str]) -> str | None:
    for index, item in enumerate(argv):
        for name in names:
            if item == name and index + 1 < len(argv):
                return argv[index + 1]
            if item.startswith(name + "="):
                return item.split("=", 1)[1]
    return None


def _int_flag(argv: Sequence[str], names: Sequence[str]) -> int:
    value = _flag_value(argv, names)
    try:
        return max(1, int(value)) if value is not None else 1
    except ValueError:
        return 1


def worker_parallelism(argv: Sequence[str]) -> ParallelPlan:
    """tp/dp/ep and attention-DP from one worker's argv (a plan that did not record them)."""
    tp, dp, ep = (_int_flag(argv, _SIZE_FLAGS[key]) for key in ("tp", "dp", "ep"))
    if any(flag in argv for flag in _EXPERT_PARALLEL_FLAGS):
        ep = tp * dp
    return ParallelPlan(
        tp=tp, dp=dp, ep=ep, dp_attention=any(flag in argv for flag in _DP_ATTENTION_FLAGS)
    )


def spec_decoding(argv: Sequence[str]) -> str:
    """InferenceX's `spec_decoding`: the algorithm in lower case (`eagle`, `nextn`), or `none`."""
    algorithm = _flag_value(argv, _SPEC_FLAGS)
    if algorithm:
        return algorithm.lower()
    config = _flag_value(argv, _SPEC_CONFIG_FLAGS)
    if config:
        try:
            method = json.loads(config).get("method")
        except (ValueError, AttributeError):
            method = None
        return str(method).lower() if method else "unknown"
    return "none"


def _speculative(role: RolePlan) -> str:
    if role.parallel is not None:  # recorded by the plan from the engine adapter
        return role.speculative.lower() if role.speculative else "none"
    return spec_decoding(role.argv_on(0))


def digest(value: Any) -> str:
    """sha256 of `value` as canonical JSON: equal iff the value is (a recipe's fingerprint)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def router_identity(role: RolePlan | None) -> tuple[str | None, str | None]:
    """The router's name, and its version when it runs from this environment (no container)."""
    if role is None:
        return None, None
    for program, (name, distribution) in _ROUTERS.items():
        if program in role.argv or any(item.endswith("/" + program) for item in role.argv):
            if role.container_image is not None:
                return name, None  # runs in an image: this environment's version says nothing
            try:
                return name, metadata.version(distribution)
            except metadata.PackageNotFoundError:
                return name, None
    return (role.argv[0] if role.argv else None), None


def _group(roles: Sequence[RolePlan]) -> dict[str, Any]:
    """tp/ep/dp-attention of a group of workers (the first one's: the plan makes them alike)."""
    if not roles:
        return {"tp": 0, "ep": 0, "dp_attention": False, "num_workers": 0}
    first = roles[0]
    # the engine adapter's reading, recorded by the plan; else (older plans) the command's
    layout = first.parallel or worker_parallelism(first.argv_on(0))
    return {
        "tp": layout.tp,
        "ep": layout.ep,
        "dp_attention": layout.dp_attention,
        "num_workers": len(roles),
    }


def config_text(config: Mapping[str, Any], section: str, key: str) -> str | None:
    """`config[section][key]` as text, None when absent (the recipe as planned)."""
    part = config.get(section)
    value = part.get(key) if isinstance(part, Mapping) else None
    return str(value) if value is not None else None


def setup_fields(plan: Plan) -> dict[str, Any]:
    """Every field of SETUP_FIELDS for a run of this plan."""
    workers = [
        role
        for role in plan.roles
        if role.kind in (RoleKind.PREFILL, RoleKind.DECODE, RoleKind.AGGREGATED)
    ]
    routers = plan.roles_of(RoleKind.ROUTER)
    router, router_version = router_identity(routers[0] if routers else None)
    images = [role.container_image for role in workers if role.container_image]
    algorithms = [_speculative(role) for role in workers]
    config = plan.config
    backend = config.get("backend")
    framework = backend.get("type") if isinstance(backend, Mapping) else None
    fields: dict[str, Any] = {
        "hw": config_text(config, "resources", "gpu_type"),
        "framework": str(framework or plan.engine),
        "engine": plan.engine,
        "precision": config_text(config, "model", "precision"),
        "image": images[0] if images else plan.slurm.container_image,
        "model": plan.bench.model_name,
        "infmax_model_prefix": None,
        "spec_decoding": next((a for a in algorithms if a != "none"), "none"),
        "is_multinode": plan.nodes > 1,
        "tp": None,
        "ep": None,
        "dp_attention": None,
    }
    if plan.disaggregated:
        prefill = _group(plan.roles_of(RoleKind.PREFILL))
        decode = _group(plan.roles_of(RoleKind.DECODE))
    else:  # InferenceX's aggregated rows: the workers as prefill, no decode pool
        prefill = _group(plan.roles_of(RoleKind.AGGREGATED))
        decode = _group([])
        fields |= {key: prefill[key] for key in ("tp", "ep", "dp_attention")}
    fields |= {f"prefill_{key}": value for key, value in prefill.items()}
    fields |= {f"decode_{key}": value for key, value in decode.items()}
    fields |= {
        "router": router,
        "router_version": router_version,
        "recipe": plan.selector,
        "recipe_fingerprint": digest(config),
        **predicted_fields(plan),
    }
    return {name: fields.get(name) for name in SETUP_FIELDS}


def predicted_fields(plan: Plan) -> dict[str, Any]:
    """`predicted` (the label every result of a predicted run carries) and its assumptions."""
    info = plan.predicted
    if not info:
        return {"predicted": None, "predicted_assumptions": None}
    said = []
    if info.get("accept_rate") is not None:
        said.append(
            f"draft acceptance {info['accept_rate']:g} per token ({info.get('accept_source')})"
        )
    elif info.get("tokens_per_step") is not None:
        said.append(
            f"{info['tokens_per_step']:g} tokens per speculative decode step "
            f"({info.get('accept_source')})"
        )
    scale = info.get("time_scale", 1.0)
    if scale > 1.0:
        said.append(f"run {scale:g}x faster than modelled, times stretched back")
    elif scale < 1.0:
        said.append(f"run {1 / scale:g}x slower than modelled, times compressed back")
    return {"predicted": info.get("label"), "predicted_assumptions": "; ".join(said) or None}
