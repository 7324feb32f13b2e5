"""Host paths as a containerised role sees them: through the job's container mounts.

A pyxis container sees the host only through `--container-mounts HOST:INSIDE`, so plan
time refuses a containerised role that needs a host path outside every mount, and the
paths a role is given are translated. A worker setting of the engine's path kind must be
under a mount; other text may name the image's own files, so only the host paths a mount
holds are translated there. As srt-slurm mounts them, the run directory is `/logs` and a
local model directory `/model` inside every container.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from disagg.engines.base import FlagTable
from disagg.errors import DisaggError, SourceLocation
from disagg.plan.model import Plan, RolePlan

RUN_DIR_INSIDE = "/logs"  # where a container sees the run directory
MODEL_INSIDE = "/model"  # where a container sees a local model directory
# An absolute path inside free text (a shell command): after a start, space, quote, = or :.
_TEXT_PATH = re.compile(r"(?<![^\s'\"=:])/(?!/)[^\s'\";:,]*")


def mount_pairs(mounts: Mapping[str, str]) -> list[tuple[str, str]]:
    """(host, inside) per mount, most specific host path first; pyxis options (`:ro`) dropped."""
    pairs = [
        (posixpath.normpath(host), posixpath.normpath(target.split(":", 1)[0] or host))
        for host, target in mounts.items()
    ]
    return sorted(pairs, key=lambda pair: len(pair[0]), reverse=True)


def to_container(path: str, mounts: Mapping[str, str]) -> str | None:
    """Where host `path` appears inside the container, or None when no mount holds it."""
    if not posixpath.isabs(path):
        return None
    norm = posixpath.normpath(path)
    for host, inside in mount_pairs(mounts):
        if norm == host:
            return inside
        if norm.startswith(host.rstrip("/") + "/"):
            return posixpath.join(inside, norm[len(host) :].lstrip("/"))
    return None


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def inside_view(path: str, mounts: Mapping[str, str]) -> str | None:
    """Absolute `path` as a container sees it: a host path translated by its mount, one
    already under a mount's container side (or the run directory's) kept as written;
    None when no mount holds it either way."""
    inside = to_container(path, mounts)
    if inside is not None:
        return inside + "/" if path.endswith("/") and not inside.endswith("/") else inside
    norm = posixpath.normpath(path)
    targets = [target for _host, target in mount_pairs(mounts)] + [RUN_DIR_INSIDE]
    return path if any(_under(norm, target) for target in targets) else None


def model_mount(path: str) -> tuple[str, str] | None:
    """(host, `/model`) for a local model directory given as an absolute path, else None
    (a repo id is staged into the cache mount; a relative path has no fixed host place)."""
    host = posixpath.expanduser(path)
    if not posixpath.isabs(host):
        return None
    return posixpath.normpath(host), MODEL_INSIDE


def _host_path(value: Any) -> bool:
    """An absolute path as written (a placeholder is bound, and translated, at run time)."""
    return isinstance(value, str) and posixpath.isabs(value) and "${" not in value


def _lenient(value: Any, mounts: Mapping[str, str]) -> Any:
    """A host path a mount holds, translated; any other value as written."""
    if isinstance(value, list):
        return [_lenient(item, mounts) for item in value]
    if not _host_path(value):
        return value
    inside = to_container(value, mounts)
    return value if inside is None else inside


def translate_text(text: str, mounts: Mapping[str, str]) -> str:
    """Free text (a shell command, an environment value) with every absolute path a
    mount's host side holds translated; other paths (the image's own) as written."""

    def replace(match: re.Match[str]) -> str:
        inside = to_container(match.group(0), mounts)
        return match.group(0) if inside is None else inside

    return _TEXT_PATH.sub(replace, text) if "/" in text else text


def translate_args(
    args: Mapping[str, Any], table: FlagTable, mounts: Mapping[str, str]
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A containerised worker's settings with host paths as the container sees them, and
    the (key as written, path) of every path-kind value outside every mount."""
    out: dict[str, Any] = {}
    outside: list[tuple[str, str]] = []

    def strict(key: str, value: Any) -> Any:
        if isinstance(value, list):
            return [strict(key, item) for item in value]
        if not _host_path(value):
            return value  # a repo id, a relative name, JSON text, a placeholder, a number
        inside = inside_view(value, mounts)
        if inside is None:
            outside.append((key, value))
            return value
        return inside

    for key, value in args.items():
        fields = table.path_fields(key)
        if table.is_path(key):
            out[key] = strict(str(key), value)
        elif fields:
            out[key] = _translate_fields(value, fields, partial(strict, str(key)))
        else:
            out[key] = _lenient(value, mounts)
    return out, outside


def _translate_fields(value: Any, fields: tuple[str, ...], strict: Callable[[Any], Any]) -> Any:
    """`fields` of a map value (or of its JSON text) through `strict`."""
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value  # not JSON: the engine reports it
    if not isinstance(parsed, Mapping):
        return value
    translated = {k: strict(v) if k in fields else v for k, v in parsed.items()}
    if translated == parsed:
        return value  # as written, JSON spacing included
    return json.dumps(translated) if isinstance(value, str) else translated


def in_container(plan: Plan, role: RolePlan) -> bool:
    """Whether this role's processes start inside a container image (pyxis on Slurm)."""
    return bool(role.container_image) and plan.slurm.pyxis


def translate(plan: Plan, role: RolePlan, path: str) -> str:
    """`path` as `role` sees it: unchanged on the host, through the mounts in a container."""
    if not posixpath.isabs(path) or not in_container(plan, role):
        return path  # a relative name (a simulated model's) is not a host path
    inside = to_container(path, plan.slurm.container_mounts)
    if inside is None:
        raise DisaggError(
            f"role {role.name} runs in a container, but {path} is outside every container mount",
            hint="mount the directory that holds it (cluster profile `mounts`)",
        )
    return inside


def translate_roles(plan: Plan, *, skip: frozenset[str] = frozenset()) -> None:
    """Environment values and commands of containerised roles (but those in `skip`, whose
    settings were translated one by one) with the host paths a mount holds translated."""
    mounts = plan.slurm.container_mounts
    for role in plan.roles:
        if not in_container(plan, role):
            continue
        role.env = {key: translate_text(value, mounts) for key, value in role.env.items()}
        if role.name not in skip:
            role.argv = [translate_text(word, mounts) for word in role.argv]
            role.node_argv = [[translate_text(w, mounts) for w in argv] for argv in role.node_argv]


def check_container_paths(plan: Plan, *, model_location: SourceLocation | None = None) -> None:
    """Refuse, at plan time, host paths a containerised role needs that no mount holds."""
    if not any(in_container(plan, role) for role in plan.roles):
        return
    mounts = plan.slurm.container_mounts
    staging = plan.staging
    model = model_mount(staging.local_path) if staging.local_path else None
    for host, target in mount_pairs(mounts):
        if _under(target, RUN_DIR_INSIDE):
            raise DisaggError(
                f"container mount {host}:{target} is where containers see the run directory "
                f"({RUN_DIR_INSIDE})",
                hint=f"mount it elsewhere; the run directory is always mounted at {RUN_DIR_INSIDE}",
            )
        if model is not None and target == MODEL_INSIDE and host != model[0]:
            raise DisaggError(
                f"container mount {host}:{target} is where containers see the model directory "
                f"{model[0]} ({MODEL_INSIDE})",
                location=model_location,
                hint=f"mount it elsewhere; a local model directory is mounted at {MODEL_INSIDE}",
            )
    problems: list[str] = []
    location: SourceLocation | None = None
    if staging.local_path:
        if to_container(staging.local_path, mounts) is None:
            problems.append(f"the model directory {staging.local_path}")
            location = model_location
    elif staging.models and not staging.skip:
        if staging.hf_cache is None:
            problems.append("the model cache (the cluster profile sets no `hf_cache`)")
        elif to_container(staging.hf_cache, mounts) is None:
            problems.append(f"the model cache {staging.hf_cache} (cluster profile `hf_cache`)")
        for root in staging.legacy_roots:
            # a linked legacy snapshot is an absolute host path: it resolves only at the same place
            if to_container(root, mounts) != posixpath.normpath(root):
                problems.append(f"the legacy cache root {root}, which must be mounted at {root}")
    if not problems:
        return
    shown = ", ".join(f"{host}:{inside}" for host, inside in mount_pairs(mounts)) or "none"
    raise DisaggError(
        f"workers run in container {plan.slurm.container_image} but {'; '.join(problems)} "
        f"lies outside every container mount (mounts: {shown})",
        location=location,
        hint="add a mount that holds it to the cluster profile's `mounts` (or the recipe's "
        "`container_mounts`), or stage the model below a mounted directory",
    )
