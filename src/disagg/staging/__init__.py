"""Model staging: the checkpoint contract, the shared cache layout, cross-node locks, prefetch.

`stage_plan` is what the in-job stage and `disagg stage` call; `checkpoint` is the
standard-library-only contract every check uses.
"""

from disagg.staging.prefetch import RepoOutcome, StagingError
from disagg.staging.stage import StagedModels, stage_plan

__all__ = ["RepoOutcome", "StagedModels", "StagingError", "stage_plan"]
