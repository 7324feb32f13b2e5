"""Plans: a variant placed on nodes. `model` is the JSON contract written to plan.json."""

from disagg.plan.model import (
    BenchPlan,
    GpuVendor,
    HealthPlan,
    ModelToStage,
    Plan,
    PointPlan,
    RoleKind,
    RolePlan,
    SlurmPlan,
    StagingPlan,
)

__all__ = [
    "BenchPlan",
    "GpuVendor",
    "HealthPlan",
    "ModelToStage",
    "Plan",
    "PointPlan",
    "RoleKind",
    "RolePlan",
    "SlurmPlan",
    "StagingPlan",
]
