"""Frontend adapters by `frontend.type`, and one-line refusals for the rest.

A frontend is the module `frontends/<type>.py` with its `ADAPTER` (and `TYPES` when it
answers to other spellings). Every srt-slurm frontend type is built here or refused at plan
time with the reason, so no recipe silently runs a frontend other than the one it names.
"""

from __future__ import annotations

from disagg.adapter_table import AdapterTable
from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles

__all__ = ["Frontend", "FrontendContext", "FrontendRoles"]  # re-exported from base

# Imported when a recipe names its type: a plan loads its own frontend's module only.
_TABLE: AdapterTable[Frontend] = AdapterTable(Frontend, package="disagg.frontends")


def names() -> tuple[str, ...]:
    """Every frontend type built here (internal spellings)."""
    return _TABLE.names()


# srt-slurm frontend types not built here, each with why.
REFUSED: dict[str, str] = {
    "none": "a services-only job has no endpoint to benchmark",
    # Named by InferenceX's ATOM recipes; srt-slurm has no such frontend type.
    "infera": "not a frontend type srt-slurm defines",
}


def refusal(frontend_type: str, *, schema2: bool = False) -> str | None:
    """`frontend type X (why)` for a type this project does not run, else None; the types
    are named as the dialect spells them (schema 2's `sglang` is the internal
    `sglang-direct`, v1's and schema 2's `vllm` the internal `vllm-direct`)."""
    if frontend_type in _TABLE:
        return None
    from disagg.recipe.dialects import V1_FRONTEND_TYPES_BACK
    from disagg.recipe.dialects.schema2 import DIRECT_FRONTENDS, FRONTEND_TYPES_BACK

    back = FRONTEND_TYPES_BACK if schema2 else V1_FRONTEND_TYPES_BACK

    def shown(name: str) -> str:
        return back.get(name, name)

    built = sorted(
        {shown(name) for name in names() if name not in DIRECT_FRONTENDS or name in back}
    )
    why = REFUSED.get(frontend_type, f"built here: {', '.join(built)}")
    return f"frontend type {shown(frontend_type)} ({why})"


def frontend_for(frontend_type: str) -> Frontend:
    """The adapter for a type `refusal` accepted (KeyError for any other)."""
    adapter = _TABLE.get(frontend_type)
    if adapter is None:
        raise KeyError(frontend_type)
    return adapter


def local_refusal(frontend: str, simulated: bool) -> str | None:
    """Why `disagg run --local` cannot run a plan's frontend (`Plan.frontend`), else None."""
    adapter = _TABLE.get(frontend)
    return None if adapter is None else adapter.local_refusal(simulated)
