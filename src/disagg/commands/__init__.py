"""CLI commands grouped by area; each module exposes `register(app)`."""

from __future__ import annotations

import importlib

import typer

# One module per area, so that areas can grow without touching each other.
AREAS = ("recipes", "staging", "run", "slurm", "bench", "report", "sim", "lint")


def register_all(app: typer.Typer) -> None:
    for area in AREAS:
        module = importlib.import_module(f"disagg.commands.{area}")
        module.register(app)
