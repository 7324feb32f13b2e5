"""Frontend adapters registered by `frontend.type`, and one-line refusals for the rest.

Every srt-slurm frontend type is either built here or refused at plan time with the
reason, so no recipe silently runs a frontend other than the one it names.
"""

from __future__ import annotations

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles
from disagg.frontends.direct import DirectFrontend, TrtllmServeFrontend
from disagg.frontends.dynamo import DynamoFrontend
from disagg.frontends.smg import RouterFrontend

__all__ = ["Frontend", "FrontendContext", "FrontendRoles", "frontend_for", "refusal"]

_ADAPTERS: tuple[Frontend, ...] = (
    DynamoFrontend(),
    RouterFrontend(),
    DirectFrontend(),
    TrtllmServeFrontend(),
)
REGISTRY: dict[str, Frontend] = {name: adapter for adapter in _ADAPTERS for name in adapter.types}

# srt-slurm frontend types not built here, each with why.
REFUSED: dict[str, str] = {
    "vllm-router": "not built here; smg fronts vLLM workers: `type: smg`",
    "none": "a services-only job has no endpoint to benchmark",
    "vllm-direct": "the direct vllm frontend is not built here; smg fronts vLLM: `type: smg`",
    "atomesh": "not built here",
    "tilert-router": "not built here",
}


def refusal(frontend_type: str, *, schema2: bool = False) -> str | None:
    """`frontend type X (why)` for a type this project does not run, else None; `schema2`
    names the types as schema 2 spells them (its `sglang` is the internal `sglang-direct`)."""
    if frontend_type in REGISTRY:
        return None
    from disagg.recipe.dialects.schema2 import DIRECT_FRONTENDS, FRONTEND_TYPES_BACK

    def shown(name: str) -> str:
        return FRONTEND_TYPES_BACK.get(name, name) if schema2 else name

    built = sorted({shown(name) for name in REGISTRY if schema2 or name not in DIRECT_FRONTENDS})
    why = REFUSED.get(frontend_type, f"built here: {', '.join(built)}")
    return f"frontend type {shown(frontend_type)} ({why})"


def frontend_for(frontend_type: str) -> Frontend:
    """The adapter for a type `refusal` accepted."""
    return REGISTRY[frontend_type]
