"""What the engine adapter says about a variant's engine settings, before any role exists:
each setting judged once, here, so that placement only asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from disagg.engines import registry
from disagg.engines.backend_fields import unhonoured as unhonoured_knobs
from disagg.engines.base import EngineAdapter, Ignored
from disagg.engines.worker import WorkerSpec
from disagg.errors import Fail, Refuse
from disagg.plan import role_engines
from disagg.plan.model import RoleKind
from disagg.plan.role_images import ADAPTER_ROLES, ROLE_KEYS
from disagg.recipe.schema import RecipeConfig
from disagg.recipe.variants import Variant


@dataclass(eq=False)
class EngineChecks:
    """The engine's verdicts on one variant; what it ignores collects in `ignored`
    (field -> why), which the plan lists."""

    variant: Variant
    adapter: EngineAdapter
    backend: Mapping[str, Any]  # the recipe's engine settings, only what it wrote
    _: KW_ONLY
    fail: Fail
    refuse: Refuse
    ignored: dict[str, str] = field(default_factory=dict, init=False)

    @property
    def config(self) -> RecipeConfig:
        return self.variant.config

    def engine_matches(self) -> None:
        """`backend.engine`, when written, names the backend's own engine, `sim` or `predict`."""
        written = self.config.backend.engine
        if written in (None, "sim", "predict", self.config.backend.type):
            return
        engine = self.variant.written_field(("backend", "engine"))
        backend = self.variant.written_field(("backend", "type"))
        raise self.fail(
            f"{engine} {written} does not match {backend} {self.config.backend.type}",
            ("backend", "engine"),
            f"remove {engine}, or write `engine: sim` to simulate this engine",
        )

    def backend_knobs(self) -> None:
        """Engine-wide knobs the engine does not carry out: refused, or listed as ignored;
        then each role's own engine's knobs alike."""
        for name, action, why in unhonoured_knobs(self.backend, self.adapter.backend_fields):
            if action == "refused":
                raise self.refuse(
                    f"{self.variant.written_name(name)} ({why})", tuple(name.split("."))
                )
            self.ignored.setdefault(name, why)
        for kind in RoleKind:
            self._role_knobs(kind)

    def _role_knobs(self, kind: RoleKind) -> None:
        """The knobs of the role's own engine (`role_overrides.<role>.knobs.<knob>`) judged by
        that engine's adapter."""
        found = role_engines.own_engine(self.config, kind)
        if found is None:
            return
        engine, knobs = found
        at = ("role_overrides", ROLE_KEYS[kind], "knobs")
        written = self.config.backend_settings(exclude_unset=True)
        alone = "one role alone cannot be simulated or predicted: write it on every role's engine"
        judged = [  # simulated or predicted: the whole job or none of it
            (common, "refused", alone)
            for common in ("engine", "predict")
            if knobs.get(common) != written.get(common)
        ]
        judged += unhonoured_knobs(knobs, registry.adapter(engine).backend_fields)
        for knob, action, why in judged:
            path = (*at, knob.removeprefix("backend."))
            if action == "refused":
                raise self.refuse(f"{self.variant.written_field(path)} ({why})", path)
            self.ignored.setdefault(".".join(path), why)

    def supported(self, kind: RoleKind, args: Mapping[str, Any], spec: WorkerSpec) -> None:
        """What the engine cannot run as written is refused now, not when the job starts."""
        refused = self.adapter.unsupported(args, spec)
        if refused is None:
            return
        key, what = refused
        head, sep, rest = what.partition(" ")
        if head.startswith("backend."):  # an internal field: named as the file wrote it
            what = self.variant.written_name(head) + sep + rest
        raise self.refuse(what, (*self.adapter.args_path(ADAPTER_ROLES[kind]), key))

    def note_ignored(self, kind: RoleKind, items: list[Ignored]) -> None:
        """A role's settings the engine does not pass on, with why."""
        path = ".".join(self.adapter.args_path(ADAPTER_ROLES[kind]))
        for item in items:
            self.ignored.setdefault(f"{path}.{item.key}", item.reason)

    def mode(self, kind: RoleKind, args: Mapping[str, Any]) -> None:
        """A mode written in a role's settings must be the role's own."""
        found = self.adapter.written_mode(args)
        if found is None:
            return
        wanted = None if kind is RoleKind.AGGREGATED else kind.value
        key, written = found
        if written is not None and written != "null" and written != wanted:
            raise self.fail(
                f"{kind.value} workers are configured with {key} {written!r}",
                (*self.adapter.args_path(ADAPTER_ROLES[kind]), key),
                f"use {wanted!r}" if wanted else "remove it for aggregated workers",
            )
