"""CLI commands grouped by area; each module exposes `register(app)`."""

from __future__ import annotations

import importlib

import typer

# The area (module) of each top-level command, so that `disagg lint FILE` imports and
# builds the lint area only: typer makes a click command of every registered command
# before it parses, some 30 ms of every start for all of them. The order is the order
# of `disagg --help`: the path a recipe takes, then the tools around it.
# tests/test_cli_habits.py checks this table against what each area registers.
COMMANDS = {
    "lint": "lint",
    "plan": "recipes",
    "schema": "recipes",
    "migrate": "migrate",
    "stage": "staging",
    "check-model": "staging",
    "run": "run",
    "logs": "run",
    "submit": "slurm",
    "status": "slurm",
    "cancel": "slurm",
    "cluster": "cluster",
    "collect": "collect",
    "report": "report",
    "bench": "bench",
    "sim-engine": "sim",
}
AREAS = tuple(dict.fromkeys(COMMANDS.values()))


def register_area(app: typer.Typer, area: str) -> None:
    importlib.import_module(f"disagg.commands.{area}").register(app)


def register_all(app: typer.Typer) -> None:
    for area in AREAS:
        register_area(app, area)
