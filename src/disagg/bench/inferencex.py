"""InferenceX's per-point row (`agg_*.json`), made from a disagg result file, and its schema.

InferenceX turns each result into one flat row: the setup, the per-GPU throughputs,
every `*_ms` latency in seconds under the name without `_ms`, and `{stat}_intvty` =
1000 / `{stat}_tpot_ms`. `InferenceXRow` is that row's schema; `ResultSetup` the part
every disagg result carries under the same names. A simulated result is never a
hardware number: `to_row` refuses it unless asked, and then marks it (`simulated:
true`, `hw` suffixed `-simulated`) so an aggregator ignoring unknown fields keeps it apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from disagg.bench.gate import is_number
from disagg.errors import DisaggError

SIMULATED_HW_SUFFIX = "-simulated"
PREDICTED_HW_SUFFIX = "-predicted"
TPOT_STATS = ("mean", "median", "p90", "p95", "p99")  # the TPOT statistics with an intvty


class _Open(BaseModel):
    """Other fields may follow; the listed ones must be there with these types."""

    model_config = ConfigDict(extra="allow", strict=True)


class ResultSetup(_Open):
    """InferenceX's identity and per-GPU fields as every disagg result file writes them."""

    hw: str | None
    framework: str
    precision: str | None
    image: str | None
    model: str
    spec_decoding: str
    disagg: bool
    is_multinode: bool
    isl: int
    osl: int
    conc: int | None
    prefill_tp: int
    prefill_ep: int
    prefill_dp_attention: bool
    prefill_num_workers: int
    decode_tp: int
    decode_ep: int
    decode_dp_attention: bool
    decode_num_workers: int
    num_prefill_gpu: int
    num_decode_gpu: int
    tput_per_gpu: float | None
    output_tput_per_gpu: float | None
    input_tput_per_gpu: float | None
    median_intvty: float | None
    router: str | None
    router_version: str | None
    recipe_fingerprint: str
    predicted: str | None  # the label of a predicted run (docs/predict.md)
    predicted_assumptions: str | None


class InferenceXRow(_Open):
    """One row as InferenceX's result processing writes it (`agg_<result>.json`)."""

    hw: str
    conc: int
    image: str | None
    model: str
    infmax_model_prefix: str | None
    framework: str
    precision: str
    spec_decoding: str
    disagg: bool
    isl: int
    osl: int
    is_multinode: bool
    num_prefill_gpu: int
    num_decode_gpu: int
    tput_per_gpu: float
    output_tput_per_gpu: float
    input_tput_per_gpu: float
    median_ttft: float
    p99_ttft: float
    median_tpot: float
    median_e2el: float
    median_intvty: float | None  # null when no request produced a second token (TPOT 0)
    # multi-node rows
    prefill_tp: int | None = None
    prefill_ep: int | None = None
    prefill_dp_attention: bool | None = None
    prefill_num_workers: int | None = None
    decode_tp: int | None = None
    decode_ep: int | None = None
    decode_dp_attention: bool | None = None
    decode_num_workers: int | None = None
    # single-node rows
    tp: int | None = None
    ep: int | None = None
    dp_attention: bool | None = None


def schema_problems(model: type[BaseModel], data: Mapping[str, Any]) -> list[str]:
    """Each field that is missing or of the wrong type, as `field: message`."""
    try:
        model.model_validate(dict(data))
    except ValidationError as exc:
        return [
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        ]
    return []


def intvty(tpot_ms: float) -> float | None:
    """1000 / TPOT in ms: tokens/s one user sees; None when TPOT gives no finite rate."""
    if not tpot_ms > 0:
        return None
    rate = 1000.0 / tpot_ms
    return rate if math.isfinite(rate) else None


def intvty_fields(data: Mapping[str, Any]) -> dict[str, float | None]:
    """`{stat}_intvty` for each TPOT statistic `data` holds as a number."""
    tpots = {stat: data.get(f"{stat}_tpot_ms") for stat in TPOT_STATS}
    return {f"{stat}_intvty": intvty(float(v)) for stat, v in tpots.items() if is_number(v)}


def per_gpu_fields(
    data: Mapping[str, Any], prefill: int, decode: int, disaggregated: bool
) -> dict[str, Any]:
    """The GPU counts and throughputs per GPU: total over all GPUs, output over decode GPUs,
    input over prefill GPUs (aggregated: each over all GPUs); None where `data` has no
    number or there are no GPUs."""
    gpus = prefill + decode
    out_gpus, in_gpus = (decode, prefill) if disaggregated else (gpus, gpus)
    total, output = (data.get(key) for key in ("total_token_throughput", "output_throughput"))
    total = float(total) if is_number(total) else None
    output = float(output) if is_number(output) else None
    inputs = total - output if total is not None and output is not None else None
    return {
        "num_prefill_gpu": prefill,
        "num_decode_gpu": decode,
        "num_gpus": gpus,
        "disagg": disaggregated,
        "tput_per_gpu": _per_gpu(total, gpus),
        "output_tput_per_gpu": _per_gpu(output, out_gpus),
        "input_tput_per_gpu": _per_gpu(inputs, in_gpus),
    }


def _per_gpu(value: float | None, gpus: int) -> float | None:
    return value / gpus if value is not None and gpus > 0 else None


def to_row(result: Mapping[str, Any], *, allow_simulated: bool = False) -> dict[str, Any]:
    """The InferenceX row of one valid disagg result; DisaggError when it cannot be one."""
    problems = schema_problems(ResultSetup, result)
    if problems:
        raise DisaggError(
            f"not an InferenceX-complete result ({'; '.join(problems[:3])})",
            hint="results written before these fields existed lack them: re-run the point",
        )
    simulated = bool(result.get("simulated"))
    if simulated and not allow_simulated:
        raise DisaggError(
            "a simulated result is not a hardware measurement",
            hint="pass --allow-simulated to collect it marked (`simulated: true`, hw *-simulated)",
        )
    multinode = bool(result["is_multinode"]) or bool(result["disagg"])
    hw = str(result["hw"] or "unknown")
    # a predicted result keeps its label in the row; any other simulated one is `-simulated`
    suffix = PREDICTED_HW_SUFFIX if result.get("predicted") else SIMULATED_HW_SUFFIX
    row: dict[str, Any] = {
        "hw": hw + suffix if simulated else hw,
        "conc": result["conc"] if result["conc"] is not None else 0,
        "image": result["image"],
        "model": result["model"],
        "infmax_model_prefix": result.get("infmax_model_prefix"),
        "framework": result["framework"],
        "precision": result["precision"] or "unknown",
        "spec_decoding": result["spec_decoding"],
        "disagg": bool(result["disagg"]),
        "isl": result["isl"],
        "osl": result["osl"],
        "is_multinode": multinode,
        "num_prefill_gpu": result["num_prefill_gpu"],
        "num_decode_gpu": result["num_decode_gpu"],
    }
    if multinode:
        for role in ("prefill", "decode"):
            for key in ("tp", "ep", "dp_attention", "num_workers"):
                row[f"{role}_{key}"] = result[f"{role}_{key}"]
    else:
        row |= {"tp": result["prefill_tp"], "ep": result["prefill_ep"]}
        row["dp_attention"] = result["prefill_dp_attention"]
    for key in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"):
        row[key] = float(result[key] or 0.0)
    for key, value in result.items():
        if key.endswith("_ms") and is_number(value):
            row[key.removesuffix("_ms")] = float(value) / 1000.0
    row |= dict.fromkeys((f"{stat}_intvty" for stat in TPOT_STATS), None) | intvty_fields(result)
    row |= {
        "router": result["router"],
        "router_version": result["router_version"],
        "recipe_fingerprint": result["recipe_fingerprint"],
        "simulated": simulated,
    }
    if result.get("predicted"):
        row["predicted"] = result["predicted"]
    return row
