"""Benchmark adapters, one per recipe `benchmark.type`, behind one small interface.

`adapter_for(type)` returns the adapter that plans and runs that type, or raises the
one-line `unsupported: benchmark.type ...` refusal; `plan` and `submit` call it at
plan time, so a job never allocates nodes for a benchmark it would refuse.
"""

from __future__ import annotations

from disagg.workloads.base import BenchInputs, BenchmarkAdapter
from disagg.workloads.registry import adapter_for, known_types

__all__ = ["BenchInputs", "BenchmarkAdapter", "adapter_for", "known_types"]
