"""Dynamo's mocker as an engine (`backend.type: mocker`, schema 2 `engine: mocker`).

`python -m dynamo.mocker` (ai-dynamo 1.6.1) registers with Dynamo as a GPU worker would and
schedules with the timing model of the engine it emulates, on no GPU and with no HTTP API:
a mocker run is not simulated by disagg, the mocker is the engine the recipe asks for.
Flags are srt-slurm's engine-wide knobs, then the role's own settings over them; keys are
checked against the mocker's own flags, so a typo is refused at plan time.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, ClassVar

from disagg.engines.base import EngineAdapter, FlagTable, WorkerCommand, render_args
from disagg.engines.worker import Parallelism, WorkerSpec

MOCKER_MODULE = "dynamo.mocker"
ENGINE_TYPES = ("vllm", "sglang", "trtllm")
# The frontend that can front a mocker; "none": the recipe has no frontend section, and
# the default frontend is Dynamo's.
FRONTENDS = ("dynamo", "none")

FLAGS = FlagTable(
    {
        "dp": ("data-parallel-size",),
        "served_model_name": ("model-name",),
        "mode": ("disaggregation-mode",),
        "max_running_requests": ("max-num-seqs",),
        "chunk_size": ("max-num-batched-tokens",),
        "context_length": ("max-model-len",),
    }
)

# Engine-wide knobs -> the value srt-slurm passes when the recipe leaves one unset
# (None: passed only when set).
KNOBS: dict[str, Any] = {
    "engine_type": "vllm",
    "speedup_ratio": 100.0,
    "data_parallel_size": 1,
    "num_gpu_blocks_override": 16384,
    "max_num_seqs": 256,
    "max_num_batched_tokens": 8192,
    "decode_speedup_ratio": None,
    "block_size": None,
    "num_workers": None,
    "startup_time": None,
    "kv_transfer_bandwidth": None,
    "kv_cache_dtype": None,
    "enable_prefix_caching": None,
    "enable_chunked_prefill": None,
    "preemption_mode": None,
}

# Every flag of `python -m dynamo.mocker` in ai-dynamo 1.6.1 (its `--help`), without dashes.
_FLAGS_HELP = """
model-path endpoint model-name num-gpu-blocks-override block-size max-model-len
max-num-seqs max-num-batched-tokens enable-prefix-caching no-enable-prefix-caching
enable-chunked-prefill no-enable-chunked-prefill preemption-mode speedup-ratio
decode-speedup-ratio data-parallel-size startup-time planner-profile-data ais-perf-model
aic-perf-model gpu-memory-utilization mem-fraction-static free-gpu-memory-fraction
ais-system ais-backend ais-backend-version ais-tp-size ais-moe-tp-size ais-moe-ep-size
ais-attention-dp-size ais-nextn ais-nextn-accept-rates ais-mtp-seed num-workers
ais-perf-config reasoning response-replay-trace-path engine-type sglang-schedule-policy
sglang-page-size sglang-max-prefill-tokens sglang-chunked-prefill-size
sglang-clip-max-new-tokens sglang-schedule-conservativeness sglang-generate
trtllm-capacity-scheduler-policy extra-engine-args disaggregation-mode is-prefill-worker
is-decode-worker zmq-kv-events-ports zmq-replay-ports bootstrap-ports
kv-transfer-bandwidth kv-transfer-timing-mode kv-cache-dtype kv-bytes-per-token
num-host-blocks host-offload-d2h-bandwidth-gbps host-offload-h2d-bandwidth-gbps
stagger-delay discovery-backend request-plane response-plane event-plane router-mode
router-session-affinity-ttl-secs router-session-affinity-mode
active-decode-blocks-threshold active-prefill-tokens-threshold
active-prefill-tokens-threshold-frac load-aware no-load-aware
router-kv-overlap-score-credit router-kv-overlap-score-credit-decay
router-prefill-load-scale router-decode-active-request-weight
router-host-cache-hit-weight router-disk-cache-hit-weight router-temperature
router-kv-events no-router-kv-events kv-events no-kv-events router-replica-sync
no-router-replica-sync router-track-active-blocks no-router-track-active-blocks
track-active-blocks no-track-active-blocks router-track-output-blocks
no-router-track-output-blocks track-output-blocks no-track-output-blocks
router-assume-kv-reuse no-router-assume-kv-reuse assume-kv-reuse no-assume-kv-reuse
router-track-prefill-tokens no-router-track-prefill-tokens router-tracking-hash
router-tracking-key-file router-tracking-key-id router-prefill-load-model router-ttl-secs
router-approximate-cache-policy router-queue-threshold router-policy-config
router-conditional-disagg no-router-conditional-disagg router-conditional-disagg-config
router-prefill-policy router-decode-policy router-event-threads router-queue-policy
use-remote-indexer no-use-remote-indexer enable-session-prefix-index
no-enable-session-prefix-index shared-cache-multiplier shared-cache-type
router-predicted-ttl-secs version
aic-attention-dp-size aic-backend aic-backend-version aic-moe-ep-size aic-moe-tp-size
aic-mtp-seed aic-nextn aic-nextn-accept-rates aic-system aic-tp-size
"""
MOCKER_FLAGS = frozenset(_FLAGS_HELP.split())
# Set by the plan: the staged model, the worker's endpoint, ports and Dynamo's planes
# (the frontend adapter picks discovery and the request plane for every Dynamo process).
PLAN_FLAGS = frozenset(
    {
        "model-path",
        "endpoint",
        "bootstrap-ports",
        "zmq-kv-events-ports",
        "zmq-replay-ports",
        "discovery-backend",
        "request-plane",
        "response-plane",
        "event-plane",
    }
)
_AIS = "needs AISimulate's performance model, which this environment does not install"
# Mocker flags a plan cannot run as written, each with why.
REFUSED: dict[str, str] = {
    "is-prefill-worker": "deprecated; the plan sets --disaggregation-mode from the role",
    "is-decode-worker": "deprecated; the plan sets --disaggregation-mode from the role",
    "version": "prints the version and exits",
    **{flag: _AIS for flag in MOCKER_FLAGS if flag.startswith(("ais-", "aic-"))},
    "gpu-memory-utilization": _AIS,
    "mem-fraction-static": _AIS,
    "free-gpu-memory-fraction": _AIS,
}


def settings(
    backend: Mapping[str, Any], args: Mapping[str, Any], *, srt_slurm_defaults: bool
) -> dict[str, Any]:
    """Flag name -> value: the engine-wide knobs `backend` sets (with srt-slurm's values
    for the unset core ones, if asked), then the role's own settings over them, less the
    flags the plan sets."""
    merged: dict[str, Any] = {}
    for knob, default in KNOBS.items():
        value = backend.get(knob)
        value = default if value is None and srt_slurm_defaults else value
        if value is not None:
            merged[knob.replace("_", "-")] = value
    for key, value in args.items():
        name = FLAGS.normalise(key)
        if name not in PLAN_FLAGS and name not in FLAGS.names("mode"):
            merged[name] = value
    return merged


def render(merged: Mapping[str, Any]) -> list[str]:
    """Settings as flags; `false` is the mocker's `--no-<flag>` where it has one."""
    out: list[str] = []
    for name, value in merged.items():
        if value is False:
            if f"no-{name}" in MOCKER_FLAGS:
                out.append(f"--no-{name}")
            continue
        out += render_args({name: value})
    return out


def _unknown(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(MOCKER_FLAGS), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"not a flag of dynamo.mocker (ai-dynamo 1.6.1){hint}"


class Mocker(EngineAdapter):
    """`python -m dynamo.mocker` workers from this environment's ai-dynamo."""

    name: ClassVar[str] = "mocker"
    flags: ClassVar[FlagTable] = FLAGS
    placement_keys: ClassVar[frozenset[str]] = PLAN_FLAGS
    honoured_keys: ClassVar[frozenset[str]] = frozenset()
    backend_fields: ClassVar[frozenset[str]] = frozenset(KNOBS)
    uses_gpus: ClassVar[bool] = False
    in_image: ClassVar[bool] = False
    placement_reason: ClassVar[str] = (
        "set by the plan (the staged model, ports and Dynamo's discovery)"
    )

    def parallelism(self, args: Mapping[str, Any]) -> Parallelism:
        # Data-parallel ranks are emulated in one process on no GPU.
        return Parallelism(dp=FLAGS.size(args, "dp"), replicas_use_gpus=False)

    def emulates(self, backend: Mapping[str, Any]) -> str | None:
        return str(backend.get("engine_type") or KNOBS["engine_type"])

    def unsupported(self, args: Mapping[str, Any], spec: WorkerSpec) -> tuple[str, str] | None:
        if spec.simulated:
            return "engine", (
                "backend.engine sim with backend type mocker (the mocker needs no GPU and "
                "runs here as it is: remove backend.engine)"
            )
        section = f"backend.{self.config_section}.{spec.role}"
        if spec.frontend not in FRONTENDS:
            return "type", (
                f"backend type mocker behind frontend {spec.frontend} (the mocker has no HTTP "
                "API; only Dynamo's frontend fronts it: frontend.type dynamo)"
            )
        engine_type = spec.backend.get("engine_type")
        if engine_type is not None and engine_type not in ENGINE_TYPES:
            return "engine_type", (
                f"backend.engine_type {engine_type} (the mocker emulates {', '.join(ENGINE_TYPES)})"
            )
        for key in args:
            name = FLAGS.normalise(key)
            if name not in MOCKER_FLAGS:
                return str(key), f"{section}.{key} ({_unknown(name)})"
            if name in REFUSED:
                return str(key), f"{section}.{key} ({REFUSED[name]})"
        return None

    def engine_flags(self, args: Mapping[str, Any], spec: WorkerSpec) -> list[str]:
        merged = settings(spec.backend, args, srt_slurm_defaults=True)
        flags = ["--model-name", str(merged.pop("model-name", spec.served_name))]
        if spec.mode is not None:
            flags += ["--disaggregation-mode", spec.mode]
        if spec.mode == "prefill":
            flags += ["--bootstrap-ports", "${self.bootstrap_port}"]
        return flags + render(merged)

    def worker(self, args: Mapping[str, Any], spec: WorkerSpec) -> WorkerCommand:
        argv = ["${run.python}", "-m", MOCKER_MODULE, "--model-path", "${model.path}"]
        ports = ["http", "bootstrap"] if spec.mode == "prefill" else ["http"]
        return WorkerCommand(argv=argv + self.engine_flags(args, spec), ports=ports)


ADAPTER = Mocker()
