"""The images a job's roles run in and what their containers see: under pyxis, worker
settings holding host paths are rewritten to the paths inside the mounts, and one outside
every mount is refused at its line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from functools import cached_property
from typing import Any

from disagg.cluster import ClusterProfile, ModelRef, resolve_container
from disagg.engines.base import EngineAdapter, WorkerCommand
from disagg.errors import Fail
from disagg.plan.container_paths import model_mount, mount_pairs, translate_args
from disagg.plan.model import RoleKind, RolePlan
from disagg.plan.role_images import ADAPTER_ROLES, ROLE_KEYS, role_image
from disagg.recipe.schema import RecipeConfig

# A bare word (no registry, tag, digest or path): what an alias looks like.
_BARE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(eq=False)
class Containers:
    """One variant's images and mounts, worked out once: the workers, the services and the
    Slurm plan all read them."""

    config: RecipeConfig
    profile: ClusterProfile | None
    adapter: EngineAdapter
    model: ModelRef
    _: KW_ONLY
    simulated: bool
    fail: Fail
    # images an engine names for its workers, as written
    engine_images: list[str] = field(default_factory=list, init=False)

    @cached_property
    def image(self) -> str | None:
        """The image the workers run in; None when simulated or run from disagg's own
        environment."""
        written = self.config.model.container
        if self.simulated or not written or not self.adapter.in_image:
            return None
        return resolve_container(written, self.profile)

    @property
    def pyxis(self) -> bool:
        return (
            bool(self.profile and self.profile.pyxis)
            and not self.simulated
            and self.adapter.in_image
        )

    @cached_property
    def mounts(self) -> dict[str, str]:
        """host -> container: the profile's mounts, then the recipe's, then a local model
        directory at `/model` as srtctl mounts it."""
        cfg = self.config
        mounts = dict(self.profile.mounts) if self.profile else {}
        mounts.update(cfg.container_mounts)
        for pair in cfg.extra_mount:
            host, sep, inside = pair.partition(":")
            mounts[host] = inside if sep else host
        model = self.model
        mount = model_mount(model.value) if model.kind == "path" else None
        if mount is not None and self.pyxis:
            mounts[mount[0]] = mount[1]
        return mounts

    def role_image(self, kind: RoleKind) -> str | None:
        """The image a role names for itself (schema 2's `roles.<role>.container`), its alias
        resolved as `model.container`'s is; None: the job's (or none, as the job runs)."""
        written = role_image(self.config, kind)
        if written is None or self.image is None:
            return None
        return self.resolve(written, ("role_overrides", ROLE_KEYS[kind], "container"))

    def resolve(self, written: str, path: tuple[str, ...]) -> str:
        """A written image through the cluster's aliases. A bare name the cluster's non-empty
        `containers` map lacks is refused: srtctl would pass it to pyxis as an image of that
        name, which fails only on the compute nodes after the job queued (compat row
        `unknown-container-alias`). A reference with a registry, tag, digest or path is used
        as written, as srtctl does."""
        profile = self.profile
        if (
            profile is not None
            and profile.containers
            and written not in profile.containers
            and _BARE.fullmatch(written)
            and not written.endswith((".sqsh", ".squashfs"))
        ):
            raise self.fail(
                f"container {written!r} is not an alias of the cluster profile's `containers` "
                f"(aliases: {', '.join(sorted(profile.containers))})",
                path,
                "use one of those aliases, or write the full image reference (registry/name:tag) "
                "or a squashfs path",
            )
        return resolve_container(written, profile)

    def worker_image(self, command: WorkerCommand, image: str | None) -> str | None:
        """The job's image, or the one the engine names for this worker (resolved alike)."""
        if image is None or command.container is None:
            return image
        self.engine_images.append(command.container)
        return resolve_container(command.container, self.profile)

    def worker_args(
        self, kind: RoleKind, name: str, args: Mapping[str, Any], image: str | None
    ) -> Mapping[str, Any]:
        """A worker's settings as its container sees them: host paths through the mounts; a
        path-kind setting outside every mount is refused at its line, unless the recipe has
        a `setup_script`, which runs in the container first and may make it there (as
        InferenceX's Kimi-K3 recipes make their draft model under /tmp): then, as srtctl
        does, it is passed as written."""
        if image is None or not self.pyxis:
            return args
        mounts = self.mounts
        translated, outside = translate_args(args, self.adapter.flags, mounts)
        if outside and not self.config.setup_script:
            key, path = outside[0]
            shown = ", ".join(f"{h}:{i}" for h, i in mount_pairs(mounts)) or "none"
            raise self.fail(
                f"role {name} runs in container {image}, but its {key} {path} lies outside "
                f"every container mount (mounts: {shown})",
                (*self.adapter.args_path(ADAPTER_ROLES[kind]), key),
                "add a mount that holds it to the cluster profile's `mounts` (or the recipe's "
                "`container_mounts`), or write the path as the container sees it",
            )
        return translated

    def written(self, workers: list[RolePlan]) -> list[str]:
        """Every image the job's roles run in, as written (aliases), each once: the job's,
        then each placed role's own and any an engine names for its workers."""
        names = [self.config.model.container]
        kinds = {role.kind for role in workers}
        names += [role_image(self.config, kind) or "" for kind in ROLE_KEYS if kind in kinds]
        names += self.engine_images
        return list(dict.fromkeys(name for name in names if name))
