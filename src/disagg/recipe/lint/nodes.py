"""One cheap pass over a YAML file's events (libyaml): a node tree that keeps what a load hides.

A plain load forgets anchors, so it cannot tell a variant that aliases its sibling from
one that repeats a value. This keeps every anchor and alias with its position and
top-level block, and scans on past an undefined alias so DA002 can say where an anchor
of that name appears later. It stops, like the loader, at `disagg.recipe.limits`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from disagg.errors import DisaggError, SourceLocation
from disagg.recipe.limits import MAX_DEPTH, ExpansionBudget, too_deep
from disagg.recipe.yaml_events import parse_events
from disagg.recipe.yaml_scalars import TAG, resolve_plain


def _tagged(tag: str, text: str) -> Any:
    """Scalars with an explicit core tag (`!!int 3`); anything else keeps its text."""
    if tag in (TAG + "int", TAG + "float", TAG + "bool", TAG + "null"):
        value = resolve_plain(text)
        return text if isinstance(value, str) else value
    return text


@dataclass(slots=True, eq=False)
class Node:
    """A composed node: `kind` is map, seq or scalar; line/col are 1-based."""

    kind: str
    line: int
    col: int
    block: str | None  # top-level key this node is under (None for the root)
    path: tuple[str, ...]
    anchor: str | None = None
    value: Any = None  # scalar value
    # a seq's items, a map's pairs (the composer's lists; a scalar shares the empty tuple)
    items: Sequence[Node] = ()
    pairs: Sequence[tuple[Node, Node]] = ()

    def get(self, key: str) -> Node | None:
        """The value node of `key` in a map node (last wins, as in a load)."""
        found = None
        for k, v in self.pairs:
            if k.kind == "scalar" and k.value == key:
                found = v
        return found


@dataclass(frozen=True, slots=True)
class Spot:
    """Where an anchor or alias is written: its name, position and top-level block."""

    name: str
    line: int
    col: int
    block: str | None
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Anchor(Spot):
    node: Node


@dataclass(frozen=True, slots=True)
class Alias(Spot):
    target: Anchor | None  # None: undefined at this point of the document


@dataclass(slots=True)
class SyntaxProblem:
    """Why the file could not be read (the parser's error, or a bound), 1-based position."""

    message: str
    line: int | None
    col: int | None
    hint: str | None = None


@dataclass(slots=True)
class ScannedFile:
    """Everything one event pass learned about a file."""

    path: str
    text: str
    root: Node | None = None
    anchors: list[Anchor] = field(default_factory=list)
    aliases: list[Alias] = field(default_factory=list)
    syntax: SyntaxProblem | None = None
    # every node of the first document once, in `walk` order, recorded while composing
    nodes: list[Node] = field(default_factory=list)

    @property
    def undefined(self) -> list[Alias]:
        return [alias for alias in self.aliases if alias.target is None]


class _Composer:
    """Builds the node tree from the event stream. It runs once per node of every linted
    file, so it dispatches on the exact event type (libyaml's are never subclassed)."""

    def __init__(self, scanned: ScannedFile, events: Iterator[yaml.Event]) -> None:
        self.scanned = scanned
        self.events = events
        self.defined: dict[str, Anchor] = {}
        self.budget = ExpansionBudget()
        self.order: list[Node] = []  # each node made, in the order made (= `walk` order)

    def node(
        self, event: yaml.Event, block: str | None, path: tuple[str, ...], depth: int = 0
    ) -> Node:
        mark = event.start_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        if type(event) is yaml.AliasEvent:
            name = str(event.anchor)
            target = self.defined.get(name)
            self.scanned.aliases.append(Alias(name, line, col, block, path, target))
            if target is not None:
                self.budget.alias(name, SourceLocation(self.scanned.path, line, col))
                return target.node
            missing = Node("scalar", line, col, block, path)
            self.order.append(missing)
            return missing
        anchor: str | None = getattr(event, "anchor", None)
        budget = self.budget
        start = budget.total
        budget.node()
        if type(event) is yaml.ScalarEvent:
            text = str(event.value)
            tag = event.tag
            if tag and tag != "!":
                value = _tagged(str(tag), text)
            elif event.implicit[0] and not event.style:
                value = resolve_plain(text)
            else:
                value = text
            made = Node("scalar", line, col, block, path, anchor, value)
            self.order.append(made)
        elif depth >= MAX_DEPTH:
            raise too_deep(SourceLocation(self.scanned.path, line, col))
        elif type(event) is yaml.SequenceStartEvent:
            items: list[Node] = []
            made = Node("seq", line, col, block, path, anchor, items=items)
            self.order.append(made)
            for child in self.events:
                if type(child) is yaml.SequenceEndEvent:
                    break
                items.append(self.node(child, block, (*path, str(len(items))), depth + 1))
        elif type(event) is yaml.MappingStartEvent:
            pairs: list[tuple[Node, Node]] = []
            made = Node("map", line, col, block, path, anchor, pairs=pairs)
            self.order.append(made)
            top = not path and block is None
            events = self.events
            for child in events:
                if type(child) is yaml.MappingEndEvent:
                    break
                key = self.node(child, block, path, depth + 1)
                name = str(key.value) if key.kind == "scalar" else "?"
                value = self.node(next(events), name if top else block, (*path, name), depth + 1)
                pairs.append((key, value))
        else:  # pragma: no cover - the parser emits nothing else inside a document
            raise AssertionError(f"unexpected event {event!r}")
        if anchor:
            record = Anchor(str(anchor), line, col, block, path, made)
            self.defined[record.name] = record
            self.scanned.anchors.append(record)
            budget.anchored(record.name, start)
        return made


def scan(path: str, text: str) -> ScannedFile:
    """Compose `text` once; a syntax error is recorded (with what was seen before it).

    libyaml's parser, then PyYAML's pure-Python one where libyaml calls the text malformed,
    as the loader does, so lint never reports a syntax error in a file plan reads."""
    scanned, malformed = _scan(path, text)
    if malformed:
        scanned, _ = _scan(path, text, pure=True)
    return scanned


def _scan(path: str, text: str, *, pure: bool = False) -> tuple[ScannedFile, bool]:
    """The scan with one parser, and whether that parser called the text malformed."""
    scanned = ScannedFile(path, text)
    events = parse_events(text, pure=pure)
    composer = _Composer(scanned, events)
    try:
        for event in events:
            if isinstance(event, yaml.DocumentStartEvent):
                first = next(events)
                if isinstance(first, yaml.DocumentEndEvent):
                    continue
                root = composer.node(first, None, ())
                if scanned.root is None:
                    scanned.root = root
                    scanned.nodes = composer.order
                composer.order = []  # later documents are not linted
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or str(exc)
        scanned.syntax = SyntaxProblem(
            f"YAML syntax error: {problem}",
            mark.line + 1 if mark else None,
            mark.column + 1 if mark else None,
        )
        return scanned, True
    except yaml.YAMLError as exc:
        scanned.syntax = SyntaxProblem(f"YAML syntax error: {exc}", None, None)
    except DisaggError as exc:  # a bound of disagg.recipe.limits
        where = exc.location
        line = where.line if where else None
        scanned.syntax = SyntaxProblem(exc.message, line, where.column if where else None, exc.hint)
    return scanned, False


def to_python(node: Node | None) -> Any:
    """Plain dicts/lists/scalars for a node (aliases become copies; `<<` merge keys apply)."""
    if node is None:
        return None
    if node.kind == "scalar":
        return node.value
    if node.kind == "seq":
        return [to_python(item) for item in node.items]
    out: dict[Any, Any] = {}
    merged: dict[Any, Any] = {}
    for key, value in node.pairs:
        if key.kind == "scalar" and key.value == "<<" and key.anchor is None:
            sources = value.items if value.kind == "seq" else [value]
            for source in reversed(sources):
                merged.update(to_python(source) if source.kind == "map" else {})
            continue
        name = key.value if key.kind == "scalar" else str(to_python(key))
        out[name] = to_python(value)
    return {**merged, **out} if merged else out


def scalars(node: Node) -> list[Node]:
    """The scalar value(s) a value node holds (a zip list holds one per variant)."""
    if node.kind == "seq":
        return [item for item in node.items if item.kind == "scalar"]
    return [node] if node.kind == "scalar" else []


def is_env_map(path: tuple[str, ...]) -> bool:
    last = path[-1] if path else ""
    return last.endswith("environment") or last in ("env", "export_env")


def walk(node: Node) -> Iterator[Node]:
    """Every node below `node` once, depth first (alias targets are not revisited)."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(reversed(current.items))
        for key, value in reversed(current.pairs):
            stack.append(value)
            stack.append(key)
