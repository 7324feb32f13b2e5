"""Plans: a variant placed on nodes. `model` is the JSON contract written to plan.json."""

from disagg.plan.model import (
    BenchPlan,
    ContainerToStage,
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
    "ContainerToStage",
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
