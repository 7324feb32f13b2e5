"""`host_setup` as a plan carries it: which nodes run the commands, and their budget.

srt-slurm runs `host_setup.commands` on the bare host of each node it targets (`all`:
head, infra and workers; `workers`: the nodes running engine workers), joined with
`&&`, before any worker starts, and `teardown` on the same nodes after the workers
stop, even when the job failed; `timeout_seconds` bounds each node's commands.
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
