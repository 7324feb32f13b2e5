"""`disagg sim-engine`: run one simulated SGLang worker (flags as for sglang.launch_server)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add `sim-engine` to the app."""

    @app.command(
        "sim-engine",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )
    def sim_engine(ctx: typer.Context) -> None:
        """Run a simulated SGLang worker: launch_server flags plus --sim-* constants (--help)."""
        from disagg.engines.sim.main import run

        raise typer.Exit(run(ctx.args))
