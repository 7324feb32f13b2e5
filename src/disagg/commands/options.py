"""What every command shares: the `--cluster` wording, the checks on the paths it writes
(`--out`, run directories), and help that speaks the user's words.

Paths are checked by looking, creating nothing: a run directory under a regular file or on
a read-only file system would otherwise fail half-way as an OSError from deep inside.

Typer 0.2x prints each option's Python type in help (`<list[Path]>`); `plain_help_types()`
makes it show the placeholders command-line tools use (`TEXT`, `N`, `PATH`, `a|b|c`).
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Any, get_args

from disagg.errors import DisaggError
from disagg.probe import probe, shortened

CLUSTER_HELP = (
    "cluster profile: a name (NAME.yaml in ./clusters, ./examples/clusters, "
    "~/.config/disagg/clusters) or a YAML path"
)
_LABELS = {str: "TEXT", int: "N", float: "NUMBER", Path: "PATH", bool: "BOOL"}


def placeholder(param: Any) -> str | None:
    """The help placeholder of one typer option or argument; None for a flag."""
    if param.metavar is not None:
        return str(param.metavar)
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    desc = param.type_descriptor
    if desc.is_choice:
        label = "|".join(
            str(choice.value if isinstance(choice, Enum) else choice) for choice in desc.choices
        )
    elif desc.is_path:
        label = "PATH"
    else:
        annotation = desc.annotation
        if desc.is_list and get_args(annotation):
            annotation = get_args(annotation)[0]
        label = _LABELS.get(annotation, "TEXT")
    many = param.nargs != 1 or getattr(param, "multiple", False) or desc.is_list
    return f"{label}..." if many else label


def plain_help_types() -> None:
    """Make typer's help show `placeholder(param)` instead of Python types."""
    from typer import core

    def display(self: Any, ctx: Any) -> str | None:
        return placeholder(self)

    def usage(self: Any) -> str:
        name = str(self.metavar or self.name or "").upper()
        if not self.required:
            name = f"[{name}]"
        return f"{name}..." if self.nargs != 1 and not name.endswith("...") else name

    for cls in (core.TyperOption, core.TyperArgument):
        cls.display_type_rich = display  # type: ignore[method-assign]
    core.TyperArgument._usage_display_name = usage  # type: ignore[method-assign]


def out_dir(text: str | None, *, option: str = "--out") -> Path | None:
    """The directory an `--out` option names, checked before anything is written.

    Taken as text: a path option turns `--out ""` into `.`, which would scatter a run's
    files into the current directory."""
    if text is None:
        return None
    if not text.strip():
        raise DisaggError(f"{option} is empty", hint=f"name a directory, e.g. {option} runs/mine")
    path = Path(text)
    found = probe(path)
    if found.problem is not None:
        raise DisaggError(f"{option} {shortened(text)}: {found.problem}")
    if found.exists and not found.is_dir:
        raise DisaggError(
            f"{option} {shortened(text)}: exists and is not a directory",
            hint=f"{option} names a directory to write into; pick another name",
        )
    writable_dir(path, what=option)
    return path


def writable_dir(path: Path, *, what: str) -> None:
    """Refuse (bad input) a directory to be written that cannot be: one under a regular
    file, or on a read-only file system, or not writable by this user."""
    why = why_unwritable(path, directory=True)
    if why is not None:
        raise DisaggError(
            f"{what} {shortened(path)}: {why}",
            hint="name a directory this user can create and write into",
        )


def out_file(path: Path | None, *, option: str = "--out") -> Path | None:
    """The file an `--out` option names, checked before anything is written: not empty,
    not a directory, not under a regular file, in a directory this user can write."""
    if path is None:
        return None
    if not str(path).strip():
        raise DisaggError(f"{option} is empty", hint=f"name a file, e.g. {option} out.yaml")
    why = why_unwritable(path, directory=False)
    if why is not None:
        raise DisaggError(
            f"{option} {shortened(path)}: {why}",
            hint=f"{option} names a file to write, in a directory this user can write",
        )
    return path


def why_unwritable(path: Path | str, *, directory: bool) -> str | None:
    """Why `path` cannot be created (with its missing parents) and written: as a directory
    to write files into, or as a file written beside its parent's other files. None when
    nothing in the way can be seen (the disk may still fill)."""
    target = Path(path)
    found = probe(target)
    if found.problem is not None:
        return found.problem
    if found.exists:
        if directory and not found.is_dir:
            return "exists and is not a directory"
        if not directory and found.is_dir:
            return "is a directory"
        # a file is replaced by a new one renamed over it: its directory is written
        return _not_writable(target if directory else target.parent)
    for parent in target.parents:
        above = probe(parent)
        if above.problem is not None:
            return f"{shortened(parent)}: {above.problem}"
        if not above.exists:
            continue
        if not above.is_dir:
            return f"{shortened(parent)} is not a directory"
        return _not_writable(parent)
    return None


def _not_writable(directory: Path) -> str | None:
    """Why files cannot be made in the existing `directory`, if they cannot."""
    name = shortened(directory)
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError as exc:
        return f"{name}: {exc.strerror or exc}"
    if read_only:
        return f"{name} is on a read-only file system"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"{name} is not writable (permission denied)"
    return None
