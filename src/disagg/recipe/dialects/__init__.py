"""Recipe dialects: srt-slurm v1 (the internal shape) and `schema: 2`, told apart per file by
`schema: 2` (top level or `base`), or else by schema 2's own keys `engine` / `roles`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from disagg.errors import DisaggError, SourceLocation

if TYPE_CHECKING:
    from disagg.recipe.dialects.schema2 import Translation

Dialect = Literal["v1", "schema2"]
SCHEMA_KEY = "schema"
_SCHEMA2_KEYS = ("engine", "roles")


def detect(doc: Mapping[str, Any], locate: Any) -> Dialect:
    """The dialect of a file's top-level map; `locate(path)` positions an error."""
    base = doc.get("base")
    blocks = [doc, base] if isinstance(base, Mapping) else [doc]
    for block in blocks:
        if SCHEMA_KEY in block:
            value = block[SCHEMA_KEY]
            if value in (1, 2) and not isinstance(value, bool):
                return "schema2" if value == 2 else "v1"
            where: SourceLocation = locate((SCHEMA_KEY,) if block is doc else ("base", SCHEMA_KEY))
            raise DisaggError(
                f"unknown recipe schema {value!r}",
                location=where,
                hint="`schema: 2` (srt-slurm 2.x) or no `schema` key (srt-slurm v1)",
            )
    variant_blocks = [
        v for k, v in doc.items() if str(k).startswith(("override_", "zip_override_"))
    ]
    for block in [*blocks, *variant_blocks]:
        if isinstance(block, Mapping) and any(key in block for key in _SCHEMA2_KEYS):
            return "schema2"
    return "v1"


def without_schema_key(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document minus its `schema` marker (top level and in `base`), positions kept."""
    from disagg.recipe.source_map import PosDict

    def strip(block: Mapping[str, Any]) -> dict[str, Any]:
        copy = PosDict({k: v for k, v in block.items() if k != SCHEMA_KEY})
        lc = getattr(block, "lc", None)
        if lc is not None:
            copy.lc = lc
        return copy

    out = strip(doc)
    if isinstance(out.get("base"), Mapping):
        out["base"] = strip(out["base"])
    return out


Locator = Any  # (path, key: bool) -> SourceLocation, in the file's own paths


def typed(
    dialect: Dialect, written: dict[str, Any], locate: Locator, context: str | None
) -> tuple[dict[str, Any], Any, Translation | None]:
    """(internal raw config, validated RecipeConfig, schema-2 translation or None) for one
    variant as written. Schema 2 is checked against its own key set first, then translated."""
    from pydantic import ValidationError

    from disagg.recipe.errors import validation_error
    from disagg.recipe.schema import RecipeConfig

    translation = None
    if dialect == "schema2":
        from disagg.recipe.dialects import schema2, schema2_engines
        from disagg.recipe.dialects.schema2_model import Schema2Recipe

        schema2.check_legacy_keys(written, locate)
        schema2.check_engine_knobs(written, locate)
        schema2_engines.check_role_engines(written, locate)
        _check_frontend_spelling(dialect, written, locate, context)
        try:
            Schema2Recipe.model_validate(written)
        except ValidationError as exc:
            raise validation_error(
                exc, data=written, root=Schema2Recipe, locate=locate, context=context
            ) from None
        translation = schema2.translate(written)
        internal = translation.internal
    else:
        if "role_overrides" in written:  # internal: only a schema-2 translation writes it
            raise DisaggError(
                "unknown key `role_overrides`" + (f" (in {context})" if context else ""),
                location=locate(("role_overrides",), True),
                hint="a v1 recipe has no such key; schema 2 writes per-role images and "
                "srun options under `roles.<role>`",
            )
        _check_frontend_spelling(dialect, written, locate, context)
        internal = v1_internal(written)
    try:
        config = RecipeConfig.model_validate(internal)
    except ValidationError as exc:
        raise validation_error(
            exc,
            data=internal,
            root=RecipeConfig,
            locate=locate,
            context=context,
            written_path=translation.written_path if translation else None,
        ) from None
    return internal, config, translation


# v1 frontend types whose internal name differs: srtctl v1.0.68's `vllm` is the one
# aggregated `vllm serve` worker serving directly (srtctl/frontends/vllm.py), schema 2's too.
V1_FRONTEND_TYPES = {"vllm": "vllm-direct"}
V1_FRONTEND_TYPES_BACK = {internal: written for written, internal in V1_FRONTEND_TYPES.items()}


def v1_internal(written: dict[str, Any]) -> dict[str, Any]:
    """A v1 variant in the internal shape: the same map, a renamed frontend type aside."""
    frontend = written.get("frontend")
    kind = frontend.get("type") if isinstance(frontend, Mapping) else None
    if not isinstance(frontend, Mapping) or not isinstance(kind, str):
        return written  # a type that is not text: validation names it
    if kind not in V1_FRONTEND_TYPES:
        return written
    return {**written, "frontend": {**frontend, "type": V1_FRONTEND_TYPES[kind]}}


def _check_frontend_spelling(
    dialect: Dialect, written: Mapping[str, Any], locate: Locator, context: str | None
) -> None:
    """The internal names of schema 2's direct frontends are not recipe spellings: in v1,
    `sglang` is the sglang-router; a single worker serving directly is schema 2's `sglang`."""
    from disagg.recipe.dialects.schema2 import DIRECT_FRONTENDS

    frontend = written.get("frontend")
    kind = frontend.get("type") if isinstance(frontend, Mapping) else None
    if kind not in DIRECT_FRONTENDS:
        return
    engine = str(kind).removesuffix("-direct")
    if dialect == "schema2":
        hint = f"schema 2 spells the directly serving {engine} worker `{engine}`"
    elif engine in V1_FRONTEND_TYPES:
        hint = f"v1 spells the directly serving {engine} worker `{engine}`"
    else:
        hint = (
            f"v1's `sglang` is the sglang-router; the directly serving {engine} worker is "
            f"schema 2's `frontend.type: {engine}` (`disagg migrate` writes schema 2)"
        )
    raise DisaggError(
        f"unknown frontend type {kind!r}" + (f" (in {context})" if context else ""),
        location=locate(("frontend", "type"), False),
        hint=hint,
    )
