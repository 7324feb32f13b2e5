"""The run's time limits after start-up, from the recipe's `limits:` section.

Start-up is bounded by each role's health deadline; these bound the rest: a request
without a token, a point without progress, a point, the whole run, and a started
role that stops answering its health check (probed during the canary and every
point). Defaults end a run on a hung worker within about half a minute.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from disagg.recipe.job_sections import LimitsSection


class LimitsPlan(BaseModel):
    """Seconds; None = no limit."""

    model_config = ConfigDict(extra="forbid")

    request_timeout_s: float = 900.0
    stall_timeout_s: float | None = 300.0
    point_timeout_s: float | None = None
    run_timeout_s: float | None = None
    liveness_timeout_s: float = 30.0
    liveness_interval_s: float = 2.0


def limits_plan(section: LimitsSection) -> LimitsPlan:
    def seconds(value: float | None) -> float | None:
        return None if value is None else float(value)

    return LimitsPlan(
        request_timeout_s=float(section.request_timeout),
        stall_timeout_s=seconds(section.stall_timeout),
        point_timeout_s=seconds(section.point_timeout),
        run_timeout_s=seconds(section.run_timeout),
        liveness_timeout_s=float(section.liveness_timeout),
        liveness_interval_s=float(section.liveness_interval),
    )
