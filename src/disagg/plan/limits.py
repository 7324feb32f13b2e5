"""The run's time limits after start-up, from the recipe's `limits:` section.

Start-up is bounded by each role's health deadline; these bound the rest, so that a hung
worker ends the run within about half a minute. A `custom` command is its own client,
which disagg cannot see request by request: the client limits do not apply to it.
Without `limits.run_timeout`, a Slurm time limit sets the run's own limit a little
earlier, so that the orchestrator tears down and keeps its results before Slurm kills it.
"""

# No `from __future__ import annotations` here: pydantic would compile and evaluate
# each field's annotation string when the class is made, a cost every command pays.

from disagg.plan.role_model import Strict
from disagg.recipe.job_sections import LimitsSection


class LimitsPlan(Strict):
    """Seconds; None = no limit."""

    request_timeout_s: float = 900.0
    stall_timeout_s: float | None = 300.0
    point_timeout_s: float | None = None
    run_timeout_s: float | None = None
    liveness_timeout_s: float = 30.0
    liveness_interval_s: float = 2.0
    serving_gap_s: float = 5.0
    # False for a benchmark command: the request, stall and point limits are not applied
    client_limits: bool = True


CLIENT_LIMITS = ("request_timeout", "stall_timeout", "point_timeout")


def limits_problem(section: LimitsSection, *, command: bool) -> tuple[str, str, str] | None:
    """(field, message, hint) for a limit the run cannot keep: a serving gap the probe
    cadence cannot tell (a role probed every `liveness_interval` seconds answers no more often
    than that), or, for a benchmark command (the recipe's own client), a limit that only
    disagg's own client enforces."""
    if section.serving_gap <= section.liveness_interval:
        return (
            "serving_gap",
            f"limits.serving_gap ({section.serving_gap:g} s) must be longer than "
            f"limits.liveness_interval ({section.liveness_interval:g} s)",
            "roles are probed once per liveness_interval, so every point would count as a gap; "
            "set serving_gap to at least twice liveness_interval",
        )
    for name in CLIENT_LIMITS if command else ():
        if name in section.model_fields_set and getattr(section, name) is not None:
            return (
                name,
                f"limits.{name} bounds disagg's own load generator; a `benchmark.type: "
                "custom` command is the recipe's own client, which it cannot bound",
                "remove it (limits.run_timeout bounds the whole run, the command included), "
                "or set it to null in this variant",
            )
    return None


def limits_plan(
    section: LimitsSection, slurm_time_limit: str | None = None, *, command: bool = False
) -> LimitsPlan:
    def seconds(value: float | None) -> float | None:
        return None if value is None else float(value)

    run = seconds(section.run_timeout)
    return LimitsPlan(
        request_timeout_s=float(section.request_timeout),
        stall_timeout_s=seconds(section.stall_timeout),
        point_timeout_s=seconds(section.point_timeout),
        run_timeout_s=run if run is not None else run_limit_under(slurm_time_limit),
        liveness_timeout_s=float(section.liveness_timeout),
        liveness_interval_s=float(section.liveness_interval),
        serving_gap_s=float(section.serving_gap),
        client_limits=not command,
    )


SLURM_MARGIN_S = 60.0  # teardown and the summary need this much before Slurm's kill
SLURM_MARGIN_SHARE = 0.1  # ... or a tenth of a short limit


def slurm_margin_s(time_limit: str | None) -> float:
    """Seconds before a Slurm time limit that the run stops by itself (and Slurm warns it:
    `#SBATCH --signal=B:USR1@N`); the full margin when the limit is unknown."""
    allowed = slurm_seconds(time_limit) if time_limit else None
    if allowed is None:
        return SLURM_MARGIN_S
    return min(SLURM_MARGIN_S, SLURM_MARGIN_SHARE * allowed)


def run_limit_under(time_limit: str | None) -> float | None:
    """The run's own limit under a Slurm time limit, when the recipe sets none: the margin
    before it; None without a limit Slurm reads as a time."""
    allowed = slurm_seconds(time_limit) if time_limit else None
    return None if allowed is None else allowed - slurm_margin_s(time_limit)


def slurm_seconds(text: str) -> float | None:
    """Seconds of a Slurm time limit (`MM`, `MM:SS`, `HH:MM:SS`, `D-HH[:MM[:SS]]`);
    None for `UNLIMITED`, `INFINITE` or anything else Slurm would not read as a time."""
    days, _, clock = text.strip().rpartition("-")
    try:
        parts = [int(part) for part in clock.split(":")]
        day_count = int(days) if days else 0
    except ValueError:
        return None
    if len(parts) > 3:
        return None
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, secs = parts + [0] * (3 - len(parts))
    else:  # MM, MM:SS, HH:MM:SS
        hours, minutes, secs = parts if len(parts) == 3 else [0, *parts, 0][:3]
    if min(day_count, hours, minutes, secs) < 0:
        return None
    total = ((day_count * 24 + hours) * 60 + minutes) * 60 + secs
    return float(total) if total > 0 else None


def retimed_limits(limits: LimitsPlan, recipe_limits: object, time_limit: str | None) -> LimitsPlan:
    """The run's limits under another Slurm time limit (a resubmission after a TIMEOUT): only
    the run limit moves, and only when the variant's `limits:` mapping (`recipe_limits`) set
    none (it was then derived from the old Slurm limit)."""
    if isinstance(recipe_limits, dict) and recipe_limits.get("run_timeout") is not None:
        return limits
    return limits.model_copy(update={"run_timeout_s": run_limit_under(time_limit)})
