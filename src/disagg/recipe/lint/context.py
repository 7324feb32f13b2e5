"""One file as the rules see it: its node tree, its blocks, and its variants with positions."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from disagg.errors import DisaggError
from disagg.recipe.errors import dotted
from disagg.recipe.lint.model import Location
from disagg.recipe.lint.nodes import Node, ScannedFile, Spot, to_python
from disagg.recipe.load import parse_yaml
from disagg.recipe.overrides import BASE, OVERRIDE_PREFIX, ZIP_PREFIX, expand_variants

if TYPE_CHECKING:
    from disagg.cluster import ClusterProfile
    from disagg.recipe.dialects.schema2 import Translation


def is_variant_block(name: str | None) -> bool:
    return name is not None and name.startswith((OVERRIDE_PREFIX, ZIP_PREFIX))


@dataclass(slots=True)
class Variants:
    """Each variant's config in the internal (v1) layout the rules read; for a schema-2
    file also its translation, to name and find a translated path as the file wrote it."""

    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: DisaggError | None = None
    translations: dict[str, Translation] = field(default_factory=dict)


@dataclass
class FileContext:
    """A scanned, syntactically valid file whose root is a map."""

    path: str
    scanned: ScannedFile
    root: Node
    profile: ClusterProfile | None = None  # what DA013 plans on, as `disagg plan` would

    def loc(self, at: Node | Spot, role: str = "") -> Location:
        return Location(self.path, at.line, at.col, role, at.block)

    def at(self, variant: str, path: tuple[str, ...], role: str) -> Location:
        """Where `variant` sets internal `path` (`locate`), else just the file."""
        node = self.locate(variant, path)
        return Location(self.path, role=role) if node is None else self.loc(node, role)

    def block(self, name: str) -> Node | None:
        return self.root.get(name)

    @cached_property
    def is_override_file(self) -> bool:
        return any(
            k.kind == "scalar" and (k.value == BASE or is_variant_block(str(k.value)))
            for k, _ in self.root.pairs
        )

    @cached_property
    def data(self) -> Any:
        return to_python(self.root)

    @cached_property
    def runnable(self) -> dict[str, dict[str, Any]]:
        """Each variant's config; `base` alone in an override file without variants
        (`file.yaml:base` is then the only runnable selection)."""
        configs = dict(self.variants.configs)
        if self.is_override_file and not configs:
            base = self.data.get("base")
            configs["base"] = base if isinstance(base, dict) else {}
        return configs

    @cached_property
    def dialect(self) -> str:
        """`v1` or `schema2`, as the loader decides (`disagg.recipe.dialects`)."""
        from disagg.recipe.dialects import detect

        try:
            return detect(self.data, lambda path: None)
        except DisaggError:
            return "v1"

    @cached_property
    def variants(self) -> Variants:
        from disagg.recipe.dialects import without_schema_key

        try:
            expanded = expand_variants(without_schema_key(self.data), file=self.path)
        except DisaggError as exc:
            error = exc
        else:
            return _translated(expanded) if self.dialect == "schema2" else Variants(expanded)
        try:  # again on the loader's positioned containers, only to say where
            positioned = parse_yaml(self.scanned.text, file=self.path).data
        except DisaggError:
            return Variants(error=error)
        try:
            expand_variants(without_schema_key(positioned), file=self.path)
        except DisaggError as exc:
            error = exc
        return Variants(error=error)

    def written_name(self, variant: str, internal: str) -> str:
        """A dotted internal field name as the file spells it (`roles.prefill.args...`)."""
        translation = self.variants.translations.get(variant)
        if translation is None:
            return internal
        return dotted(translation.written_path(internal.split(".")))

    def locate(self, variant: str, path: tuple[str, ...]) -> Node | None:
        """The node that sets internal `path` in `variant`: its own block first, then `base`."""
        translation = self.variants.translations.get(variant)
        if translation is not None:  # a schema-2 file: where it wrote the internal path
            path = tuple(str(part) for part in translation.written_path(path))
        # `zip_override_x[2]` is element 2 of its block; only a trailing `[digits]` is an
        # index (`override_[a` is a block's own name).
        name, index = variant, None
        head, bracket, rest = variant.rpartition("[")
        if bracket and rest.endswith("]") and rest[:-1].isdigit():
            name, index = head, int(rest[:-1])
        if name == BASE and not self.is_override_file:
            scopes = [self.root]
        else:
            scopes = [b for b in (self.block(name), self.block(BASE)) if b is not None]
        for scope in scopes:
            node: Node | None = scope
            for key in path:
                node = node.get(key) if node is not None and node.kind == "map" else None
            if node is None:
                continue
            zipped = index is not None and scope is not self.block(BASE) and node.kind == "seq"
            if zipped and index is not None and 1 < len(node.items) > index:
                return node.items[index]
            return node
        return None


def _translated(expanded: dict[str, dict[str, Any]]) -> Variants:
    """Schema-2 variants in the internal layout. A variant that does not validate as
    schema 2 is left out: DA013 reports it, with the loader's own message."""
    from pydantic import ValidationError

    from disagg.recipe.dialects.schema2 import translate
    from disagg.recipe.dialects.schema2_model import Schema2Recipe
    from disagg.recipe.honoured import role_engines

    variants = Variants()
    for name, config in expanded.items():
        written = {k: v for k, v in config.items() if not str(k).startswith("x-")}
        try:
            Schema2Recipe.model_validate(written)
        except ValidationError:
            continue
        translation = translate(written)
        internal = translation.internal
        if any(found.path[2:] == ("engine",) for found in role_engines(internal)):
            continue  # roles on engines no plan pairs: refused by plan (DA013), no layout to check
        variants.configs[name] = internal
        variants.translations[name] = translation
    return variants
