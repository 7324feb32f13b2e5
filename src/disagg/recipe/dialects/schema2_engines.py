"""Schema 2's engine per role (`roles.<role>.engine`) read into disagg's one engine per plan.

Knobs every role's engine writes alike are the engine's; a knob on one role's engine,
or a role naming another engine, is kept with that role (`role_overrides.<role>`), and
`honoured` judges whether a plan can run it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from disagg.errors import DisaggError
from disagg.recipe.source_map import KeyPath

# (role, its engine, the variant's engine) a plan runs: TileRT's disaggregated layout, whose
# prefill is stock `vllm serve` loading TileRT's KV connector (srt-slurm's TileRT examples
# write it as a `vllm` prefill role beside a `tilert` decode role).
MIXED_PAIRS = frozenset({("prefill", "vllm", "tilert")})
# The role whose engine is the variant's when the roles name different engines.
PRIMARY_ROLE = "decode"


@dataclass
class RoleEngines:
    """The variant's engine map, where it was written, and what each role keeps apart."""

    engine: dict[str, Any]
    where: KeyPath
    kept: dict[str, dict[str, Any]] = field(default_factory=dict)  # role -> {engine?, knobs?}


def as_engine(value: Any) -> dict[str, Any]:
    """`engine: vllm` or `engine: {type: vllm, ...}` as one map."""
    return {"type": value} if isinstance(value, str) else dict(value)


def check_role_engines(raw: Mapping[str, Any], locate: Any) -> None:
    """Schema 2's rule on where engines are written: a top-level `engine` and a role's own
    are never both written, and once one role names its engine every role does."""
    roles = raw.get("roles")
    if not isinstance(roles, Mapping):
        return
    named = [r for r, spec in roles.items() if isinstance(spec, Mapping) and "engine" in spec]
    if not named:
        return
    if "engine" in raw:
        role = named[0]
        raise DisaggError(
            f"`roles.{role}.engine` is written beside the top-level `engine`; a `schema: 2` "
            "recipe writes either one top-level engine or an explicit engine on every role, "
            "never both",
            location=locate(("roles", role, "engine"), True),
            hint="drop the role's `engine` to run the top-level engine on it, or move the "
            "top-level `engine` onto every role (role engines do not inherit its knobs)",
        )
    for role, spec in roles.items():
        if isinstance(spec, Mapping) and "engine" not in spec:
            raise DisaggError(
                f"`roles.{role}` names no engine while `roles.{named[0]}.engine` does; with no "
                "top-level `engine`, every role names its own",
                location=locate(("roles", role), True),
                hint=f"add `engine:` to `roles.{role}`, or write one top-level `engine` "
                "for every role instead",
            )


def split(raw: Mapping[str, Any]) -> RoleEngines:
    """The variant's engine and each role's own part of it (see the module docstring)."""
    top = raw.get("engine")
    if top is not None:
        return RoleEngines(as_engine(top), ("engine",))
    roles = raw.get("roles") or {}
    written = {
        str(role): as_engine(spec["engine"])
        for role, spec in roles.items()
        if isinstance(spec, Mapping) and spec.get("engine")
    }
    if not written:
        return RoleEngines({"type": "sglang"}, ("engine",))
    kinds = {engine.get("type") for engine in written.values()}
    mixed = len(kinds) > 1 and PRIMARY_ROLE in written
    primary = PRIMARY_ROLE if mixed else next(iter(written))
    kind = written[primary].get("type")
    same = {role: engine for role, engine in written.items() if engine.get("type") == kind}
    # Knobs every role of the variant's engine writes alike are engine-wide.
    shared = {
        key: value
        for key, value in written[primary].items()
        if all(key in engine and engine[key] == value for engine in same.values())
    }
    found = RoleEngines(shared, ("roles", primary, "engine"))
    for role, engine in written.items():
        other = engine.get("type") != kind  # its knobs are all its own engine's
        own = {k: v for k, v in engine.items() if k != "type" and (other or k not in shared)}
        kept: dict[str, Any] = {}
        if other:
            kept["engine"] = engine.get("type")
        if own:
            kept["knobs"] = own
        if kept:
            found.kept[role] = kept
    return found
