"""Series names people compare by: model · GPU · engine · topology · precision.

Built from a run's InferenceX setup fields, so runs are told apart by what differs, not
by a recipe file name; topology in InferenceX's words (`1P TP4 / 2D TP8·EP8·DPA`, `2× TP4`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.report.model import RunResults, short_model


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def pool(setup: Mapping[str, Any], side: str) -> str:
    """`TP8`, `TP8·EP8·DPA`: the parallel layout of one `side` (prefill, decode) worker."""
    parts = [f"TP{_int(setup.get(f'{side}_tp')) or 1}"]
    ep = _int(setup.get(f"{side}_ep"))
    if ep > 1:
        parts.append(f"EP{ep}")
    dp_attention = setup.get(f"{side}_dp_attention")
    if dp_attention is True or str(dp_attention).lower() == "true":
        parts.append("DPA")
    return "·".join(parts)


def topology(setup: Mapping[str, Any]) -> str:
    """Workers and their layout; empty when the run does not say."""
    if "prefill_num_workers" not in setup and "prefill_tp" not in setup:
        return ""
    disagg = setup.get("disagg")
    if disagg is None:
        disagg = _int(setup.get("decode_num_workers")) > 0
    prefill_workers = _int(setup.get("prefill_num_workers"))
    if disagg:
        decode = f"{_int(setup.get('decode_num_workers'))}D {pool(setup, 'decode')}"
        text = f"{prefill_workers}P {pool(setup, 'prefill')} / {decode}"
    else:
        text = f"{prefill_workers or 1}× {pool(setup, 'prefill')}"
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
    named = [part for part in parts if part]
    return " · ".join(named) if len(named) > 1 else (run.label or run.name)
