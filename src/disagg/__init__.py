"""disagg: disaggregated LLM-serving benchmarks on Slurm, from recipe to Pareto report."""

__version__ = "0.1.0"
