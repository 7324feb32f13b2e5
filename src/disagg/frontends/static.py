"""What srt-slurm's other static routers (`atomesh`, `tilert-router`) share here.

Each is its engine project's own router, in front of workers whose KV hand-over only it
drives. Neither is installed here: a plan renders its command for a cluster job, `disagg
run --local` refuses a real one by name, and smg stands in over simulated workers, which
the plan names (`frontend`, `differs`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import ClassVar

from disagg.frontends.base import Frontend, FrontendContext, FrontendRoles
from disagg.frontends.topology import routed
from disagg.plan.model import HealthPlan

ROUTER_HEALTH_DEADLINE_S = 300.0


class StaticRouter(Frontend):
    """An engine project's own router over that engine's workers; smg stands in over
    simulated ones."""

    engine: ClassVar[str]  # the engine whose workers it routes
    what: ClassVar[str]  # for messages: "ATOM's router (atomesh)"
    others: ClassVar[str]  # why another engine's workers are refused, and what fronts them
    health_path: ClassVar[str]
    env: ClassVar[Mapping[str, str]] = {}

    @abstractmethod
    def argv(self, ctx: FrontendContext) -> tuple[list[str], list[str]]:
        """(argv, named ports) of one router over the context's workers."""

    def plan(self, ctx: FrontendContext) -> FrontendRoles:
        if ctx.simulated:  # smg, named as standing in: the workers speak SGLang's P/D protocol
            from disagg.frontends.smg import ADAPTER as smg

            planned = smg.plan(ctx)
            planned.frontend = f"{planned.frontend} (standing in for {ctx.frontend.type})"
            planned.differs = ["static-router-stand-in", *planned.differs]  # compat rows
            return planned
        name = self.types[0]
        if ctx.engine != self.engine:
            raise ctx.refuse(
                f"frontend type {name} over {ctx.engine} workers ({self.others})",
                ("frontend", "type"),
            )
        argv, ports = self.argv(ctx)
        health = HealthPlan(path=self.health_path, deadline_s=ROUTER_HEALTH_DEADLINE_S)
        # the model's image (srtctl: "static routers use the model/backend image when
        # omitted"), also when a role names its own
        return routed(
            ctx,
            argv,
            frontend=name,
            ports=ports,
            health=health,
            differs=["static-router-command"],
            env=self.env,
            image=ctx.image,
        )

    def local_refusal(self, simulated: bool) -> str | None:
        if simulated:
            return None
        return (
            f"frontend type {self.types[0]} runs {self.what}, which is not installed on this "
            "machine; submit the recipe to a cluster (`disagg submit`), or simulate it "
            "(`engine: sim`), which runs smg in its place"
        )
