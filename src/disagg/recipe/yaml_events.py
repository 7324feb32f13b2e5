"""A libyaml event stream -> plain dicts/lists/scalars, recording a SourceMap on the way.

Duplicate keys load as srt-slurm loads them (the last one wins); merges, anchors and
aliases resolve as in PyYAML, bounded by `limits`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from disagg.errors import DisaggError, SourceLocation
from disagg.recipe.limits import MAX_DEPTH, ExpansionBudget, too_deep
from disagg.recipe.source_map import KeyPath, LineCol, Pos, PosDict, SourceMap
from disagg.recipe.yaml_scalars import BOOLS, FLOAT, TAG, resolve_plain, to_float, to_int

_LIBYAML = getattr(yaml, "CSafeLoader", None)  # None where PyYAML was built without libyaml


def parse_events(text: str, *, pure: bool = False) -> Iterator[yaml.Event]:
    """The parser's events for `text`: libyaml's, or, with `pure` or without libyaml, PyYAML's
    pure-Python parser, which reads some valid YAML libyaml's scanner refuses. libyaml's
    `get_event` until None costs a quarter less CPU than `yaml.parse`, which the pure
    parser keeps (it needs `dispose` to break its reference cycles)."""
    if _LIBYAML is not None and not pure:
        return iter(_LIBYAML(text).get_event, None)
    return yaml.parse(text, Loader=yaml.SafeLoader)


def _pos(mark: Any) -> Pos:
    """1-based (line, column) of a parser mark (libyaml always gives one)."""
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


class EventBuilder:
    """Turns a parser event stream into plain data, filling a SourceMap as it goes."""

    def __init__(self, source: SourceMap) -> None:
        self.source = source
        self.anchors: dict[str, tuple[Any, KeyPath]] = {}
        self.budget = ExpansionBudget()
        self.empty = True

    def _loc(self, mark: Any) -> SourceLocation:
        return SourceLocation(self.source.file, mark.line + 1, mark.column + 1)

    def build(self, events: Iterator[Any]) -> Any:
        data: Any = None
        documents = 0
        for event in events:
            if isinstance(event, DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise DisaggError(
                        "several YAML documents in one file",
                        location=self._loc(event.start_mark),
                        hint="a recipe is one document; remove the `---` separator "
                        "or split the file",
                    )
                continue
            if isinstance(event, ScalarEvent | SequenceStartEvent | MappingStartEvent | AliasEvent):
                self.source.values[()] = _pos(event.start_mark)
                data = self._node(event, events, (), 0)
                self.empty = data is None
            elif isinstance(event, StreamEndEvent):
                break
        return data

    def _node(self, event: Any, events: Iterator[Any], path: KeyPath, depth: int) -> Any:
        kind = type(event)
        budget = self.budget
        if kind is AliasEvent:
            try:
                value, target = self.anchors[event.anchor]
            except KeyError:
                raise DisaggError(
                    f"undefined alias *{event.anchor}: no anchor &{event.anchor} before this point",
                    location=self._loc(event.start_mark),
                    hint="anchors must be defined earlier in the same file; shared values "
                    "belong in `base` or a top-level `x-` block (run `disagg lint`)",
                ) from None
            budget.alias(event.anchor, self._loc(event.start_mark))
            self.source.aliases[path] = target
            return value
        start = budget.total
        budget.node()
        if kind is ScalarEvent:
            value = self._scalar(event)
        elif depth >= MAX_DEPTH:
            raise too_deep(self._loc(event.start_mark))
        elif kind is SequenceStartEvent:
            self._check_tag(event, ("seq",))
            value = self._sequence(events, path, depth)
        else:
            self._check_tag(event, ("map",))
            value = self._mapping(events, path, depth)
        if event.anchor is not None:
            self.anchors[event.anchor] = (value, path)
            budget.anchored(event.anchor, start)
        return value

    def _check_tag(self, event: Any, allowed: tuple[str, ...]) -> None:
        tag = event.tag
        if tag is None or tag == "!" or tag in tuple(TAG + name for name in allowed):
            return
        raise DisaggError(
            f"unsupported YAML tag {tag}",
            location=self._loc(event.start_mark),
            hint="recipes use plain YAML values; remove the tag",
        )

    def _scalar(self, event: Any) -> Any:
        tag = event.tag
        text: str = event.value
        if tag is None:
            return resolve_plain(text) if event.implicit[0] else text
        self._check_tag(event, ("str", "int", "float", "bool", "null"))
        if tag in ("!", TAG + "str"):
            return text
        value: Any = None
        if tag == TAG + "int":
            value = to_int(text, None)
        elif tag == TAG + "float":
            value = to_float(text) if FLOAT.fullmatch(text) else None
        elif tag == TAG + "bool":
            value = BOOLS.get(text)
        if value is None and tag != TAG + "null":
            raise DisaggError(
                f"{text!r} is not a valid {tag.removeprefix(TAG)}",
                location=self._loc(event.start_mark),
                hint="fix the value or drop the explicit tag",
            )
        return value

    def _sequence(self, events: Iterator[Any], path: KeyPath, depth: int) -> list[Any]:
        items: list[Any] = []
        values = self.source.values
        for event in events:
            if type(event) is SequenceEndEvent:
                return items
            here = (*path, len(items))
            values[here] = (event.start_mark.line + 1, event.start_mark.column + 1)
            items.append(self._node(event, events, here, depth + 1))
        return items

    def _mapping(self, events: Iterator[Any], path: KeyPath, depth: int) -> dict[Any, Any]:
        result = PosDict()
        result.lc = LineCol(self.source, path)
        merges: list[tuple[Mapping[Any, Any], KeyPath | None]] = []
        keys = self.source.keys
        values = self.source.values
        for event in events:
            if type(event) is MappingEndEvent:
                break
            if type(event) is not ScalarEvent:
                raise DisaggError(
                    "a map key must be a plain value, not a list, map or alias",
                    location=self._loc(event.start_mark),
                    hint="use a string key",
                )
            key = self._scalar(event)
            self.budget.node()  # keys count, as in the linter's and expansion's tallies
            key_pos = _pos(event.start_mark)
            value_event = next(events)
            if key == "<<" and event.implicit[0] and event.tag is None:
                merges.extend(self._merge_sources(value_event, events, path, depth))
                continue
            here = (*path, key)
            # a duplicate key: srt-slurm's loader keeps the last one (DA012 names both)
            if key in result and isinstance(result[key], dict | list):
                self._forget(here)
            keys[here] = key_pos
            values[here] = (value_event.start_mark.line + 1, value_event.start_mark.column + 1)
            result[key] = self._node(value_event, events, here, depth + 1)
        for source_map, source_path in merges:
            for key, value in source_map.items():
                if key not in result:
                    result[key] = value
                    if source_path is not None:
                        self.source.aliases[(*path, key)] = (*source_path, key)
        return result

    def _forget(self, path: KeyPath) -> None:
        """Drop the positions recorded below a key whose value a duplicate replaces."""
        depth = len(path)
        for table in (self.source.keys, self.source.values, self.source.aliases):
            for recorded in [p for p in table if len(p) > depth and p[:depth] == path]:
                del table[recorded]

    def _merge_sources(
        self, event: Any, events: Iterator[Any], path: KeyPath, depth: int
    ) -> list[tuple[Mapping[Any, Any], KeyPath | None]]:
        """The maps a `<<:` key merges in (one map or a list of maps), with their paths."""
        here = (*path, "<<")
        value = self._node(event, events, here, depth + 1)
        found: list[tuple[Mapping[Any, Any], KeyPath | None]] = []
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise DisaggError(
                    "`<<` merges maps only",
                    location=self._loc(event.start_mark),
                    hint="write `<<: *anchor` where the anchor names a map",
                )
            item_path = (*here, index) if isinstance(value, list) else here
            found.append((item, self.source.aliases.get(item_path, item_path)))
        return found
