"""What one predicted worker is: the performance model's inputs, as flags on its command line.

The plan works this out from the recipe (`mapping`); the worker reads it back from its
argv (`--predict-*`), so a run directory's plan.json shows exactly what was modelled.
Speculative decoding's acceptance comes from a rate given on the command line or from a
model family's published mean accepted length.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import asdict, dataclass, fields
from typing import Any

from disagg.predict import PACKAGE, VERSION

# AIConfigurator's per-phase latency corrections for disaggregated estimates (its CLI
# applies the same factors to the prefill and decode workers' static estimates).
PREFILL_CORRECTION = 1.1
DECODE_CORRECTION = 1.08

# Published mean accepted length (tokens a decode step emits, the verified one included)
# with 1, 2, 3, ... draft tokens, by model family. A deeper chain than published is taken
# to accept no more than the deepest published one.
PUBLISHED_ACCEPTANCE = {
    "deepseek": (
        (1.92, 2.58, 2.82, 2.99, 3.01),
        "TensorRT-LLM's DeepSeek-R1 B200 min-latency blog (blog1, 'Autoregressive MTP "
        "Layers'): 1.92, 2.58, 2.82, 2.99, 3.01 tokens per step with 1-5 MTP layers",
    ),
}


@dataclass(frozen=True)
class Acceptance:
    """How many draft tokens a step keeps: one chance per draft token (a chain: draft k
    counts only when drafts 1..k-1 did), constant or per position."""

    rate: float | None  # the same chance for every draft (given on the command line)
    rates: tuple[float, ...]  # per draft position (from a published accepted length)
    source: str


def chain_rates(lengths: tuple[float, ...], nextn: int) -> tuple[float, ...]:
    """Per-draft chances whose chain gives the published mean accepted length at every
    depth up to `nextn` (chance that drafts 1..k all hold = length(k) - length(k-1))."""
    held = [1.0] + [max(0.0, b - a) for a, b in itertools.pairwise((1.0, *lengths))]
    held += [0.0] * max(0, nextn + 1 - len(held))
    return tuple(
        min(1.0, held[k] / held[k - 1]) if held[k - 1] > 0 else 0.0 for k in range(1, nextn + 1)
    )


def published_acceptance(model: str, nextn: int) -> Acceptance | None:
    """The acceptance `model`'s family published, per draft position up to `nextn`."""
    lowered = model.lower()
    for family, (lengths, source) in PUBLISHED_ACCEPTANCE.items():
        if family in lowered:
            return Acceptance(None, chain_rates(lengths, nextn), source)
    return None


@dataclass(frozen=True)
class PredictTarget:
    """One worker's model inputs (per engine replica; `replicas` of them share the batch)."""

    model: str  # a shipped config's name (org/name) or a local checkpoint directory
    system: str  # AIConfigurator's system: h200_sxm, b200_sxm, gb200, ...
    backend: str  # sglang, trtllm, vllm
    version: str  # the perf database version: 0.5.14, 1.3.0rc20, ...
    tp: int = 1  # attention tensor parallel size
    pp: int = 1
    attention_dp: int = 1
    moe_tp: int = 1
    moe_ep: int = 1
    replicas: int = 1  # plain data-parallel engine copies inside one worker
    gemm: str = "bfloat16"
    moe: str = "bfloat16"
    kvcache: str = "bfloat16"
    fmha: str = "bfloat16"  # decode attention; context attention is resolved by the data
    nextn: int = 0  # draft depth (MTP / EAGLE steps)
    accept_rate: float = 0.0  # chance each draft token is accepted (chain), when constant
    accept_rates: str = ""  # else the chance per draft position, comma-separated
    accept_source: str = ""  # where the acceptance came from, stated in the result
    link_bytes_per_s: float = 50e9  # per GPU, the KV hand-over link of the GPU system
    mem_fraction: float = 0.85  # share of GPU memory (sglang/vllm: of total, trtllm: of free)
    gpus: int = 1  # GPUs of one replica
    time_scale: float = 1.0  # the engine runs this many times faster than modelled
    step_host_ms: float = 0.0  # the engine's host time per iteration that the GPU waits for
    request_host_ms: float = 0.0  # its API server's host time per request, one after another

    def label(self) -> str:
        """`predicted (aiconfigurator-core 0.12.0, h200_sxm, sglang 0.5.14 database)`."""
        database = f"{self.backend} {self.version} database"
        return f"predicted ({PACKAGE} {VERSION}, {self.system}, {database})"

    def layout(self, fmha: str) -> dict[str, Any]:
        """The parallel sizes and quantisation modes, as AIConfigurator's engine, memory
        and model-config builders all name them, with `fmha` for the attention."""
        return {
            "tp_size": self.tp,
            "pp_size": self.pp,
            "attention_dp_size": self.attention_dp,
            "moe_tp_size": self.moe_tp,
            "moe_ep_size": self.moe_ep,
            "gemm_quant_mode": self.gemm,
            "moe_quant_mode": self.moe,
            "kvcache_quant_mode": self.kvcache,
            "fmha_quant_mode": fmha,
        }

    def argv(self) -> list[str]:
        out: list[str] = []
        for f in fields(self):
            out += ["--predict-" + f.name.replace("_", "-"), str(getattr(self, f.name))]
        return out

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def draft_rates(self) -> tuple[float, ...]:
        """The chance that draft k is accepted given drafts 1..k-1 were, k = 1..nextn."""
        if self.accept_rates:
            return tuple(float(r) for r in self.accept_rates.split(","))[: self.nextn]
        return (self.accept_rate,) * self.nextn

    def tokens_per_step(self) -> float:
        """Mean tokens one decode step emits: the verified token and the accepted drafts."""
        total, held = 1.0, 1.0
        for rate in self.draft_rates():
            held *= rate
            total += held
        return total

    def summary(self) -> dict[str, Any]:
        """What plan.json's `predicted` records: the label and the assumptions."""
        constant = self.nextn and not self.accept_rates
        return {
            "label": self.label(),
            "accept_rate": self.accept_rate if constant else None,
            "tokens_per_step": round(self.tokens_per_step(), 3) if self.nextn else None,
            "accept_source": self.accept_source or None,
            "time_scale": self.time_scale,
        }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The worker's `--predict-*` flags; `--predict-model` switches predicted timing on."""
    group = parser.add_argument_group("predicted timing (AIConfigurator's performance model)")
    for f in fields(PredictTarget):
        kind: Any = {"int": int, "float": float}.get(str(f.type), str)
        group.add_argument(
            "--predict-" + f.name.replace("_", "-"), dest="predict_" + f.name, type=kind
        )


def from_namespace(values: dict[str, Any]) -> PredictTarget | None:
    """Pops the `predict_*` values; a target when `--predict-model` was given."""
    given = {k[8:]: values.pop(k) for k in list(values) if k.startswith("predict_")}
    if given.get("model") is None:
        return None
    return PredictTarget(**{k: v for k, v in given.items() if v is not None})


def compile_engine(target: PredictTarget, fmha: str) -> Any:
    """AIConfigurator's compiled engine for `target` with `fmha` attention (fused MoE)."""
    from aiconfigurator_core.sdk.engine import EngineHandle

    return EngineHandle.compile(
        target.model,
        target.system,
        target.backend,
        backend_version=target.version,
        **target.layout(fmha),
        nextn=target.nextn,
    )
