"""Where the frontends and nginx run, as srtctl places them.

srtctl's rule (`FrontendStageMixin._compute_frontend_topology`, srtctl/cli/mixins/
frontend_stage.py, the same in v1.0.68 and 2.x), for every frontend type:

- one worker node, or `enable_multiple_frontends: false`: one frontend and no nginx, on
  the head node, or where `frontend.orchestrator_placement` puts it (`first_decode` /
  `last_decode`: the first / last decode worker's first node, `placed_node` in
  srtctl/core/topology.py);
- else nginx on the head node and one frontend on each other worker node, at most
  `1 + num_additional_frontends` of them (the head is not a worker node when the
  frontend has a dedicated node, so all worker nodes count then).
"""

from __future__ import annotations

from dataclasses import dataclass

from disagg.frontends.base import FrontendContext
from disagg.plan.job_nodes import PLACEMENTS, placed_rank


@dataclass(frozen=True)
class FrontendTopology:
    """Node ranks of nginx (None: no nginx) and of each frontend, in order."""

    nginx: int | None
    frontends: tuple[int, ...]


def orchestrator_rank(ctx: FrontendContext) -> int:
    """The node of the one frontend (router, orchestrator) when there is no nginx."""
    return placed_rank(
        ctx.workers,
        ctx.frontend.orchestrator_placement,
        ctx.nodes.head,
        field=("frontend", "orchestrator_placement"),
        fail=ctx.fail,
    )


def frontend_topology(ctx: FrontendContext) -> FrontendTopology:
    """srtctl's frontend topology for this job (see the module's docstring)."""
    nodes, section = ctx.nodes, ctx.frontend
    if section.orchestrator_placement not in PLACEMENTS:  # refused even where nginx serves
        orchestrator_rank(ctx)
    if len(nodes.workers) == 1 or not section.enable_multiple_frontends:
        return FrontendTopology(nginx=None, frontends=(orchestrator_rank(ctx),))
    others = [rank for rank in nodes.workers if rank != nodes.head]
    count = min(section.num_additional_frontends + 1, len(others))
    return FrontendTopology(nginx=nodes.head, frontends=tuple(others[:count]))
