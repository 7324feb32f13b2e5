"""Container images as squashfs files on the shared filesystem, imported once.

Pyxis/enroot start a container fastest from a squashfs file on the shared filesystem.
The first job (or `disagg stage`) imports a missing one under the cross-node lock; the
others wait. No job ever starts on a half-written image: the import writes a temporary
name beside the target, which is checked (squashfs magic) and renamed over it atomically.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

from disagg.errors import EXIT_FINDINGS, DisaggError
from disagg.plan.model import ContainerToStage
from disagg.staging.locks import DirLock

SQUASHFS_MAGIC = b"hsqs"  # little-endian superblock magic 0x73717368


class ContainerImportError(DisaggError):
    """The import command failed or produced something that is not a squashfs image."""

    exit_code = EXIT_FINDINGS


def is_squashfs(path: Path) -> bool:
    """A whole-enough squashfs file: starts with the superblock magic and is not empty."""
    try:
        with path.open("rb") as handle:
            return handle.read(4) == SQUASHFS_MAGIC
    except OSError:
        return False


def ensure_container(spec: ContainerToStage, *, log: Callable[[str], None]) -> Path:
    """Return the squashfs path, importing it first if it does not exist."""
    target = Path(spec.squashfs)
    if is_squashfs(target):
        log(f"container {target}: present")
        return target
    if target.exists():
        raise ContainerImportError(
            f"container {target} exists but is not a squashfs image",
            hint="remove it so that it can be imported again",
        )
    lock = DirLock(target.with_name(target.name + ".lock"), on_wait=log)
    with lock:
        if is_squashfs(target):  # another job imported it while we waited
            log(f"container {target}: imported by another job")
            return target
        _import(spec, target, log)
    return target


def _import(spec: ContainerToStage, target: Path, log: Callable[[str], None]) -> None:
    temporary = target.with_name(f".{target.name}.{socket.gethostname()}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    argv = [part.format(image=spec.image, output=str(temporary)) for part in spec.import_command]
    log(f"container {target}: importing {spec.image} ({shlex.join(argv)})")
    try:
        completed = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise ContainerImportError(
            f"container import command not found: {argv[0]}",
            hint="install it on the submit and compute nodes, or set `container_import` "
            "in the cluster profile",
        ) from None
    try:
        if completed.returncode != 0:
            tail = "\n".join((completed.stderr or completed.stdout).splitlines()[-10:])
            raise ContainerImportError(
                f"importing {spec.image} failed with exit code {completed.returncode}:\n{tail}",
                hint=f"run it by hand to see the full output: {shlex.join(argv)}",
            )
        if not is_squashfs(temporary):
            raise ContainerImportError(
                f"importing {spec.image} produced no squashfs image at {temporary}",
                hint="check that the import command writes to {output}",
            )
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    log(f"container {target}: imported ({target.stat().st_size} bytes)")
