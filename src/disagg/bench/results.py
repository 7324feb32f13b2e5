"""Per-point result files: the JSON downstream tools read, the JSONL of requests, the gate.

The JSON keeps vLLM's benchmark field names, adds the InferenceX fields and
disagg's own (`valid`, `invalid_reason`, `simulated`, `point`, ...). docs/results.md
is the reference. Both files are written atomically, the JSONL first, so a result
JSON on disk always has its records beside it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from disagg.atomic import write_json, write_text
from disagg.bench.fingerprint import FINGERPRINT_KEYS, mismatch
from disagg.bench.gate import (
    count_problem,
    is_number,
    numbers_problem,
    strict_json_value,
    verdict,
)
from disagg.bench.identity import SETUP_FIELDS
from disagg.bench.inferencex import intvty_fields, per_gpu_fields
from disagg.bench.records import RequestRecord
from disagg.plan.model import BenchPlan, PointPlan
from disagg.probe import MAX_RESULT_BYTES, read_limited

RESULT_VERSION = 1
DEFAULT_MAX_FAILURE_RATIO = 0.01  # a run without a plan: the recipe default
PROFILE_POSTS = "profile_posts"  # the profile start POSTs a point was measured under
LENGTH_TOLERANCE = 0.10  # with ignore_eos, output within 10% (or 1 token) of the request


@dataclass(frozen=True)
class PointContext:
    """Who measured what: labels that go into the file name and the JSON."""

    run_name: str
    point: PointPlan
    prefill_gpus: int
    decode_gpus: int
    disaggregated: bool
    simulated: bool
    # hardware, framework, precision, parallelism...: `disagg.bench.identity.setup_fields`
    setup: Mapping[str, Any] = field(default_factory=dict)

    @property
    def total_gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "bench"


def result_stem(ctx: PointContext) -> str:
    """`{run}[_rate{R}]_conc{C|inf}` + `_gpus_{N}_ctx_{P}_gen_{D}` (disaggregated),
    `_gpus_{N}_agg` (aggregated), or nothing more when the GPU count is unknown (0)."""
    point = ctx.point
    stem = _safe(ctx.run_name)
    if point.request_rate is not None:
        stem += f"_rate{point.request_rate:g}"
    stem += f"_conc{point.concurrency}" if point.concurrency else "_concinf"
    if ctx.total_gpus > 0:
        if ctx.disaggregated:
            stem += f"_gpus_{ctx.total_gpus}_ctx_{ctx.prefill_gpus}_gen_{ctx.decode_gpus}"
        else:
            stem += f"_gpus_{ctx.total_gpus}_agg"
    return stem


def judge(
    metrics: dict[str, Any],
    records: Sequence[RequestRecord],
    bench: BenchPlan,
    stopped_reason: str | None = None,
) -> str | None:
    """Why the point is invalid, or None when it is a result people may trust."""
    first_error = next((r.error for r in records if r.error), None)
    if stopped_reason:
        return stopped_reason
    reason = count_problem(
        total=len(records),
        completed=int(metrics["completed"]),
        failed=int(metrics["failed"]),
        output_tokens=int(metrics["total_output_tokens"]),
        max_failure_ratio=bench.max_failure_ratio,
        first_error=first_error,
    )
    if reason is not None:
        return reason
    problem = numbers_problem(metrics)
    if problem is not None:
        return problem
    if bench.ignore_eos:
        exact = [r for r in records if r.success and r.output_source in ("usage", "tokenizer")]
        off = [
            r
            for r in exact
            if abs(r.output_len - r.requested_output_len)
            > max(1.0, LENGTH_TOLERANCE * r.requested_output_len)
        ]
        if exact and len(off) / len(exact) > bench.max_failure_ratio:
            r = off[0]
            return (
                f"{len(off)} of {len(exact)} requests returned output lengths far from the "
                f"requested length (e.g. {r.output_len} tokens for {r.requested_output_len}); "
                "the server may not honour ignore_eos"
            )
    return None


def output_source(records: Sequence[RequestRecord]) -> str:
    sources = {r.output_source for r in records if r.success}
    if not sources:
        return "none"
    return sources.pop() if len(sources) == 1 else "mixed"


def build_result(
    *,
    metrics: dict[str, Any],
    records: Sequence[RequestRecord],
    ctx: PointContext,
    bench: BenchPlan,
    invalid_reason: str | None,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """The per-point JSON object, in a stable field order."""
    point = ctx.point
    source = output_source(records)
    result: dict[str, Any] = {
        "date": datetime.now().strftime("%Y%m%d-%H%M%S"),
        "backend": "openai-chat" if bench.endpoint == "chat" else "openai",
        "endpoint_type": "openai-chat" if bench.endpoint == "chat" else "openai",
        "model_id": bench.model_name,
        "tokenizer_id": bench.tokenizer or bench.model_name,
        "num_prompts": point.num_prompts,
        "request_rate": point.request_rate if point.request_rate is not None else "inf",
        "burstiness": bench.burstiness,
        "max_concurrency": point.concurrency,
    }
    result.update(metrics)
    # InferenceX's load, GPU and per-GPU fields; `*_intvty` = 1000 / tpot_ms
    result.update({"conc": point.concurrency, "isl": bench.isl, "osl": bench.osl})
    result.update(per_gpu_fields(metrics, ctx.prefill_gpus, ctx.decode_gpus, ctx.disaggregated))
    result.update(intvty_fields(metrics))
    result.update({name: ctx.setup.get(name) for name in SETUP_FIELDS})
    # what the numbers were measured under, for resume (`disagg.bench.fingerprint`), and
    # the profile start POSTs made before the sweep (`disagg.workloads.profiling`)
    recorded = (*FINGERPRINT_KEYS, PROFILE_POSTS)
    result.update({name: ctx.setup[name] for name in recorded if name in ctx.setup})
    result.update(
        {
            "result_version": RESULT_VERSION,
            "run_name": ctx.run_name,
            "point": point.key,
            "valid": invalid_reason is None,
            "invalid_reason": invalid_reason,
            "simulated": ctx.simulated,
            "endpoint": bench.endpoint,
            "arrival": bench.arrival if point.request_rate is not None else None,
            "random_range_ratio": bench.random_range_ratio,
            "ignore_eos": bench.ignore_eos,
            "warmup_requests": point.warmup_requests,
            "slo": dict(bench.slo),
            "max_failure_ratio": bench.max_failure_ratio,
            "output_tokens_source": source,
            "output_tokens_approximate": source in ("chunks", "mixed"),
        }
    )
    result.update(extra)
    result["input_lens"] = [r.input_len for r in records]
    result["output_lens"] = [r.output_len for r in records]
    result["ttfts"] = [round(r.ttft, 6) if r.success else 0.0 for r in records]
    result["itls"] = [[round(x, 6) for x in r.itls] for r in records]
    result["errors"] = [r.error or "" for r in records]
    return result


# Per-request lists: in the point JSON only with `save_detailed` (as vLLM does), since
# `itls` alone grows with prompts x output length (tens of MB per point at ISL/OSL 8k/1k);
# the `.jsonl` next to each point always has every request.
DETAILED_FIELDS = ("input_lens", "output_lens", "ttfts", "itls", "errors")


def error_counts(errors: Sequence[str]) -> dict[str, int]:
    """Distinct error messages (first 200 characters) and how often each occurred."""
    counts = Counter(error[:200] for error in errors if error)
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def write_point(
    out_dir: Path,
    stem: str,
    result: dict[str, Any],
    records: Sequence[RequestRecord],
    origin: float,
    *,
    detailed: bool = False,
) -> Path:
    """Write `{stem}.jsonl` (one request a line) then `{stem}.json`; return the JSON path."""
    lines = "".join(json.dumps(r.to_json(origin), separators=(",", ":")) + "\n" for r in records)
    write_text(out_dir / f"{stem}.jsonl", lines)
    path = out_dir / f"{stem}.json"
    written = dict(result)
    written["error_counts"] = error_counts(result.get("errors", []))
    if not detailed:
        for name in DETAILED_FIELDS:
            written.pop(name, None)
    write_json(path, strict_json_value(written))  # a NaN never reaches the file
    return path


def read_object(path: Path, what: str) -> dict[str, Any] | None:
    """The JSON object in a file, else None (unreadable, or another JSON value)."""
    try:  # bounded: a FIFO, a device or a huge file is unreadable, not awaited
        data = json.loads(read_limited(path, what=what, limit=MAX_RESULT_BYTES))
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def read_result(path: Path) -> dict[str, Any] | None:
    """A result JSON, or None if unreadable or not a disagg result."""
    data = read_object(path, "result")
    if data is None or "point" not in data or "valid" not in data:
        return None
    return data


def reusable_result(
    out_dir: Path, point: PointPlan, expected: Mapping[str, Any]
) -> tuple[Path | None, list[str]]:
    """The newest valid result of this point measured under `expected` (its fingerprint
    fields), else None and why the newest valid one of another plan does not count."""
    candidates = sorted(_valid_for(out_dir, point), key=lambda p: p.stat().st_mtime)
    why: list[str] = []
    for path in reversed(candidates):
        data = read_result(path) or {}
        differs = mismatch(data, expected)
        if not differs:
            return path, []
        why = why or differs
    return None, why


def existing_valid_result(out_dir: Path, point: PointPlan) -> Path | None:
    """The newest valid result for this point (same key and prompt count), if any."""
    found = _valid_for(out_dir, point)
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _valid_for(out_dir: Path, point: PointPlan) -> list[Path]:
    if not out_dir.is_dir():
        return []
    marker = f"_conc{point.concurrency}" if point.concurrency else "_concinf"
    found: list[Path] = []
    for path in out_dir.glob("*.json"):
        if marker not in path.name:
            continue
        data = read_result(path)
        if (
            data is not None
            and data.get("valid") is True
            and data.get("point") == point.key
            and data.get("num_prompts") == point.num_prompts
            and verdict(data, _failure_ratio(data)) is None
        ):
            found.append(path)
    return found


def _failure_ratio(data: Mapping[str, Any]) -> float:
    """The failure share a disagg result was judged under (it records its own)."""
    ratio = data.get("max_failure_ratio")
    if is_number(ratio) and 0 <= ratio <= 1:
        return float(ratio)
    return DEFAULT_MAX_FAILURE_RATIO


def judged(data: Mapping[str, Any], max_failure_ratio: float | None = None) -> str | None:
    """`disagg.bench.gate.verdict` under the run's failure share, or the file's own."""
    ratio = _failure_ratio(data) if max_failure_ratio is None else max_failure_ratio
    return verdict(data, ratio)
