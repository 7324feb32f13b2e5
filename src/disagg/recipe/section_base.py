"""How a recipe section is declared: its base model, the default of a section a recipe may
leave out (`omitted`), and the annotation of a field validated only when set (`WhenSet`)."""

# No `from __future__ import annotations`: pydantic would evaluate each annotation string.

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    TypeAdapter,
    ValidationError,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from disagg.model_defaults import empty_dict


class Section(BaseModel):
    """Base of every recipe section: no unknown keys, no type coercion. `defer_build`: a
    command that never validates a recipe does not build the dozens of sections at import."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


def omitted(description: str | None = None) -> Any:
    """The default of a section a recipe may leave out: `{}`, validated by the holder (a
    `default_factory=TheSection` would build the section's own validator besides)."""
    return Field(default_factory=empty_dict, validate_default=True, description=description)


@dataclass(eq=False)
class WhenSet:
    """Annotation of a field most recipes leave out: `Annotated[T, WhenSet()]`.

    As strict as any field, but T's validator (one per type) is built the first time a
    recipe sets it: building the rarely set sections was two fifths of building the whole.
    `whole` gives T when the annotation cannot (a union made on demand); `first` is a
    cheaper check whose NotImplemented or ValidationError falls back to T, which words errors.
    """

    _validators: ClassVar[dict[Any, TypeAdapter[Any]]] = {}
    whole: Callable[[], Any] | None = None
    first: Callable[[Any], Any] | None = None
    kind: Any = field(default=None, init=False)  # the annotation, as pydantic hands it over

    def validator(self) -> TypeAdapter[Any]:
        kind = self.kind if self.whole is None else self.whole()
        adapter = self._validators.get(kind)
        if adapter is None:
            adapter = self._validators[kind] = TypeAdapter(kind)
        return adapter

    def _validate(self, value: Any) -> Any:
        if self.first is not None:
            try:
                found = self.first(value)
            except ValidationError:
                found = NotImplemented
            if found is not NotImplemented:
                return found
        return self.validator().validate_python(value)

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        self.kind = source
        return core_schema.no_info_plain_validator_function(self._validate)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(self.validator().core_schema)
