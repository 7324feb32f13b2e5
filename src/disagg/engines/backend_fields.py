"""Engine-wide `backend.*` knobs (srt-slurm's `engine:` keys) that no adapter carries out.

srt-slurm's engines take knobs beside their per-role settings: metrics publication,
NUMA binding, worker start batching, vLLM's launch layouts. An adapter lists the ones
it honours (`EngineAdapter.backend_fields`); any other knob a variant sets is refused
when running without it would measure something else, or listed as ignored (plan
output, plan.json, lint) when it only concerns what happens around the measurement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Action = Literal["refused", "ignored"]

# knob -> (action, why, value that means "not set"). The mocker's knobs are its own.
KNOBS: dict[str, tuple[Action, str, Any]] = {
    "kv_events_config": ("ignored", "no KV-cache events are published or consumed", None),
    "enable_kv_events": ("ignored", "no KV-cache events are published or consumed", None),
    "mooncake_protocol": ("ignored", "only ATOM's Mooncake connector reads a transport", None),
    "gpu_type": ("ignored", "the engine picks its kernels for the GPU it finds", None),
    "publish_metrics": ("ignored", "no Dynamo metrics endpoint is scraped", None),
    "publish_events_and_metrics": ("ignored", "no Dynamo metrics endpoint is scraped", None),
    "sequential_node_start": ("ignored", "workers sharing a node start together", 0),
    "numa_memory_bind": ("ignored", "no numactl wrapper binds worker memory", None),
    "numa_cpu_bind": ("ignored", "no taskset wrapper binds worker CPUs", False),
    "connector": ("ignored", "only vLLM and ATOM read a KV connector here", None),
    **dict.fromkeys(
        ("allow_prefill_decode_colocation", "allow_prefill_decode_colocation_across_nodes"),
        ("ignored", "prefill and decode take the nodes the resources give them", False),
    ),
    "dp_launch_mode": ("refused", "a vLLM launch layout; this engine has none", "per_node"),
    "vllm_serve_binary": ("ignored", "workers run `vllm serve`", None),
    "failover": ("refused", "no shadow engines or GPU memory service", None),
    "prefill_extra_args": ("ignored", "only TRT-LLM workers take extra arguments", None),
    "decode_extra_args": ("ignored", "only TRT-LLM workers take extra arguments", None),
    "aggregated_extra_args": ("ignored", "only TRT-LLM workers take extra arguments", None),
    "weight_model_type": (
        "ignored",
        "names the checkpoint type for TileRT's weight conversion; the job converts no "
        "weights and the decode server reads the converted ones from weights_dir",
        None,
    ),
}


def _is_set(value: Any, neutral: Any) -> bool:
    if value is None or value == neutral:
        return False
    return not (isinstance(value, Mapping | list) and not value)


def unhonoured(
    backend: Mapping[str, Any], honoured: frozenset[str]
) -> list[tuple[str, Action, str]]:
    """(field, action, why) for every knob `backend` sets that the engine does not honour."""
    return [
        (f"backend.{knob}", action, why)
        for knob, (action, why, neutral) in KNOBS.items()
        if knob not in honoured and _is_set(backend.get(knob), neutral)
    ]
