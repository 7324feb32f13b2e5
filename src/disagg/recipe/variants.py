"""Recipe file -> typed variants: the one entry point `plan`, `lint` and `run` share, so each
`Variant` can say where any of its values was written (in `base`, in a zip list element)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from disagg.engines import registry
from disagg.errors import DisaggError, SourceLocation, UnsupportedRecipe
from disagg.recipe import dialects
from disagg.recipe.dialects import Dialect
from disagg.recipe.dialects.schema2 import Translation
from disagg.recipe.errors import dotted
from disagg.recipe.honoured import unhonoured
from disagg.recipe.load import LoadedYaml, load_yaml
from disagg.recipe.overrides import (
    BASE,
    IGNORED_PREFIX,
    OVERRIDE_PREFIX,
    ZIP_PREFIX,
    deep_merge,
    expand_sweep,
    origin,
)
from disagg.recipe.overrides import expand_variants as _expand
from disagg.recipe.schema import RecipeConfig
from disagg.recipe.selectors import Selector, parse_selector, select
from disagg.recipe.source_map import Key, KeyPath, SourceMap


@dataclass(frozen=True)
class Variant:
    """One resolved, typed variant and the way back to its source text."""

    file: str  # as shown in messages
    path: Path
    name: str  # `base`, `override_x`, `zip_override_x[2]`
    raw: dict[str, Any]  # the merged config, plain JSON-able data
    config: RecipeConfig
    source: SourceMap
    block: str | None  # the override/zip block it came from; None for flat recipes and `base`
    zip_index: int | None = None
    translation: Translation | None = None  # schema 2: the layout `raw` was translated from

    @property
    def selector(self) -> str:
        return f"{self.file}:{self.name}"

    @property
    def dialect(self) -> Dialect:
        """The layout the file wrote this variant in: only schema 2 is translated."""
        return "v1" if self.translation is None else "schema2"

    def written_path(self, path: Sequence[Key]) -> KeyPath:
        """The path the file itself uses for the internal field at `path`."""
        if self.translation is not None:
            return self.translation.written_path(path)
        return tuple(path)

    def written_field(self, path: Sequence[Key]) -> str:
        """The dotted name the file itself uses for the internal field at `path`."""
        return dotted(self.written_path(path))

    def written_name(self, internal: str) -> str:
        """`written_field` of a dotted internal name (`backend.sglang_config.prefill.port`)."""
        return self.written_field(internal.split("."))

    def internal_path(self, written: Sequence[Key]) -> KeyPath:
        """The internal path of a path as the file wrote it (inverse of `written_path`)."""
        if self.translation is not None:
            return self.translation.internal_path(written)
        return tuple(written)

    def locate(self, path: Sequence[Key], *, key: bool = False) -> SourceLocation:
        """Where the value (or key) at internal `path` was written: the variant's own block (a
        zip block's list element), then `base`, then the nearest written ancestor."""
        return self.locate_written(self.written_path(path), key=key)

    def locate_written(self, path: Sequence[Key], *, key: bool = False) -> SourceLocation:
        """`locate` for a path as the file wrote it (schema 2's own spelling)."""
        where = tuple(path)
        return locate_in_variant(self.source, self.name, self.block, self.zip_index, where, key=key)


def locate_in_variant(
    source: SourceMap,
    name: str,
    block: str | None,
    zip_index: int | None,
    path: KeyPath,
    *,
    key: bool = False,
) -> SourceLocation:
    """See `Variant.locate`; usable before the Variant exists (for validation errors)."""
    for cut in range(len(path), -1, -1):
        for candidate in _candidates(source, name, block, zip_index, path[:cut]):
            pos = source.find(candidate, key=key) or (source.find(candidate) if key else None)
            if pos is not None:
                return SourceLocation(source.file, pos[0], pos[1])
    return SourceLocation(source.file)


def _candidates(
    source: SourceMap, name: str, block: str | None, zip_index: int | None, path: KeyPath
) -> list[KeyPath]:
    if block is None:
        has_base = source.find((BASE,), key=True) is not None
        return [(BASE, *path)] if origin(name) == BASE and has_base else [path]
    own = _zip_path(source, block, path, zip_index) if zip_index is not None else (block, *path)
    return [own, (BASE, *path)]


def _zip_path(source: SourceMap, block: str, path: KeyPath, index: int) -> KeyPath:
    """The raw path of `path` inside a zip block: the first list on the way is the zipped
    leaf, stepped into at this variant's element (a length-1 list broadcasts its one)."""
    for cut in range(len(path) + 1):
        here = (block, *path[:cut])
        if source.find((*here, 0)) is not None:
            single = source.find((*here, 1)) is None
            return (*here, 0 if single else index, *path[cut:])
    return (block, *path)


def recipe_doc(loaded: LoadedYaml) -> Mapping[str, Any]:
    """The top-level map of a recipe file, or a positioned error saying what was found."""
    data = loaded.data
    if not isinstance(data, Mapping):
        raise DisaggError(
            f"a recipe is a map of fields at the top level, got {type(data).__name__}",
            location=loaded.source.locate(()),
            hint="start with `name:`, `model:`, `resources:` (or `base:` for an override file)",
        )
    return data


def load_variants(target: str | Path, *, pattern: str | None = None) -> list[Variant]:
    """Load, expand, select and validate. Bad input raises a positioned DisaggError."""
    selector = Selector(target) if isinstance(target, Path) else parse_selector(target)
    loaded = load_yaml(selector.path)
    return variants_of(loaded, pattern if pattern is not None else selector.pattern)


def variants_of(loaded: LoadedYaml, pattern: str | None = None) -> list[Variant]:
    """Variants of an already loaded file (the linter loads once and reuses it)."""
    doc = recipe_doc(loaded)
    dialect = dialects.detect(doc, lambda path: loaded.source.locate(path, key=True))
    doc = dialects.without_schema_key(doc)
    expanded = _expand(doc, file=loaded.file)
    flat = BASE not in doc and not any(
        str(key).startswith((OVERRIDE_PREFIX, ZIP_PREFIX)) for key in doc
    )
    bases = {} if flat else _base_variants(doc, loaded.file)
    names = list(expanded) if flat else [*bases, *expanded]
    chosen = select(names, pattern, file=loaded.file)
    variants = []
    for name in chosen:
        raw = bases[name] if name in bases else expanded[name]
        block, index = _block_of(name, flat or name in bases)
        variants.append(_typed(loaded, name, raw, block, index, dialect))
    return variants


def _base_variants(doc: Mapping[str, Any], file: str) -> dict[str, dict[str, Any]]:
    """An override file's `base` as a variant of its own (`file:base`), or the variants of
    its `sweep` (srtctl sweeps a selected base as it sweeps any variant)."""
    base = doc[BASE] if isinstance(doc[BASE], Mapping) else {}
    return dict(expand_sweep(BASE, deep_merge({}, base), base, file))


def _block_of(name: str, flat: bool) -> tuple[str | None, int | None]:
    if flat:
        return None, None
    name = origin(name)
    if name.endswith("]") and "[" in name:
        block, _, index = name[:-1].rpartition("[")
        return block, int(index)
    return name, None


def _typed(
    loaded: LoadedYaml,
    name: str,
    raw: dict[str, Any],
    block: str | None,
    index: int | None,
    dialect: Dialect,
) -> Variant:
    written = {k: v for k, v in raw.items() if not str(k).startswith(IGNORED_PREFIX)}

    def locate(path: KeyPath, key: bool) -> SourceLocation:
        return locate_in_variant(loaded.source, name, block, index, path, key=key)

    context = None if name == BASE else f"variant {name}"
    internal, config, translation = dialects.typed(dialect, written, locate, context)
    return Variant(
        file=loaded.file,
        path=Path(loaded.file),
        name=name,
        raw=internal,
        config=config,
        source=loaded.source,
        block=block,
        zip_index=index,
        translation=translation,
    )


def unsupported_reason(config: RecipeConfig, *, schema2: bool = False) -> str | None:
    """Why this project cannot run a valid variant, or None when it can (`schema2`: named
    in schema 2's spelling)."""
    backend = config.backend.type
    engines = registry.names()
    if backend not in engines:
        sim = f"`engine: {{type: {backend}, engine: sim}}`" if schema2 else "`backend.engine: sim`"
        return (
            f"{'engine' if schema2 else 'backend'} type {backend} (engines: {', '.join(engines)}; "
            f"{sim} simulates any of them)"
        )
    if config.frontend is not None:
        from disagg.frontends import refusal as frontend_refusal

        refused = frontend_refusal(config.frontend.type, schema2=schema2)
        if refused is not None:
            return refused
    from disagg.workloads.registry import refusal

    return refusal(config.benchmark.type)


def ensure_supported(variant: Variant) -> None:
    """Raise the one-line `unsupported: <what>` error for variants this project cannot run."""
    reason = unsupported_reason(variant.config, schema2=variant.dialect == "schema2")
    where = "" if variant.name == BASE else f" in variant {variant.name}"
    if reason is not None:
        section = reason.split(" ", 1)[0]
        field = ("backend" if section == "engine" else section, "type")
        raise UnsupportedRecipe(f"{reason}{where}", location=variant.locate(field))
    for found in unhonoured(variant.raw):
        if found.action == "refused":
            raise UnsupportedRecipe(
                f"{variant.written_field(found.path)}{' ' if found.shown else ''}{found.shown}"
                f" ({found.why}){where}",
                location=variant.locate(found.path),
            )
