"""`host_setup` as a plan carries it: srt-slurm runs its commands on the bare host of each
node it targets before any worker starts, and `teardown` after they stop.
"""

from __future__ import annotations

from disagg.plan.model import HostSetupPlan, RolePlan
from disagg.recipe.job_sections import HostSetupSection


def host_setup_plan(
    section: HostSetupSection | None, workers: list[RolePlan], nodes: int
) -> HostSetupPlan | None:
    """The recipe's host setup on the node ranks it names; None when it runs nothing."""
    if section is None or not (section.commands or section.teardown):
        return None
    if section.nodes == "workers":
        ranks = sorted({rank for role in workers for rank in role.node_ranks})
    else:
        ranks = list(range(nodes))
    return HostSetupPlan(
        commands=section.commands,
        teardown=section.teardown,
        node_ranks=ranks,
        ignore_failure=section.ignore_failure,
        timeout_s=float(section.timeout_seconds),
    )
