"""Garbage-collector thresholds for disagg's command-line processes.

Planning or linting a recipe corpus in one process keeps hundreds of thousands of
small containers alive (node trees, typed variants, plans). With CPython's default
thresholds (700, 10, 10) the collector walks them again and again although they form
no garbage: about a third of the CPU time of linting the shared corpus
(benchmarks/recipes.py). Collecting less often leaves that time to the work; memory
stays bounded, as the youngest generation is still collected every 20,000 allocations.
"""

from __future__ import annotations

import gc

THRESHOLDS = (20_000, 50, 100)


def tune() -> None:
    """Set the thresholds for this process (the CLI does it before any command)."""
    gc.set_threshold(*THRESHOLDS)
