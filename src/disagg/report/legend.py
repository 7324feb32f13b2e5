"""Series names people compare by: model · GPU · engine · topology · precision.

Built from a run's InferenceX setup fields (`RunResults.setup`), so two runs that
differ in hardware, engine, parallelism or precision are told apart by what differs,
not by a recipe file name. Topology follows InferenceX's vocabulary: `TP8`, `EP8`,
`DPA` (attention data parallel) per pool; `1P TP4 / 2D TP8·EP8·DPA` for
prefill/decode, `2× TP4` for aggregated workers; speculative decoding is appended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.report.model import RunResults, short_model


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def pool(tp: Any, ep: Any, dp_attention: Any) -> str:
    """`TP8`, `TP8·EP8·DPA`: one worker's parallel layout."""
    parts = [f"TP{_int(tp) or 1}"]
    if _int(ep) > 1:
        parts.append(f"EP{_int(ep)}")
    if dp_attention is True or str(dp_attention).lower() == "true":
        parts.append("DPA")
    return "·".join(parts)


def topology(setup: Mapping[str, Any], *, disaggregated: bool | None = None) -> str:
    """Workers and their layout; empty when the run does not say."""
    if "prefill_num_workers" not in setup and "prefill_tp" not in setup:
        return ""
    disagg = setup.get("disagg", disaggregated)
    if disagg is None:
        disagg = _int(setup.get("decode_num_workers")) > 0
    prefill = pool(
        setup.get("prefill_tp"), setup.get("prefill_ep"), setup.get("prefill_dp_attention")
    )
    if disagg:
        decode = pool(
            setup.get("decode_tp"), setup.get("decode_ep"), setup.get("decode_dp_attention")
        )
        text = (
            f"{_int(setup.get('prefill_num_workers'))}P {prefill} / "
            f"{_int(setup.get('decode_num_workers'))}D {decode}"
        )
    else:
        text = f"{_int(setup.get('prefill_num_workers')) or 1}× {prefill}"
    spec = setup.get("spec_decoding")
    return f"{text} · {spec}" if isinstance(spec, str) and spec not in ("", "none") else text


def engine_name(setup: Mapping[str, Any]) -> str:
    framework = str(setup.get("framework") or "")
    engine = str(setup.get("engine") or "")
    if engine == "sim" and framework and framework != "sim":
        kind = "predicted" if setup.get("predicted") else "sim engine"
        return f"{framework} ({kind})"
    return framework or engine


def legend(run: RunResults, model: str | None) -> str:
    """`DeepSeek-R1 · H200 · sglang · 1P TP8 / 1D TP8·DPA · FP8`; the run label without fields."""
    setup = dict(run.setup)
    if run.points:
        setup.setdefault("disagg", run.points[0].decode_gpus > 0 and run.points[0].prefill_gpus > 0)
    hw = setup.get("hw")
    precision = setup.get("precision")
    parts = [
        short_model(model or setup.get("model")),
        str(hw).upper() if hw else "",
        engine_name(setup),
        topology(setup),
        str(precision).upper() if precision else "",
    ]
    text = " · ".join(part for part in parts if part)
    return text if len([p for p in parts if p]) > 1 else (run.label or run.name)
