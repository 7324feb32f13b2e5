"""Read a YAML file into plain Python data plus the source position of every key and value.

Why not a round-trip loader (ruamel's keeps positions): it runs in pure Python and
takes seconds for the recipe corpus. This module drives libyaml's C event parser
through PyYAML (the parser srt-slurm itself reads recipes with, so both accept the
same files, e.g. `{image: org/name:tag-1}`, which ruamel's C scanner refuses) and
builds plain dicts/lists itself, recording `line:col` for each key path on the way,
so a bad value can be reported as `file:line:col` without a second parse. A file
the C parser refuses is parsed again by PyYAML's pure-Python parser before anything
is called malformed.

Scalars resolve as srt-slurm reads them: PyYAML's `safe_load`, i.e. YAML 1.1
(`on`/`off`/`yes`/`no` are booleans, `0755` is octal, `1e3` is text, `1:30` is 90),
with one choice of ours: timestamps stay strings, because plans are JSON.
Duplicate keys load as srt-slurm loads them (the last one wins); `SourceMap`
records both places so the linter can name them.

Every other way a file can be unreadable (missing, a directory, binary, not UTF-8,
empty, malformed, several documents, an undefined alias, nesting too deep, aliases
that expand past `disagg.recipe.limits`) becomes a `DisaggError` with a location;
nothing here lets a traceback through.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml import MarkedYAMLError, YAMLError
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
from disagg.probe import probe, shortened
from disagg.recipe.limits import MAX_DEPTH, ExpansionBudget, too_deep

Key = str | int | float | bool | None
KeyPath = tuple[Key, ...]
Pos = tuple[int, int]  # 1-based line, column

_TAG = "tag:yaml.org,2002:"
# YAML 1.1, the rules of PyYAML's resolver (what srt-slurm's `yaml.safe_load` applies).
_INT = re.compile(r"[-+]?(?:0b[01_]+|0[0-7_]+|(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)")
_INT60 = re.compile(r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+")
_FLOAT = re.compile(
    r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN)"
)
_FLOAT60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*")
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS = {
    spelling: value
    for words, value in (("true yes on", True), ("false no off", False))
    for word in words.split()
    for spelling in (word, word.capitalize(), word.upper())
}
_NUMERIC_START = frozenset("-+0123456789.")
_plain_cache: dict[str, Any] = {}


@dataclass
class SourceMap:
    """Where each key and value of one file starts, by key path (`("base", "resources", 0)`).

    An alias has its own position (where it is used); paths below an alias are found
    under the anchored node's path, which `aliases` records.
    """

    file: str
    keys: dict[KeyPath, Pos] = field(default_factory=dict)
    values: dict[KeyPath, Pos] = field(default_factory=dict)
    aliases: dict[KeyPath, KeyPath] = field(default_factory=dict)
    # A key written twice in one map: (path, first key position, the later one that wins).
    duplicates: list[tuple[KeyPath, Pos, Pos]] = field(default_factory=list)

    def find(self, path: Sequence[Key], *, key: bool = False) -> Pos | None:
        """The exact position recorded for `path` (followed through aliases), or None."""
        current: KeyPath = tuple(path)
        table = self.keys if key else self.values
        for _ in range(MAX_DEPTH):
            if current in table:
                return table[current]
            rewritten = self._through_alias(current)
            if rewritten is None:
                return None
            current = rewritten
        return None

    def _through_alias(self, path: KeyPath) -> KeyPath | None:
        for cut in range(len(path), 0, -1):
            target = self.aliases.get(path[:cut])
            if target is not None:
                return target + path[cut:]
        return None

    def locate(self, path: Sequence[Key], *, key: bool = False) -> SourceLocation:
        """`file:line:col` of `path`, else of its nearest recorded ancestor, else just the file."""
        current: KeyPath = tuple(path)
        while True:
            pos = self.find(current, key=key) or (self.find(current) if key else None)
            if pos is not None:
                return SourceLocation(self.file, pos[0], pos[1])
            if not current:
                return SourceLocation(self.file)
            current = current[:-1]


class LineCol:
    """ruamel-compatible `.lc` of a loaded map or list (0-based, like ruamel's).

    Lets code written for ruamel's round-trip containers (`container.lc.value(key)`)
    find positions in the plain containers this module builds.
    """

    __slots__ = ("_path", "_source")

    def __init__(self, source: SourceMap, path: KeyPath) -> None:
        self._source = source
        self._path = path

    def _get(self, path: KeyPath, *, key: bool) -> tuple[int, int]:
        pos = self._source.find(path, key=key)
        if pos is None:
            raise KeyError(path[-1] if path else path)
        return pos[0] - 1, pos[1] - 1

    @property
    def line(self) -> int:
        return self._get(self._path, key=False)[0]

    @property
    def col(self) -> int:
        return self._get(self._path, key=False)[1]

    def key(self, key: Key) -> tuple[int, int]:
        return self._get((*self._path, key), key=True)

    def value(self, key: Key) -> tuple[int, int]:
        return self._get((*self._path, key), key=False)

    def item(self, index: int) -> tuple[int, int]:
        return self._get((*self._path, index), key=False)


class PosDict(dict[Any, Any]):
    """A plain dict that also answers `.lc` (see LineCol)."""

    __slots__ = ("lc",)
    lc: LineCol


class PosList(list[Any]):
    """A plain list that also answers `.lc` (see LineCol)."""

    __slots__ = ("lc",)
    lc: LineCol


@dataclass(frozen=True)
class LoadedYaml:
    """A parsed file: plain data (dict/list/scalars; aliases share objects) and its positions."""

    file: str
    data: Any
    source: SourceMap


def display_path(path: Path) -> str:
    """How a file is named in messages: relative to the working directory when below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_text(path: Path, *, what: str = "recipe") -> str:
    """The file's text, or a DisaggError saying why it is not a readable YAML text file."""
    name = display_path(path)
    found = probe(path)
    if found.problem is not None:
        raise DisaggError(
            f"cannot read {what} file {shortened(name)}: {found.problem}",
            hint="check the path (each part of a file name is at most 255 bytes)",
        )
    if found.is_dir:
        raise DisaggError(
            f"a directory, not a {what} file",
            location=SourceLocation(name),
            hint=f"name a YAML file inside it, e.g. {name}/<file>.yaml",
        )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DisaggError(f"{what} file not found: {name}", hint="check the path") from None
    except OSError as exc:
        raise DisaggError(f"cannot read {name}: {exc.strerror or exc}") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _line_col_of_offset(data, nul)
        raise DisaggError(
            f"{what} file is binary (NUL byte), not YAML text",
            location=SourceLocation(name, line, col),
            hint=f"point at a YAML {what}, not a compiled or archived file",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _line_col_of_offset(data, exc.start)
        raise DisaggError(
            f"{what} file is not UTF-8 text (byte 0x{data[exc.start]:02x})",
            location=SourceLocation(name, line, col),
            hint="save the file as UTF-8",
        ) from None


def _line_col_of_offset(data: bytes | str, offset: int) -> Pos:
    head = data[:offset]
    newline = b"\n" if isinstance(head, bytes) else "\n"
    line = head.count(newline) + 1  # type: ignore[arg-type]
    col = offset - (head.rfind(newline) + 1) + 1  # type: ignore[arg-type]
    return line, col


def load_yaml(path: Path, *, what: str = "recipe") -> LoadedYaml:
    """Parse one YAML file (one document) into plain data with positions."""
    return parse_yaml(read_text(path, what=what), file=display_path(path), what=what)


def parse_yaml(text: str, *, file: str, what: str = "recipe") -> LoadedYaml:
    """Parse YAML text; `file` is only used in messages and positions."""
    try:
        source, builder, data = _build(text, file, _parser())
    except MarkedYAMLError:
        try:  # the C scanner refuses some valid YAML; the pure-Python parser decides
            source, builder, data = _build(text, file, _parser(pure=True))
        except (MarkedYAMLError, YAMLError) as exc:
            raise _yaml_error(exc, text, file) from None
    except YAMLError as exc:
        raise _yaml_error(exc, text, file) from None
    if builder.empty:
        raise DisaggError(
            f"{what} file is empty",
            location=SourceLocation(file),
            hint=f"a {what} needs at least `name`, `model`, `resources`"
            if what == "recipe"
            else None,
        )
    return LoadedYaml(file=file, data=data, source=source)


def _build(
    text: str, file: str, loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader]
) -> tuple[SourceMap, _Builder, Any]:
    source = SourceMap(file)
    builder = _Builder(source)
    return source, builder, builder.build(yaml.parse(text, Loader=loader))


def _yaml_error(exc: YAMLError, text: str, file: str) -> DisaggError:
    """The positioned DisaggError for a parser's complaint."""
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        location = SourceLocation(file, mark.line + 1, mark.column + 1) if mark else None
        problem = exc.problem or "malformed YAML"
        context = f" ({exc.context})" if exc.context else ""
        return DisaggError(
            f"malformed YAML: {problem}{context}",
            location=location or SourceLocation(file),
            hint="check indentation, quoting and brackets around this position",
        )
    position = getattr(exc, "position", None)
    location = SourceLocation(file)
    if isinstance(position, int):
        line, col = _line_col_of_offset(text, position)
        location = SourceLocation(file, line, col)
    reason = getattr(exc, "reason", None) or str(exc).splitlines()[0]
    return DisaggError(
        f"unreadable YAML: {reason}",
        location=location,
        hint="remove control characters; YAML files are plain text",
    )


def _parser(*, pure: bool = False) -> type[yaml.SafeLoader] | type[yaml.CSafeLoader]:
    """libyaml's C parser (fast; the parser srt-slurm's PyYAML uses), or PyYAML's pure one."""
    return yaml.SafeLoader if pure or not hasattr(yaml, "CSafeLoader") else yaml.CSafeLoader


def resolve_plain(value: str) -> Any:
    """YAML 1.1 resolution of an untagged plain scalar, as PyYAML does (dates, times as text)."""
    cached = _plain_cache.get(value, _plain_cache)
    if cached is not _plain_cache:
        return cached
    result: Any = value
    if value in _NULLS:
        result = None
    elif value in _BOOLS:
        result = _BOOLS[value]
    elif value[0] in _NUMERIC_START:
        if _FLOAT.fullmatch(value):
            result = _to_float(value)
        elif _INT.fullmatch(value):
            result = _to_int(value, value)
        elif _INT60.fullmatch(value) or _FLOAT60.fullmatch(value):
            result = _base_60(value)
    if len(_plain_cache) > 200_000:
        _plain_cache.clear()
    _plain_cache[value] = result
    return result


def _to_int(text: str, fallback: Any) -> Any:
    """A YAML 1.1 integer: `0b1010`, `0x1f`, `017` (octal, as PyYAML reads it), `1_000`."""
    digits = text.replace("_", "")
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("+-")
    try:
        if digits[:2] in ("0b", "0x"):
            return sign * int(digits[2:], 2 if digits[1] == "b" else 16)
        if len(digits) > 1 and digits[0] == "0":
            return sign * int(digits[1:], 8)
        return sign * int(digits)
    except (ValueError, IndexError):
        return fallback


def _base_60(text: str) -> int | float:
    """`1:30` -> 90, `-1:00:00.5` -> -3600.5 (YAML 1.1 sexagesimal numbers)."""
    sign = -1 if text.startswith("-") else 1
    parts = text.replace("_", "").lstrip("+-").split(":")
    total: int | float = 0
    for part in parts[:-1]:
        total = total * 60 + int(part)
    last = float(parts[-1]) if "." in parts[-1] else int(parts[-1])
    return sign * (total * 60 + last)


def _to_float(text: str) -> float:
    lowered = text.replace("_", "").lower()
    sign = -1.0 if lowered.startswith("-") else 1.0
    body = lowered.lstrip("+-")
    if body == ".inf":
        return sign * math.inf
    if body == ".nan":
        return math.nan
    return sign * float(body)


def _pos(mark: Any) -> Pos:
    """1-based (line, column) of a parser mark (libyaml always gives one)."""
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


class _Builder:
    """Turns a parser event stream into plain data, filling a SourceMap as it goes."""

    def __init__(self, source: SourceMap) -> None:
        self.source = source
        self.anchors: dict[str, tuple[Any, KeyPath]] = {}
        self.budget = ExpansionBudget(source.file)
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
        if tag is None or tag == "!" or tag in tuple(_TAG + name for name in allowed):
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
        if tag in ("!", _TAG + "str"):
            return text
        value: Any = None
        if tag == _TAG + "int":
            value = _to_int(text, None)
        elif tag == _TAG + "float":
            value = _to_float(text) if _FLOAT.fullmatch(text) else None
        elif tag == _TAG + "bool":
            value = _BOOLS.get(text)
        elif tag != _TAG + "null":
            raise DisaggError(
                f"unsupported YAML tag {tag}",
                location=self._loc(event.start_mark),
                hint="recipes use plain YAML values; remove the tag",
            )
        if value is None and tag != _TAG + "null":
            raise DisaggError(
                f"{text!r} is not a valid {tag.removeprefix(_TAG)}",
                location=self._loc(event.start_mark),
                hint="fix the value or drop the explicit tag",
            )
        return value

    def _sequence(self, events: Iterator[Any], path: KeyPath, depth: int) -> list[Any]:
        items = PosList()
        items.lc = LineCol(self.source, path)
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
            if key in result:  # srt-slurm's loader keeps the last one; lint names both
                self.source.duplicates.append((here, keys[here], key_pos))
                if isinstance(result[key], dict | list):
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
