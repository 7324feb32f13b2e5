"""What a simulated worker says about itself: SGLang's `/server_info` and `/model_info`,
the OpenAI `/v1/models` list; the fields routers and `disagg` read from a real engine,
plus `simulated: true` and the simulation's constants."""

from __future__ import annotations

from typing import Any

from disagg.engines.sim.args import EngineArgs
from disagg.engines.sim.timing import TimingModel


def server_info(a: EngineArgs, timing: TimingModel) -> dict[str, Any]:
    return {
        "model_path": a.model_path,
        "tokenizer_path": a.tokenizer_path or a.model_path,
        "served_model_name": a.model_name,
        "disaggregation_mode": "null" if a.mode == "aggregated" else a.mode,
        "disaggregation_bootstrap_port": a.bootstrap_port,
        "tp_size": a.tp_size,
        "dp_size": a.dp_size,
        "ep_size": a.ep_size,
        "enable_dp_attention": a.enable_dp_attention,
        "max_running_requests": a.running_limit,
        "chunked_prefill_size": a.chunked_prefill_size,
        "max_prefill_tokens": a.max_prefill_tokens,
        "cuda_graph_max_bs": timing.graph_max_bs,
        "speculative_algorithm": a.speculative_algorithm,
        "speculative_num_steps": a.speculative_num_steps,
        "speculative_num_draft_tokens": a.speculative_num_draft_tokens,
        "nnodes": a.nnodes,
        "context_length": a.context_length,
        "gpus": a.gpus,
        "simulated": True,
        "sim_constants": vars(a.sim),
        "predicted": a.predict.as_dict() | {"label": a.predict.label()} if a.predict else None,
        "kv_capacity_tokens": timing.kv_capacity,
        "version": "sim",
    }


def model_info(a: EngineArgs) -> dict[str, Any]:
    return {
        "model_path": a.model_path,
        "tokenizer_path": a.tokenizer_path or a.model_path,
        "served_model_name": a.model_name,
        "is_generation": True,
        "model_type": "sim",
        "simulated": True,
    }


def models(a: EngineArgs, started: float) -> dict[str, Any]:
    """The OpenAI model list: the served model, created when the worker started."""
    model = {
        "id": a.model_name,
        "object": "model",
        "created": int(started),
        "owned_by": "sglang",
        "root": a.model_path,
        "max_model_len": a.context_length,
    }
    return {"object": "list", "data": [model]}
