"""Executors: how role processes are started (local subprocesses or `srun` steps)."""
