"""What every command shares: the `--cluster` wording, the checks on the paths it writes
(`--out`, run directories), and help that speaks the user's words.

Typer 0.2x prints each option's Python type in help (`<list[Path]>`); `plain_help_types()`
makes it show the placeholders command-line tools use (`TEXT`, `N`, `PATH`, `a|b|c`).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, get_args

from disagg.errors import DisaggError
from disagg.probe import probe, shortened
from disagg.writable import why_unwritable

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
