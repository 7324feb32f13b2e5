"""`disagg cluster import`: an srt-slurm cluster config (`srtslurm.yaml`) -> a disagg profile."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the `cluster` command group to the app."""
    group = typer.Typer(help="Cluster profiles: import an srt-slurm cluster config.")
    app.add_typer(group, name="cluster")

    @group.command("import")
    def import_config(
        source: Annotated[Path, typer.Argument(help="srtslurm.yaml (srt-slurm cluster config)")],
        output: Annotated[
            Path | None,
            typer.Option("--out", "--output", "-o", help="write here instead of stdout"),
        ] = None,
    ) -> None:
        """Write the disagg profile an srt-slurm cluster config means (exit 2 on bad input).

        `--cluster srtslurm.yaml` already works; importing gives a file to edit, with
        the srt-slurm settings disagg does not carry out listed under ignored_settings.
        """
        import yaml

        from disagg.cluster import load_profile
        from disagg.commands.options import out_file

        out_file(output)
        profile = load_profile(source)
        data = profile.model_dump(mode="json", exclude_defaults=True)
        header = f"# disagg cluster profile imported from {source}\n"
        text = header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
        if output is None:
            typer.echo(text, nl=False)
            return
        from disagg.atomic import write_text

        write_text(output, text)
        typer.echo(f"wrote {output}")
