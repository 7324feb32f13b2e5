"""`type: generic` services: exactly the command the recipe wrote, where it says, when it
says, as srt-slurm runs one: argv without a shell, the recipe's `env` over the discovery
plane's unless `inherit_discovery_env: false`.
"""

from __future__ import annotations

from typing import ClassVar

from disagg.recipe.job_sections import ServiceSection
from disagg.services.base import ServiceContext, ServiceKind, Start


class GenericService(ServiceKind):
    node: ClassVar[str] = "head"
    start: ClassVar[Start] = "after_frontend"
    critical: ClassVar[bool] = False

    def argv(self, entry: ServiceSection, ctx: ServiceContext, image: str | None) -> list[str]:
        if not entry.command:
            raise ctx.fail(
                f"service {entry.name}: a generic service needs `command` (its argv)",
                ("services",),
                "write the program and its arguments as a list under `command:`",
            )
        return [*entry.command, *entry.args]

    def env(self, entry: ServiceSection, ctx: ServiceContext) -> dict[str, str]:
        own = super().env(entry, ctx)
        return {**ctx.discovery_env, **own} if entry.inherit_discovery_env else own


ADAPTER = GenericService()
