"""User-facing errors: one message, an optional source location, and the exit code it maps to.

Every error a user can cause (bad recipe, bad flag, missing file) is raised as a
`DisaggError` and printed by the CLI without a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

EXIT_OK = 0
EXIT_FINDINGS = 1  # lint findings, incomplete checkpoint, failed run
EXIT_USAGE = 2  # unreadable or invalid input


@dataclass(frozen=True)
class SourceLocation:
    """A 1-based position in a file, printed as `file:line:col`."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}" + ("" if self.column is None else f":{self.column}")


class DisaggError(Exception):
    """An error caused by input; printed as `location: message` plus an optional hint."""

    exit_code = EXIT_USAGE

    def __init__(
        self,
        message: str,
        *,
        location: SourceLocation | None = None,
        hint: str | None = None,
        exit_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class UnsupportedRecipe(DisaggError):
    """A valid recipe asking for something this project does not run: `unsupported: <what>`."""

    def __init__(self, what: str, *, location: SourceLocation | None = None) -> None:
        super().__init__(f"unsupported: {what}", location=location)
        self.what = what


# How planning code raises at a recipe field: `fail(message, field path, hint)` gives the
# positioned DisaggError, `refuse(what, field path)` the positioned `unsupported: ...`.
Fail = Callable[[str, tuple[str, ...], str | None], DisaggError]
Refuse = Callable[[str, tuple[str, ...]], UnsupportedRecipe]
