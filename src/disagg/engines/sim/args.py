"""Command-line flags of the simulated engine: SGLang's `launch_server` flags plus `--sim-*`.

The plan renders the same argv for a real SGLang worker and for the simulated one, so
this parser accepts SGLang's flag names and ignores (with a debug log) any flag it
does not model. Only the flags that shape the timing or the HTTP surface are read.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from disagg.engines import sglang
from disagg.errors import DisaggError
from disagg.predict import target as predict_target
from disagg.predict.target import PredictTarget

Mode = Literal["prefill", "decode", "aggregated"]


@dataclass(frozen=True)
class SimConstants:
    """Model constants (the `--sim-*` flags). Defaults give realistic shapes, fast runs."""

    # A mid-size model on one GPU: a 1024-token prompt prefills in ~50 ms, a decode step
    # takes 10 ms at batch 1 (100 tokens/s per user) and ~20 ms at batch 64; tensor
    # parallelism divides both. Steps stay well above the event loop's timer resolution,
    # so every token leaves the server at its own time (real ITLs, no bursts).
    prefill_us_per_token: float = 50.0  # one GPU
    prefill_base_ms: float = 2.0  # fixed cost of one prefill forward pass
    decode_base_ms: float = 10.0  # one decode step at batch 1 (reading the weights)
    decode_ms_per_seq: float = 0.15  # extra step time per running sequence
    decode_us_per_kv_token: float = 0.005  # extra step time per cached token in the batch
    kv_transfer_us_per_token: float = 1.0  # PD hand-over, serialised per prefill worker
    tp_efficiency: float = 0.85  # speed-up of tensor parallel size N is N**efficiency
    eager_penalty: float = 1.25  # decode batches above the largest CUDA graph run slower
    draft_step_cost: float = 0.15  # each speculative draft step adds this share of a step
    accept_rate: float = 0.7  # chance each draft token is accepted (chain stops at a reject)
    handover_timeout_s: float = 60.0  # decode waits this long for the room's KV
    # With N streams each gets a chunk at most every N x this (first and last tokens at
    # once), so sending chunks never takes over the event loop.
    stream_budget_us: float = 500.0
    default_max_tokens: int = 16  # OpenAI's default for /v1/completions
    seed: int = 0


@dataclass(frozen=True)
class EngineArgs:
    """What the simulated worker needs from its command line."""

    host: str = "127.0.0.1"
    port: int = 30000
    model_path: str = "sim-model"
    served_model_name: str | None = None
    tokenizer_path: str | None = None
    mode: Mode = "aggregated"
    bootstrap_port: int = 8998
    tp_size: int = 1
    dp_size: int = 1
    ep_size: int = 1
    pp_size: int = 1  # counted in `gpus`; the timing model treats stages as one pipeline
    enable_dp_attention: bool = False
    max_running_requests: int | None = None
    chunked_prefill_size: int = 8192
    max_prefill_tokens: int = 16384
    cuda_graph_max_bs: int | None = None
    cuda_graph_bs: tuple[int, ...] = ()
    speculative_algorithm: str | None = None
    speculative_num_steps: int = 0
    speculative_num_draft_tokens: int = 0
    speculative_eagle_topk: int = 1
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: str | None = None
    stream_interval: int = 1
    context_length: int = 131072
    log_level: str = "info"
    sim: SimConstants = field(default_factory=SimConstants)
    # Set: each step is timed by AIConfigurator's performance model for this target.
    predict: PredictTarget | None = None
    ignored: tuple[str, ...] = ()

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model_path

    @property
    def gpus(self) -> int:
        """GPUs this worker stands for: DP attention splits a TP group, plain DP replicates it."""
        replicas = 1 if self.enable_dp_attention else self.dp_size
        return self.tp_size * self.pp_size * replicas

    @property
    def running_limit(self) -> int:
        """SGLang sizes the batch from memory when unset; 1024 is a typical large-GPU value."""
        return self.max_running_requests or 1024

    @property
    def speculative(self) -> bool:
        return bool(self.speculative_algorithm) and self.speculative_num_steps > 0


_SIM_HELP = {
    "prefill_us_per_token": "prefill cost per prompt token on one GPU, microseconds",
    "prefill_base_ms": "fixed cost of one prefill pass, ms",
    "decode_base_ms": "decode step time at batch 1 (weights read), ms",
    "decode_ms_per_seq": "extra decode step time per running sequence, ms",
    "decode_us_per_kv_token": "extra decode step time per cached token in the batch, us",
    "kv_transfer_us_per_token": "PD hand-over time per prompt token (one link per prefill), us",
    "tp_efficiency": "tensor parallel size N speeds compute by N**this",
    "eager_penalty": "slow-down of decode batches above the largest CUDA graph",
    "draft_step_cost": "extra share of a decode step per speculative draft step",
    "accept_rate": "probability each speculative draft token is accepted",
    "handover_timeout_s": "how long a decode worker waits for a room's KV, s",
    "stream_budget_us": "wall time per running stream between two chunks of a stream, us",
    "default_max_tokens": "max_tokens when a request sets none",
    "seed": "seed of the pseudo-random EOS and speculative acceptance",
}


def _mode(value: str) -> Mode:
    value = value.lower()
    if value in ("null", "none", "aggregated", ""):
        return "aggregated"
    if value in ("prefill", "decode"):
        return value  # type: ignore[return-value]
    raise argparse.ArgumentTypeError(f"expected prefill, decode or null, got {value!r}")


def _spellings(setting: str) -> list[str]:
    """SGLang's flags for one setting, longest first (the engine adapter's flag table)."""
    return ["--" + name for name in sglang.FLAGS.names(setting)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="disagg sim-engine",
        description=(
            "Simulated SGLang worker: takes `python -m sglang.launch_server` flags "
            "(unknown ones are ignored) plus --sim-* model constants."
        ),
    )
    add = parser.add_argument
    add("--host", default="127.0.0.1")
    add("--port", type=int, default=30000)
    add("--model-path", "--model", default="sim-model")
    add("--served-model-name", default=None)
    add("--tokenizer-path", default=None)
    add("--disaggregation-mode", "--mode", dest="mode", type=_mode, default="aggregated")
    add("--disaggregation-bootstrap-port", dest="bootstrap_port", type=int, default=8998)
    for setting in ("tp", "dp", "ep", "pp"):  # every spelling SGLang accepts
        add(*_spellings(setting), dest=f"{setting}_size", type=int, default=1)
    add(*_spellings("dp_attention"), dest="enable_dp_attention", action="store_true")
    add(*_spellings("max_running_requests"), dest="max_running_requests", type=int)
    add(*_spellings("chunk_size"), dest="chunked_prefill_size", type=int, default=8192)
    add(*_spellings("max_prefill_tokens"), dest="max_prefill_tokens", type=int, default=16384)
    add(*_spellings("cuda_graph_max_bs"), dest="cuda_graph_max_bs", type=int, default=None)
    add("--cuda-graph-bs", type=int, nargs="+", default=[])
    add(*_spellings("speculative"), dest="speculative_algorithm", default=None)
    add(*_spellings("speculative_steps"), dest="speculative_num_steps", type=int, default=None)
    add("--speculative-num-draft-tokens", type=int, default=None)
    add("--speculative-eagle-topk", type=int, default=1)
    add("--nnodes", type=int, default=1)
    add("--node-rank", type=int, default=0)
    add("--dist-init-addr", default=None)
    add("--stream-interval", type=int, default=1)
    add(*_spellings("context_length"), dest="context_length", type=int, default=131072)
    add("--log-level", default="info", choices=["debug", "info", "warning", "error", "critical"])
    predict_target.add_arguments(parser)
    sim = parser.add_argument_group("simulation constants (defaults in brackets)")
    defaults = SimConstants()
    for name, value in vars(defaults).items():
        flag = "--sim-" + name.replace("_", "-")
        sim.add_argument(
            flag,
            dest=f"sim_{name}",
            type=type(value),
            default=value,
            help=f"{_SIM_HELP[name]} [{value}]",
        )
    return parser


def parse_args(argv: Sequence[str]) -> EngineArgs:
    """Parse an SGLang-style argv; unknown flags end up in `ignored` (the caller logs them)."""
    parser = build_parser()
    ns, unknown = parser.parse_known_args(list(argv))
    values = vars(ns)
    sim = SimConstants(**{k[4:]: values.pop(k) for k in list(values) if k.startswith("sim_")})
    predict = predict_target.from_namespace(values)
    _check(values, sim)
    steps = values.pop("speculative_num_steps")
    drafts = values.pop("speculative_num_draft_tokens")
    if values["speculative_algorithm"]:
        steps = 3 if steps is None else steps
        drafts = steps + 1 if drafts is None else drafts
    values["cuda_graph_bs"] = tuple(values["cuda_graph_bs"])
    return EngineArgs(
        **values,
        speculative_num_steps=steps or 0,
        speculative_num_draft_tokens=drafts or 0,
        sim=sim,
        predict=predict,
        ignored=tuple(unknown),
    )


def _check(values: dict[str, object], sim: SimConstants) -> None:
    for name in ("tp_size", "dp_size", "ep_size", "pp_size", "nnodes", "stream_interval"):
        value = values[name]
        if not isinstance(value, int) or value < 1:
            raise DisaggError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    running = values["max_running_requests"]
    if running is not None and int(str(running)) < 1:
        raise DisaggError(f"--max-running-requests must be at least 1, got {running}")
    if not 0.0 <= sim.accept_rate <= 1.0:
        raise DisaggError(f"--sim-accept-rate must be within [0, 1], got {sim.accept_rate}")
    if sim.handover_timeout_s <= 0:
        raise DisaggError("--sim-handover-timeout-s must be positive")
