"""Read a YAML file into plain Python data plus the source position of every key and value.

Not a round-trip loader (ruamel's takes seconds for the corpus in pure Python): libyaml's
C event parser through PyYAML, the parser srt-slurm reads recipes with, so both accept the
same files; a file it refuses is parsed again by PyYAML's pure-Python parser before it is
called malformed. Every way a file can be unreadable becomes a positioned `DisaggError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yaml import MarkedYAMLError, YAMLError

from disagg.errors import DisaggError, SourceLocation
from disagg.probe import MAX_RECIPE_BYTES, probe, read_limited, shortened
from disagg.recipe.source_map import Pos, SourceMap
from disagg.recipe.yaml_events import EventBuilder, parse_events


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
    if not found.exists:
        raise DisaggError(f"{what} file not found: {name}", hint="check the path")
    data = read_limited(path, what=f"{what} file", limit=MAX_RECIPE_BYTES)
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _line_col_of_offset(data.decode("latin-1"), nul)  # one char per byte
        raise DisaggError(
            f"{what} file is binary (NUL byte), not YAML text",
            location=SourceLocation(name, line, col),
            hint=f"point at a YAML {what}, not a compiled or archived file",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _line_col_of_offset(data.decode("latin-1"), exc.start)
        raise DisaggError(
            f"{what} file is not UTF-8 text (byte 0x{data[exc.start]:02x})",
            location=SourceLocation(name, line, col),
            hint="save the file as UTF-8",
        ) from None


def _line_col_of_offset(text: str, offset: int) -> Pos:
    head = text[:offset]
    return head.count("\n") + 1, offset - head.rfind("\n")


def load_yaml(path: Path, *, what: str = "recipe") -> LoadedYaml:
    """Parse one YAML file (one document) into plain data with positions."""
    return parse_yaml(read_text(path, what=what), file=display_path(path), what=what)


def parse_yaml(text: str, *, file: str, what: str = "recipe") -> LoadedYaml:
    """Parse YAML text; `file` is only used in messages and positions."""
    try:
        builder, data = _build(text, file)
    except MarkedYAMLError:
        try:  # the C scanner refuses some valid YAML; the pure-Python parser decides
            builder, data = _build(text, file, pure=True)
        except YAMLError as exc:
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
    return LoadedYaml(file=file, data=data, source=builder.source)


def _build(text: str, file: str, *, pure: bool = False) -> tuple[EventBuilder, Any]:
    builder = EventBuilder(SourceMap(file))
    return builder, builder.build(parse_events(text, pure=pure))


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
