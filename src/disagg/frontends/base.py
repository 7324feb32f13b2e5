"""The frontend seam: from the worker roles the engine adapter rendered, a frontend
adapter plans every role the job runs, in health-gated start stages, and where the load
generator sends requests.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from disagg.engines.worker import WorkerSpec
from disagg.errors import Fail, Refuse
from disagg.plan.job_nodes import JobNodes
from disagg.plan.model import WORKER_KINDS, RoleKind, RolePlan
from disagg.recipe.schema import FrontendSection, RecipeConfig

PromptFormat = Literal["text", "token_ids"]


@dataclass(frozen=True)
class FrontendContext:
    """What placement knows when the frontend is planned."""

    config: RecipeConfig
    frontend: FrontendSection  # the recipe's, or the defaults when it has none
    workers: list[RolePlan]  # as the engine adapter rendered them, in placement order
    engine: str  # `sglang`, `sim`, `mocker`, ...
    simulated: bool
    served_name: str
    fail: Fail  # builds a positioned error: (message, recipe path, hint)
    model_dir: str | None  # the main model as a local directory, when it is one
    # The engine's own PD router (TRT-LLM's `trtllm-serve disaggregated`), when its KV
    # hand-over needs one: no other router can front such workers.
    engine_router: RolePlan | None
    # Worker name -> (its settings, what the plan decided about it), as the engine adapter
    # was asked: a frontend that runs the engine under its own module asks it again.
    worker_inputs: Mapping[str, tuple[Mapping[str, Any], WorkerSpec]]
    refuse: Refuse  # `unsupported: <what>` positioned at a recipe path, naming the variant
    nodes: JobNodes  # the job's nodes by purpose (head, infra, workers), as srtctl carves them
    # The job's image (`model.container` resolved), which srtctl runs its routers in
    # whatever image a role names for itself; None when the workers run in no image.
    image: str | None

    def names(self, kind: RoleKind) -> list[str]:
        return [role.name for role in self.workers if role.kind is kind]


@dataclass
class FrontendRoles:
    """An adapter's answer: every role in start order, and how requests reach them."""

    frontend: str  # the frontend that runs, as plan.json records it
    stages: list[list[RolePlan]]
    serving_role: str
    prompt_format: PromptFormat
    simulator: str | None = None  # what stands in for GPU workers, when simulated
    tokenizer: str | None = None  # for the load generator, when the adapter has one
    ignored: list[dict[str, str]] = field(default_factory=list)  # as Plan.ignored lists them
    # Recipe fields (dotted, as Plan.ignored names them) that the roles here carry out,
    # which the generic rules would otherwise list as not started (`services.etcd`).
    honoured: set[str] = field(default_factory=set)
    # Ids of `disagg.plan.compat` rows: where these roles differ from srtctl's on purpose.
    differs: list[str] = field(default_factory=list)

    @property
    def roles(self) -> list[RolePlan]:
        """Workers first (placement order), then services and frontends, as plans list them."""
        flat = [role for stage in self.stages for role in stage]
        workers = [role for role in flat if role.kind in WORKER_KINDS]
        return [*workers, *(role for role in flat if role.kind not in WORKER_KINDS)]


def written_args(
    ctx: FrontendContext,
    managed: frozenset[str],
    hint: str = "disagg picks the router's address, ports and workers from the plan",
) -> dict[str, Any]:
    """The recipe's `frontend.args`; a flag in `managed` (dashed), which the plan sets
    itself, is bad input."""
    args = dict(ctx.frontend.args or {})
    for key in args:
        if str(key).replace("_", "-") in managed:
            raise ctx.fail(
                f"frontend.args.{key} is set by disagg and cannot be overridden",
                ("frontend", "args", str(key)),
                hint,
            )
    return args


def ignored(field: str, why: str) -> dict[str, str]:
    """One entry of `Plan.ignored`: a recipe field this frontend does not carry out."""
    return {"field": field, "action": "ignored", "why": why}


class Frontend(ABC):
    """One `frontend.type`: the module `frontends/<type>.py` with its `ADAPTER`."""

    @property
    def types(self) -> tuple[str, ...]:
        """The recipe spellings this adapter answers to: its module's `TYPES`, else its name."""
        module = sys.modules[type(self).__module__]
        return tuple(getattr(module, "TYPES", (module.__name__.rpartition(".")[2],)))

    @abstractmethod
    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        """Roles, stages and serving endpoint for the workers in `ctx`."""

    def local_refusal(self, simulated: bool) -> str | None:
        """Why `disagg run --local` cannot run this frontend, else None."""
        return None
