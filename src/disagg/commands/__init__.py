"""CLI commands grouped by area; each module exposes `register(app)`."""

from __future__ import annotations

import importlib

import typer

# One module per area, so that areas can grow without touching each other. The order
# is the order of `disagg --help`: the path a recipe takes, then the tools around it.
AREAS = (
    "lint",
    "recipes",
    "migrate",
    "staging",
    "run",
    "slurm",
    "cluster",
    "collect",
    "report",
    "bench",
    "sim",
)


def register_all(app: typer.Typer) -> None:
    for area in AREAS:
        module = importlib.import_module(f"disagg.commands.{area}")
        module.register(app)
