"""The model name a job serves: what workers register, routers route and clients send.

srtctl computes one name per job (`SrtConfig.served_model_name` in srt-slurm's
core/schema.py, and each backend's `get_served_model_name`): the first
`served-model-name` the recipe writes in the prefill, then aggregated, then decode
settings (SGLang and vLLM; TRT-LLM and the mocker have none), else the basename of the
model path an alias resolves to: `Qwen3-32B` for `/models/Qwen3-32B`, for an alias
naming it, for `hf:Qwen/Qwen3-32B` and for a directory `Qwen/Qwen3-32B`. Every worker
gets that one name (its own written name is replaced), and the benchmark sends it.
Schema 2 adds an engine-wide `engine.served_model_name` for engines whose settings have
no such key.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from disagg.cluster import ModelRef


def model_basename(model: ModelRef) -> str:
    """The last part of `model.path` after alias resolution, before it is made absolute
    (srtctl's `Path(model.path).name`; trailing slashes ignored)."""
    text = (model.named or model.written).removeprefix("hf:")
    return posixpath.basename(posixpath.normpath(text)) or text


def served_model_name(
    model: ModelRef, written: Iterable[str | None], engine_wide: str | None = None
) -> str:
    """The first name `written` in the roles' settings (in srtctl's role order), else the
    engine-wide name, else the model's basename."""
    for name in written:
        if name:
            return name
    return engine_wide or model_basename(model)
