"""`mooncake-router` / `trace-replay`: replay a timestamped trace with disagg's own generator.

The trace is Mooncake's JSONL: `timestamp` (ms), `input_length`, `output_length` and
`hash_ids` (one id per `block_tokens`-token block; requests sharing leading ids share
that prefix). Each request is sent at its timestamp on the sa-bench rate mode's
absolute schedule; `concurrencies` makes one replay per value, capped in flight.
A trace inside a container mount whose host side is not here is left to the job, as
srtctl leaves it: `resolve` reads it there before any role starts.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from disagg.errors import DisaggError, SourceLocation, UnsupportedRecipe
from disagg.plan.model import BenchPlan, PointPlan, TracePlan
from disagg.workloads.base import BenchInputs, BenchmarkAdapter
from disagg.workloads.sabench import concurrencies, slo

if TYPE_CHECKING:
    from disagg.bench.prompts import PromptFactory
    from disagg.bench.records import RequestSpec
    from disagg.bench.runner import PointRequests

MAX_TRACE_BYTES = 256 * 1024 * 1024
MAX_RECORDS = 1_000_000
MAX_TOKENS = 1_048_576  # one request's input or output length
TRACE_SEED = 7_919


@dataclass(frozen=True)
class TraceRecord:
    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


def _bad(path: Path, line: int, message: str) -> DisaggError:
    return DisaggError(
        message,
        location=SourceLocation(str(path), line, 1),
        hint='each line is {"timestamp": MS, "input_length": N, "output_length": N, '
        '"hash_ids": [ids]}',
    )


def _count(path: Path, line: int, item: dict[str, Any], key: str) -> int:
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        raise _bad(path, line, f"{key} must be an integer in 1..{MAX_TOKENS}, got {value!r}")
    return value


def read_trace(path: Path) -> list[TraceRecord]:
    """Every record of a trace file, in file order; a bad line is an error naming it."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DisaggError(
            f"trace file {path}: {exc.strerror or exc}", hint="check benchmark.trace_file"
        ) from None
    if not path.is_file() or size > MAX_TRACE_BYTES:
        raise DisaggError(f"trace file {path}: not a regular file of at most 256 MiB")
    records: list[TraceRecord] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            if len(records) >= MAX_RECORDS:
                raise _bad(path, number, f"more than {MAX_RECORDS} records")
            try:
                item = json.loads(text)
            except ValueError as exc:
                raise _bad(path, number, f"not a JSON object: {exc}") from None
            if not isinstance(item, dict):
                raise _bad(path, number, "not a JSON object")
            stamp = item.get("timestamp")
            if isinstance(stamp, bool) or not isinstance(stamp, int | float) or stamp < 0:
                raise _bad(path, number, f"timestamp must be milliseconds >= 0, got {stamp!r}")
            hashes = item.get("hash_ids", [])
            if not isinstance(hashes, list) or not all(
                isinstance(h, int) and not isinstance(h, bool) for h in hashes
            ):
                raise _bad(path, number, "hash_ids must be a list of integers")
            records.append(
                TraceRecord(
                    timestamp_ms=float(stamp),
                    input_length=_count(path, number, item, "input_length"),
                    output_length=_count(path, number, item, "output_length"),
                    hash_ids=tuple(hashes),
                )
            )
    if not records:
        raise DisaggError(f"trace file {path}: no records")
    return records


def trace_offsets(records: list[TraceRecord], speedup: float = 1.0) -> list[float]:
    """Send times in seconds after the first request, in timestamp order."""
    first = min(r.timestamp_ms for r in records)
    return [(r.timestamp_ms - first) / 1000.0 / speedup for r in records]


def build_requests(
    factory: PromptFactory, records: list[TraceRecord], block_tokens: int
) -> list[RequestSpec]:
    """One request per record; equal leading hash ids give byte-equal prompt prefixes."""
    blocks: dict[int, str] = {}

    def block(hash_id: int, length: int) -> str:
        """The first `length` tokens of the block `hash_id` stands for (same id, same text)."""
        if hash_id not in blocks:
            rng = random.Random(TRACE_SEED * 1_000_003 + hash_id)
            blocks[hash_id] = factory.text(rng, block_tokens)
        return factory.head(blocks[hash_id], length)

    specs = []
    for index, record in enumerate(records):
        parts, left = [], record.input_length
        for hash_id in record.hash_ids:
            if left <= 0:
                break
            length = min(block_tokens, left)
            parts.append(block(hash_id, length))
            left -= length
        if left > 0:  # the tail past the hashed blocks: unique to this request
            parts.append(factory.text(random.Random(TRACE_SEED + 1 + index), left))
        text = " ".join(p.strip() for p in parts)
        specs.append(factory.request(index, text, record.input_length, record.output_length))
    return specs


def traced_bench(bench: BenchPlan, records: list[TraceRecord]) -> BenchPlan:
    """`bench` with what the trace decides: each point's request count, the mean lengths."""
    count = len(records)
    points = [p.model_copy(update={"num_prompts": count}) for p in bench.points]
    return bench.model_copy(
        update={
            "points": points,
            "isl": round(sum(r.input_length for r in records) / count),
            "osl": round(sum(r.output_length for r in records) / count),
        }
    )


class TraceReplay(BenchmarkAdapter):
    types: ClassVar[tuple[str, ...]] = ("trace-replay",)  # mooncake-router: mooncake_aiperf
    reads = frozenset(
        {
            "trace_file",
            "concurrencies",
            "ttft_threshold_ms",
            "itl_threshold_ms",
            "use_chat_template",
        }
    )
    ignores: ClassVar[dict[str, str]] = {
        "aiperf_package": "disagg replays the trace with its own load generator, "
        "not AIPerf; no package is installed",
        "mooncake_workload": "a label here: the trace_file given is what is replayed",
    }
    differs = ("trace-file",)

    def plan(self, inputs: BenchInputs) -> BenchPlan:
        b = inputs.section
        if b.mooncake_workload is not None and b.trace_file is None:
            raise UnsupportedRecipe(
                f"benchmark.mooncake_workload (srt-slurm downloads the named trace "
                f"{b.mooncake_workload!r} from the model hub; give `trace_file:` a local trace)"
            )
        ignored = self.check_fields(inputs)
        if b.trace_file is None:
            raise inputs.fail(
                f"benchmark type {b.type} needs trace_file",
                ("benchmark",),
                "add `trace_file: PATH` (Mooncake trace JSONL; relative to the recipe)",
            )
        path = Path(b.trace_file).expanduser()
        if not path.is_absolute():
            path = inputs.recipe_dir / path
        levels = concurrencies(inputs)
        # Counts and lengths come from the trace; 0 until a trace read in the job sets them.
        points = [PointPlan(concurrency=c, num_prompts=0, label=f"trace_conc{c}") for c in levels]
        points = points or [PointPlan(num_prompts=0, label="trace")]
        simulated = inputs.simulated
        planned = BenchPlan(
            type=b.type,
            model_name=inputs.model_name,
            isl=0,
            osl=0,
            endpoint="chat" if b.use_chat_template and simulated else "completions",
            use_chat_template=bool(b.use_chat_template) and not simulated,
            tokenizer=None if simulated else "${model.path}",
            arrival="constant",
            slo=slo(inputs),
            points=points,
            concurrencies=levels,
            ignored=ignored,
        )
        # A trace inside a container mount is read from the mount's host side; when that is
        # not on this machine (a cluster's filesystem), the job reads it, as srtctl does.
        found = None if path.exists() else inputs.host_side(path)
        if found is not None and not found[0].exists():
            trace = TracePlan(path=str(found[1]), written=b.trace_file, at_run_time=True)
            return planned.model_copy(update={"trace": trace})
        if found is not None:
            path = found[1]
        try:
            records = read_trace(path)
        except DisaggError as exc:
            if not exc.location:
                raise inputs.fail(exc.message, ("benchmark", "trace_file"), exc.hint) from None
            raise
        trace = TracePlan(path=str(path.resolve()), written=b.trace_file)
        return traced_bench(planned, records).model_copy(update={"trace": trace})

    def requests(self, bench: BenchPlan, point: PointPlan) -> PointRequests:
        """Each of the trace's requests sent at its timestamp (the same driver, limits and
        validity gate as sa-bench's points)."""
        from disagg.bench.prompts import PromptFactory, PromptSettings
        from disagg.bench.runner import PointRequests

        assert bench.trace is not None
        records = sorted(read_trace(Path(bench.trace.path)), key=lambda r: r.timestamp_ms)
        factory = PromptFactory(PromptSettings.of(bench, prompt_format="text"))
        return PointRequests(
            requests=build_requests(factory, records, bench.trace.block_tokens),
            offsets=trace_offsets(records, bench.trace.speedup),
        )

    def prepare(self, bench: BenchPlan) -> None:
        assert bench.trace is not None
        if not bench.trace.at_run_time:  # a trace on the cluster cannot be read before the job
            read_trace(Path(bench.trace.path))

    def resolve(self, bench: BenchPlan) -> BenchPlan:
        """A trace on the cluster is read here, in the job, before any load (a bad one ends
        the run naming file and line); its records set the counts and lengths."""
        if bench.trace is None or not bench.trace.at_run_time:
            return super().resolve(bench)
        try:
            records = read_trace(Path(bench.trace.path))
        except DisaggError as exc:
            where = f"benchmark.trace_file {bench.trace.written} (read in the job)"
            raise DisaggError(
                f"{where}: {exc.message}", location=exc.location, hint=exc.hint
            ) from None
        return traced_bench(bench, records)
