"""Look a user-given path up without letting the OS's refusal escape as a traceback.

`Path.exists()` and friends raise for a name the OS will not look up at all (a
component longer than 255 bytes, say), so every command that stats a path from the
command line asks here instead and reports the reason as bad input.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class PathProbe:
    """What a path is: `problem` is the OS's reason when it cannot even be looked up."""

    exists: bool
    is_dir: bool = False
    is_file: bool = False
    problem: str | None = None


def probe(path: Path | str) -> PathProbe:
    """Stat `path` (following symlinks); a missing path is `exists=False`, never an error."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return PathProbe(exists=False)
    except OSError as exc:
        if isinstance(exc, NotADirectoryError):
            return PathProbe(exists=False)
        return PathProbe(exists=False, problem=exc.strerror or str(exc))
    except ValueError as exc:  # an embedded NUL byte
        return PathProbe(exists=False, problem=str(exc))
    mode = info.st_mode
    return PathProbe(exists=True, is_dir=stat.S_ISDIR(mode), is_file=stat.S_ISREG(mode))


def shortened(name: str | Path, limit: int = 120) -> str:
    """A path as named in a message, cut when it is too long to be a real name anyway."""
    text = str(name)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."
