"""Time the full checkpoint check on a DeepSeek-R1-shaped checkpoint (163 shards).

Each shard gets a real safetensors header with R1's tensor naming and shapes (FP8
expert weights with F32 block scales, BF16 norms), so headers are as long as the real
ones (hundreds of tensors, long names); the file is then extended to its claimed size
as a sparse file, so the data costs no disk. Headers only; each is parsed as strict
JSON and validated as the `safetensors` library validates it, whole lists at a time.
Target: under 0.3 s warm. CPU time is printed too: on a shared machine it says more
than wall time.

    .venv/bin/python benchmarks/checkpoint.py [--dir DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from disagg.staging import checkpoint as ck

SHARDS = 163
LAYERS = 62  # 61 decoder layers + the MTP layer
DENSE_LAYERS = 3
EXPERTS = 256
HIDDEN = 7168
MOE_INTER = 2048
DENSE_INTER = 18432
DTYPE_BYTES = {"F8_E4M3": 1, "BF16": 2, "F32": 4}


def _linear(name: str, out_f: int, in_f: int) -> Iterator[tuple[str, str, list[int]]]:
    """An FP8 weight and its 128x128 block scale, as in the released checkpoint."""
    yield f"{name}.weight", "F8_E4M3", [out_f, in_f]
    yield f"{name}.weight_scale_inv", "F32", [-(-out_f // 128), -(-in_f // 128)]


def r1_tensors() -> Iterator[tuple[str, str, list[int]]]:
    yield "model.embed_tokens.weight", "BF16", [129280, HIDDEN]
    for layer in range(LAYERS):
        p = f"model.layers.{layer}"
        yield f"{p}.input_layernorm.weight", "BF16", [HIDDEN]
        yield f"{p}.post_attention_layernorm.weight", "BF16", [HIDDEN]
        yield from _linear(f"{p}.self_attn.q_a_proj", 1536, HIDDEN)
        yield f"{p}.self_attn.q_a_layernorm.weight", "BF16", [1536]
        yield from _linear(f"{p}.self_attn.q_b_proj", 24576, 1536)
        yield from _linear(f"{p}.self_attn.kv_a_proj_with_mqa", 576, HIDDEN)
        yield f"{p}.self_attn.kv_a_layernorm.weight", "BF16", [512]
        yield from _linear(f"{p}.self_attn.kv_b_proj", 32768, 512)
        yield from _linear(f"{p}.self_attn.o_proj", HIDDEN, 16384)
        if layer < DENSE_LAYERS:
            for proj, shape in (("gate", (DENSE_INTER, HIDDEN)), ("up", (DENSE_INTER, HIDDEN))):
                yield from _linear(f"{p}.mlp.{proj}_proj", *shape)
            yield from _linear(f"{p}.mlp.down_proj", HIDDEN, DENSE_INTER)
            continue
        yield f"{p}.mlp.gate.weight", "BF16", [EXPERTS, HIDDEN]
        yield f"{p}.mlp.gate.e_score_correction_bias", "F32", [EXPERTS]
        for expert in [*range(EXPERTS), None]:
            e = f"{p}.mlp.experts.{expert}" if expert is not None else f"{p}.mlp.shared_experts"
            yield from _linear(f"{e}.gate_proj", MOE_INTER, HIDDEN)
            yield from _linear(f"{e}.up_proj", MOE_INTER, HIDDEN)
            yield from _linear(f"{e}.down_proj", HIDDEN, MOE_INTER)
    yield "model.norm.weight", "BF16", [HIDDEN]
    yield "lm_head.weight", "BF16", [129280, HIDDEN]


def build(directory: Path) -> tuple[int, int]:
    """Write the checkpoint; returns (tensor count, total header bytes)."""
    tensors = list(r1_tensors())
    per_shard = -(-len(tensors) // SHARDS)
    weight_map: dict[str, str] = {}
    header_bytes = 0
    for index in range(SHARDS):
        name = f"model-{index + 1:05d}-of-{SHARDS:06d}.safetensors"
        header: dict[str, object] = {"__metadata__": {"format": "pt"}}
        offset = 0
        for tensor, dtype, shape in tensors[index * per_shard : (index + 1) * per_shard]:
            size = DTYPE_BYTES[dtype]
            for dim in shape:
                size *= dim
            header[tensor] = {
                "dtype": dtype,
                "shape": shape,
                "data_offsets": [offset, offset + size],
            }
            offset += size
            weight_map[tensor] = name
        raw = json.dumps(header, separators=(",", ":")).encode()
        raw += b" " * (-len(raw) % 8)
        header_bytes += len(raw)
        with open(directory / name, "wb") as handle:
            handle.write(struct.pack("<Q", len(raw)) + raw)
            handle.truncate(8 + len(raw) + offset)  # sparse: claimed size, no data written
    index_doc = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (directory / ck.INDEX).write_text(json.dumps(index_doc, indent=2))
    (directory / ck.CONFIG).write_text(json.dumps({"architectures": ["DeepseekV3ForCausalLM"]}))
    (directory / ck.TOKENIZER_CONFIG).write_text("{}")
    (directory / "tokenizer.json").write_text("{}")
    return len(tensors), header_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="where to build (default: a temporary directory)")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="r1-shaped-") as tmp:
        directory = args.dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        tensors, header_bytes = build(directory)
        print(
            f"built {SHARDS} shards, {tensors} tensors, {header_bytes} header bytes "
            f"in {time.perf_counter() - started:.1f}s at {directory}"
        )
        first = time.perf_counter()
        report = ck.check_directory(str(directory))
        first_s = time.perf_counter() - first
        assert report.complete, report.problems
        times = []
        cpu = []
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            report = ck.check_directory(str(directory))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        claimed = sum(os.stat(directory / n).st_size for n in os.listdir(directory))
        print(f"claimed size      {claimed / 1e9:.1f} GB in {report.safetensors_files} shards")
        print(
            f"bytes read        {report.bytes_read} ({report.bytes_read / claimed:.2e} of claimed)"
        )
        print(f"first check       {first_s:.3f} s")
        print(
            f"warm check        min {min(times):.3f} s, median {statistics.median(times):.3f} s "
            f"over {args.repeat} runs (target < 0.3 s)"
        )
        print(f"warm check CPU    min {min(cpu):.3f} s, median {statistics.median(cpu):.3f} s")


if __name__ == "__main__":
    main()
