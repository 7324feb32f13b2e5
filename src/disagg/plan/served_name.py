"""The model name a job serves: what workers register, routers route and clients send.

As srtctl computes it (`SrtConfig.served_model_name`): the first `served-model-name`
written in the prefill, aggregated, then decode settings, else the engine-wide name
(schema 2), else the basename of the model path; every worker gets that one name.
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
    return next((name for name in written if name), None) or engine_wide or model_basename(model)
