"""`disagg collect RUN_DIR... --out DIR`: valid point results, ready for InferenceX tooling.

Exit status: 0 collected, 2 bad input (no plan, a name clash, a simulated run without
--allow-simulated, a result that lacks the InferenceX fields).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from disagg.commands.options import out_dir
from disagg.console import make_console
from disagg.errors import DisaggError


def register(app: typer.Typer) -> None:
    """Add `collect`."""
    app.command("collect")(collect_command)


def _write_once(dest: Path, data: bytes) -> None:
    if dest.exists() and dest.read_bytes() != data:
        raise DisaggError(
            f"{dest} already holds a different result of the same name",
            hint="collect runs of the same recipe name into separate directories",
        )
    from disagg.atomic import write_bytes  # here: `disagg --help` lists this module

    write_bytes(dest, data)


def collect_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="run directories", show_default=False)],
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            metavar="DIR",
            help="directory to write the results into",
            show_default=False,
        ),
    ] = None,
    into: Annotated[
        str | None, typer.Option("--into", hidden=True, help="deprecated: use --out")
    ] = None,
    allow_simulated: Annotated[
        bool,
        typer.Option(
            "--allow-simulated",
            help="collect simulated results too, marked (simulated: true, hw '<gpu>-simulated')",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print what was written")] = False,
) -> None:
    """Write the valid point results of runs into one directory, with InferenceX's rows.

    Each point gives `{stem}.json` (the full result) and `agg_{stem}.json` (InferenceX's
    row: hardware, framework, precision, parallelism, per-GPU throughput, latencies in
    seconds). Simulated runs are refused unless --allow-simulated.
    """
    from disagg.atomic import write_json
    from disagg.bench.identity import setup_fields
    from disagg.bench.inferencex import to_row
    from disagg.bench.results import read_result
    from disagg.workloads.collect import valid_results

    err = make_console(stderr=True)
    if out is not None and into is not None:
        raise DisaggError("--into is the old name of --out: give one of them")
    if into is not None:
        err.print("[yellow]warning:[/] --into is deprecated; use --out", highlight=False)
    target = out_dir(out) if out is not None else out_dir(into, option="--into")
    if target is None:
        raise DisaggError("collect needs --out DIR", hint="disagg collect RUN_DIR... --out DIR")
    from disagg.plan.model import Plan

    plans = [(run_dir, Plan.read(run_dir)) for run_dir in run_dirs]
    for run_dir, plan in plans:
        if plan.simulated and not allow_simulated:
            kind = plan.predicted["label"] if plan.predicted else "a simulated run"
            raise DisaggError(
                f"{run_dir}: {kind}; its numbers are not hardware measurements",
                hint="pass --allow-simulated to collect them marked as simulated",
            )
    written: list[dict[str, str]] = []
    target.mkdir(parents=True, exist_ok=True)
    for run_dir, plan in plans:
        for key, found in valid_results(run_dir, plan):
            data = read_result(found)
            if data is None:
                continue
            # A result that names no setup (a custom benchmark's, `disagg bench`'s) takes
            # the run's: the plan is what ran it.
            fallback = setup_fields(plan) | {"disagg": plan.disaggregated}
            data = dict(data)
            for name, value in fallback.items():
                if data.get(name) is None:
                    data[name] = value
            try:
                row = to_row(data, allow_simulated=allow_simulated)
            except DisaggError as exc:
                raise DisaggError(f"{found}: {exc.message}", hint=exc.hint) from None
            dest = target / found.name
            _write_once(dest, found.read_bytes())
            agg = target / f"agg_{found.name}"
            write_json(agg, row)
            written.append(
                {"run_dir": str(run_dir), "point": key, "file": str(dest), "row": str(agg)}
            )
    if as_json:
        print(json.dumps(written, indent=2))
        return
    make_console().print(
        f"wrote {len(written)} valid result(s) and their InferenceX rows into {target}"
    )
