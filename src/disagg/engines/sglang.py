"""SGLang worker command lines from `backend.sglang_config.<role>` maps.

Rendering (DESIGN.md): `key: value` -> `--key value`; `true` -> `--key`; `false` and
`null` -> omitted; a list -> `--key v1 v2 ...` (an empty list is omitted); a map ->
one JSON string. Keys are written with dashes (`tp_size` -> `--tp-size`).

The plan owns the flags that depend on placement (`--host`, `--port`, bootstrap
port, `--dist-init-addr`, `--nnodes`, `--node-rank`) and the model location
(`--model-path ${model.path}`: the staged model as the worker sees it; a recipe's
own `model-path`, e.g. srt-slurm's container mount `/model/`, is replaced). A draft
model named by repo id becomes `${model.draft}`, the staged copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from disagg.cluster import is_repo_id

SGLANG_MODULE = "sglang.launch_server"

# Flags the plan sets itself (every spelling SGLang accepts), dropped from recipe args.
PLACEMENT_FLAGS = frozenset(
    {
        "host",
        "port",
        "model",
        "model-path",
        "nnodes",
        "node-rank",
        "dist-init-addr",
        "disaggregation-bootstrap-port",
    }
)
DRAFT_FLAGS = ("speculative-draft-model-path", "speculative-draft-model")
# Every spelling SGLang accepts for each parallel size (the linter reads the same table).
PARALLEL_FLAGS = {
    "tp": ("tensor-parallel-size", "tp-size", "tp"),
    "dp": ("data-parallel-size", "dp-size", "dp"),
    "ep": ("expert-parallel-size", "ep-size", "ep"),
    "pp": ("pipeline-parallel-size", "pp-size", "pp"),
}


def flag_name(key: str) -> str:
    return str(key).replace("_", "-")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping | list):
        return json.dumps(value)
    return str(value)


def render_args(args: Mapping[str, Any]) -> list[str]:
    """Recipe engine args -> argv flags, in the recipe's order."""
    out: list[str] = []
    for key, value in args.items():
        flag = "--" + flag_name(key)
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, list):
            if value:
                out += [flag, *(_text(item) for item in value)]
        elif isinstance(value, Mapping):
            out += [flag, json.dumps(value)]
        else:
            out += [flag, _text(value)]
    return out


def arg(args: Mapping[str, Any], *names: str) -> Any:
    """The value of the first of `names` present in `args` (dash/underscore agnostic)."""
    normalised = {flag_name(key): value for key, value in args.items()}
    for name in names:
        if name in normalised:
            return normalised[name]
    return None


def parallelism(args: Mapping[str, Any]) -> dict[str, int]:
    """tp/dp/ep/pp sizes the args ask for (1 when unset)."""
    sizes: dict[str, int] = {}
    for short, names in PARALLEL_FLAGS.items():
        value = arg(args, *names)
        sizes[short] = value if isinstance(value, int) and not isinstance(value, bool) else 1
    return sizes


def draft_model(args: Mapping[str, Any]) -> str | None:
    """The draft/speculative model the args name, if any."""
    value = arg(args, *DRAFT_FLAGS)
    return value if isinstance(value, str) and value else None


def served_model_name(args: Mapping[str, Any]) -> str | None:
    value = arg(args, "served-model-name")
    return str(value) if value is not None else None


def worker_args(
    args: Mapping[str, Any],
    *,
    disaggregation_mode: str | None,
    served_name: str,
    multi_node: bool,
    ib_devices: list[str] | None = None,
) -> list[str]:
    """The full flag list of one worker: recipe flags, then the ones the plan owns.

    `ib_devices` (the cluster's RDMA devices) become `--disaggregation-ib-device` for
    disaggregated workers unless the recipe names devices itself: the KV transfer
    backend (MoRI, Mooncake, NIXL) reads them from there, not from NCCL's variables.
    """
    kept: dict[str, Any] = {}
    for key, value in args.items():
        name = flag_name(key)
        if name in PLACEMENT_FLAGS:
            continue
        if name in DRAFT_FLAGS and isinstance(value, str) and is_repo_id(value):
            value = "${model.draft}"
        kept[name] = value
    if disaggregation_mode is not None:
        kept["disaggregation-mode"] = disaggregation_mode
    kept.setdefault("served-model-name", served_name)
    if ib_devices and disaggregation_mode is not None:
        kept.setdefault("disaggregation-ib-device", ",".join(ib_devices))
    argv = ["--model-path", "${model.path}", *render_args(kept)]
    argv += ["--host", "0.0.0.0", "--port", "${self.http_port}"]
    if disaggregation_mode == "prefill":
        argv += ["--disaggregation-bootstrap-port", "${self.bootstrap_port}"]
    if multi_node:
        argv += [
            "--dist-init-addr",
            "${self.addr}",
            "--nnodes",
            "${self.nnodes}",
            "--node-rank",
            "${self.node_rank}",
        ]
    return argv


def launch_prefix(engine: str) -> list[str]:
    """The program part of a worker's argv: real SGLang, or the simulated engine."""
    if engine == "sim":
        return ["${run.python}", "-m", "disagg", "sim-engine"]
    return ["python3", "-m", SGLANG_MODULE]
