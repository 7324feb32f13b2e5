"""Wide expert parallelism: MoE all-to-all and expert compute from AIConfigurator's large-EP data.

An EP group wider than one node dispatches tokens with an all-to-all instead of the
fused path's all-reduce. AIConfigurator's CLI takes its large-EP graph where its
all-to-all and expert-compute tables cover the group, and so does a predicted worker;
else the fused path (docs/predict.md). Its `compile_engine` does not take the comm
backend, so the engine is compiled here with the same steps and the backend set.
"""

from __future__ import annotations

import logging
from typing import Any

from disagg.predict.target import PredictTarget

log = logging.getLogger("disagg.predict")

PHASES = ("context", "generation")
LARGE_EP_FAMILIES = frozenset({"DEEPSEEK", "KIMIK25", "DEEPSEEKV32", "MOE"})


def comm_backends(target: PredictTarget, database: Any) -> dict[str, str] | None:
    """{phase: all-to-all backend} when every phase's all-to-all and expert compute are
    measured at the target's EP size and node span; None: the fused path."""
    from aiconfigurator_core.sdk import common
    from aiconfigurator_core.sdk.models import _architecture_to_model_family, _get_model_info
    from aiconfigurator_core.sdk.models.blocks.moe import MoEBlockShape
    from aiconfigurator_core.sdk.operations.moe_comm import MOE_A2A_BACKENDS, nodes_for

    ep, per_node = target.moe_ep, int(database.system_spec["node"]["num_gpus_per_node"])
    if ep <= per_node or target.moe_tp != 1:
        return None  # one node's EP stays fused, as AIConfigurator's own estimates keep it
    if target.backend == "trtllm" and target.attention_dp <= 1:
        return None  # TensorRT-LLM's wide EP runs with attention DP only
    info = _get_model_info(target.model)
    if _architecture_to_model_family(info["architecture"]) not in LARGE_EP_FAMILIES:
        return None
    shape = MoEBlockShape.from_model_info(info)
    quant = common.MoEQuantMode[target.moe]
    sm = database.system_spec.get("gpu", {}).get("sm_version")
    nodes = nodes_for(ep, per_node)
    chosen: dict[str, str] = {}
    for phase in PHASES:
        a2a = database.moe_a2a_coverage(
            shape.hidden_size, shape.topk, shape.num_experts, quant, phase
        )
        compute = set(
            database.moe_expert_compute_coverage(
                shape.hidden_size, shape.moe_inter_size, shape.topk, shape.num_experts, quant, phase
            )
        )
        if target.backend in ("trtllm", "vllm"):
            compute |= set(
                database.legacy_moe_compute_coverage(
                    shape.hidden_size, shape.moe_inter_size, shape.topk, shape.num_experts, quant
                )
            )
        for name, spec in MOE_A2A_BACKENDS.items():
            if target.backend not in spec.frameworks or phase not in spec.inference_phases:
                continue
            if (ep, nodes) not in a2a.get(name, set()) or ep not in compute:
                continue
            if spec.feasible(
                topk=shape.topk,
                num_experts=shape.num_experts,
                moe_tp_size=1,
                moe_ep_size=ep,
                sm_version=int(sm) if sm is not None else None,
            ):
                chosen[phase] = name
                break
    return chosen if set(chosen) == set(PHASES) else None


def compile_large_ep(target: PredictTarget, fmha: str) -> Any | None:
    """The target's engine on AIConfigurator's large-EP graph, None where it has no data."""
    import aiconfigurator_core
    from aiconfigurator_core.sdk.config_builders import apply_nextn, build_model_config
    from aiconfigurator_core.sdk.engine import EngineHandle, build_engine_spec_json
    from aiconfigurator_core.sdk.errors import PerfDataNotAvailableError
    from aiconfigurator_core.sdk.models import get_model
    from aiconfigurator_core.sdk.perf_database import get_database

    database = get_database(target.system, target.backend, target.version)
    if database is None:
        return None
    backends = comm_backends(target, database)
    if backends is None:
        return None
    config = build_model_config(**target.layout(fmha))
    config.moe_comm_backend = backends
    config.num_gpus_per_node = int(database.system_spec["node"]["num_gpus_per_node"])
    config.system = target.system
    apply_nextn(config, target.nextn)
    try:
        model = get_model(target.model, config, target.backend)
        spec = build_engine_spec_json(
            model,
            model_path=target.model,
            system=target.system,
            backend=target.backend,
            backend_version=str(database.version),
            kv_block_size=None,
            systems_path=None,
            nextn=config.nextn,
            database=database,
        )
        engine = EngineHandle(bytes(aiconfigurator_core.engine_spec_bincode_from_json(spec)))
        engine.decode_step_latency(1, 128, 2)
    except (PerfDataNotAvailableError, ValueError, KeyError, RuntimeError) as exc:
        log.info("%s: no large-EP graph (%s); the fused MoE path is used", target.label(), exc)
        return None
    log.info("%s: wide EP, all-to-all %s", target.label(), backends)
    return engine
