"""Real tiny checkpoints for tests, written with the `safetensors` and `tokenizers` packages."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Literal

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, pre_tokenizers

TokenizerKind = Literal["json", "model", "tiktoken", "none"]
VOCAB = ["[UNK]", "hello", "world", "the", "a", "model", "shard", "draft"]


def write_tokenizer(directory: Path, kind: TokenizerKind = "json") -> None:
    """tokenizer_config.json plus one vocabulary variant (or none, for the failure case)."""
    config = {"model_max_length": 4096, "bos_token": None, "eos_token": "[UNK]"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    if kind == "json":
        tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.save(str(directory / "tokenizer.json"))
    elif kind == "model":
        # A sentencepiece model is a protobuf; the contract only needs the file to exist.
        (directory / "tokenizer.model").write_bytes(b"\x0a\x05hello\x15\x00\x00\x80\xbf")
    elif kind == "tiktoken":
        lines = [f"{base64.b64encode(w.encode()).decode()} {i}" for i, w in enumerate(VOCAB)]
        (directory / "vocab.tiktoken").write_text("\n".join(lines) + "\n")


def _tensors(layers: range, seed: int, hidden: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for layer in layers:
        prefix = f"model.layers.{layer}"
        out[f"{prefix}.self_attn.q_proj.weight"] = rng.standard_normal((hidden, hidden), "float32")
        out[f"{prefix}.mlp.down_proj.weight"] = rng.standard_normal((hidden, 2 * hidden), "float32")
        out[f"{prefix}.input_layernorm.weight"] = np.ones(hidden, dtype=np.float32)
    return out


def write_checkpoint(
    directory: Path,
    *,
    shards: int = 3,
    tokenizer: TokenizerKind = "json",
    seed: int = 0,
    hidden: int = 16,
) -> Path:
    """A real random-weight model: config, tokenizer, and `shards` safetensors files.

    `shards == 1` writes a single `model.safetensors` without an index.
    """
    directory.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["TinyForCausalLM"], "hidden_size": hidden, "num_layers": shards}
    (directory / "config.json").write_text(json.dumps(config))
    (directory / "generation_config.json").write_text(json.dumps({"max_new_tokens": 16}))
    write_tokenizer(directory, tokenizer)
    if shards == 1:
        save_file(_tensors(range(2), seed, hidden), str(directory / "model.safetensors"))
        return directory
    weight_map: dict[str, str] = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        tensors = _tensors(range(i * 2, i * 2 + 2), seed + i, hidden)
        save_file(tensors, str(directory / name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(tensors, name))
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return directory


def shard_names(directory: Path) -> list[str]:
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    return sorted(set(index["weight_map"].values()))


def write_cache_entry(hub: Path, repo_id: str, source: Path, *, revision: str = "main") -> Path:
    """Lay `source` out as a cache entry: blobs by sha256, snapshot symlinks, `refs/REV`.

    Returns the snapshot directory. The commit id is derived from the content.
    """
    import hashlib
    import os

    entry = hub / ("models--" + repo_id.replace("/", "--"))
    files = sorted(p for p in source.rglob("*") if p.is_file())
    digest = hashlib.sha1()
    for path in files:
        digest.update(path.relative_to(source).as_posix().encode() + path.read_bytes())
    commit = digest.hexdigest()
    snapshot = entry / "snapshots" / commit
    (entry / "blobs").mkdir(parents=True, exist_ok=True)
    for path in files:
        blob = hashlib.sha256(path.read_bytes()).hexdigest()
        (entry / "blobs" / blob).write_bytes(path.read_bytes())
        link = snapshot / path.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(entry / "blobs" / blob, link.parent), link)
    (entry / "refs").mkdir(exist_ok=True)
    (entry / "refs" / revision).write_text(commit)
    return snapshot
