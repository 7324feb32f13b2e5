"""`disagg bench`: measure one point against any OpenAI-compatible endpoint."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlparse

import typer

from disagg.errors import EXIT_FINDINGS, DisaggError


class Endpoint(StrEnum):
    COMPLETIONS = "completions"
    CHAT = "chat"


class Http(StrEnum):
    FAST = "fast"
    AIOHTTP = "aiohttp"


class Arrival(StrEnum):
    CONSTANT = "constant"
    POISSON = "poisson"
    GAMMA = "gamma"


def check_url(url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise DisaggError(
            f"--url: {url!r} is not an http(s) URL",
            hint="pass the server's base URL, e.g. http://127.0.0.1:8000",
        )
    try:
        _ = parsed.port
    except ValueError as exc:
        raise DisaggError(f"--url: bad port in {url!r}") from exc
    return url


def _print_human(result: dict[str, Any], path: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    valid = bool(result["valid"])
    title = f"{result['point']}: {'valid' if valid else 'INVALID'}"
    table = Table(title=title, show_header=False, title_style="bold green" if valid else "bold red")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("completed / failed", f"{result['completed']} / {result['failed']}"),
        ("duration (s)", f"{result['duration']:.2f}"),
        ("request throughput (req/s)", f"{result['request_throughput']:.2f}"),
        ("output throughput (tok/s)", f"{result['output_throughput']:.1f}"),
        ("total throughput (tok/s)", f"{result['total_token_throughput']:.1f}"),
    ]
    if result.get("request_goodput") is not None:
        rows.append(("goodput (req/s)", f"{result['request_goodput']:.2f}"))
    rows += [
        (
            f"{name.upper()} mean / median / p99 (ms)",
            f"{result[f'mean_{name}_ms']:.2f} / {result[f'median_{name}_ms']:.2f}"
            f" / {result[f'p99_{name}_ms']:.2f}",
        )
        for name in ("ttft", "tpot", "itl", "e2el")
    ]
    queue = f"{result['median_client_queue_ms']:.2f} / {result['p99_client_queue_ms']:.2f}"
    rows.append(("client queue median / p99 (ms)", queue))
    if result.get("client_cpu_ms_per_request") is not None:
        rows.append(("client CPU per request (ms)", f"{result['client_cpu_ms_per_request']:.3f}"))
    rows.append(("output tokens from", str(result["output_tokens_source"])))
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    if not valid:
        console.print(
            f"[bold red]invalid:[/] {result['invalid_reason']}", highlight=False, soft_wrap=True
        )
    console.print(f"result: {path}", highlight=False, soft_wrap=True)


def bench(
    url: Annotated[
        str, typer.Option("--url", "--base-url", help="Server base URL, e.g. http://127.0.0.1:8000")
    ],
    model: Annotated[str, typer.Option("--model", help="Served model name sent in each request")],
    isl: Annotated[int, typer.Option("--isl", min=1, help="Input tokens per request")],
    osl: Annotated[int, typer.Option("--osl", min=1, help="Output tokens per request")],
    num_prompts: Annotated[int, typer.Option("--num-prompts", min=1, help="Measured requests")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for the result files")],
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            "--max-concurrency",
            min=1,
            help="Streams (or the cap with a rate)",
        ),
    ] = None,
    request_rate: Annotated[
        float | None, typer.Option("--request-rate", help="Requests/s on an absolute schedule")
    ] = None,
    endpoint: Annotated[Endpoint, typer.Option("--endpoint")] = Endpoint.COMPLETIONS,
    tokenizer: Annotated[
        str | None, typer.Option("--tokenizer", help="Model dir with tokenizer.json (text prompts)")
    ] = None,
    chat_template: Annotated[
        bool, typer.Option("--chat-template", help="Wrap prompts in the model's chat template")
    ] = False,
    save_detailed: Annotated[
        bool,
        typer.Option(
            "--save-detailed",
            help="Also keep per-request lists (ttfts, itls, ...) in the point JSON",
        ),
    ] = False,
    text_prompts: Annotated[
        bool,
        typer.Option(
            "--text-prompts/--token-id-prompts",
            help="Completions prompts as text (needed behind the sglang-router) or token ids",
        ),
    ] = False,
    ignore_eos: Annotated[bool, typer.Option("--ignore-eos/--no-ignore-eos")] = True,
    range_ratio: Annotated[
        float,
        typer.Option(
            "--range-ratio",
            min=0.0,
            max=1.0,
            help="Lengths uniform in \\[ratio*N, N] as in sa-bench; 1 = exact",
        ),
    ] = 1.0,
    arrival: Annotated[Arrival, typer.Option("--arrival")] = Arrival.POISSON,
    burstiness: Annotated[float, typer.Option("--burstiness", help="Gamma shape")] = 1.0,
    warmup: Annotated[
        int,
        typer.Option("--warmup", "--num-warmups", min=0, help="Unmeasured requests first"),
    ] = 0,
    slo: Annotated[
        str | None,
        typer.Option(
            "--slo", "--goodput", help="Goodput SLOs in ms, as vLLM: ttft:500,tpot:50,e2el:20000"
        ),
    ] = None,
    max_failure_ratio: Annotated[
        float, typer.Option("--max-failure-ratio", min=0.0, max=1.0)
    ] = 0.01,
    run_name: Annotated[str, typer.Option("--run-name", help="File name prefix")] = "bench",
    prefill_gpus: Annotated[int, typer.Option("--prefill-gpus", min=0)] = 0,
    decode_gpus: Annotated[
        int, typer.Option("--decode-gpus", min=0, help="Decode (or aggregated worker) GPUs")
    ] = 0,
    workers: Annotated[
        int, typer.Option("--workers", min=0, help="Client processes; 0 = automatic")
    ] = 0,
    request_timeout: Annotated[
        float,
        typer.Option(
            "--request-timeout",
            min=0.001,
            help="Longest one request may go without a generated token (s); "
            "keep-alive bytes do not count",
        ),
    ] = 900.0,
    stall_timeout: Annotated[
        float | None,
        typer.Option(
            "--stall-timeout",
            min=0.001,
            help="End the point, invalid, after this long with requests in flight and none "
            "progressing (s)",
        ),
    ] = None,
    point_timeout: Annotated[
        float | None,
        typer.Option(
            "--point-timeout", min=0.001, help="Longest the point may take, warm-up included (s)"
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    http: Annotated[
        Http, typer.Option("--http", help="HTTP client on the hot path (aiohttp to cross-check)")
    ] = Http.FAST,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result summary as JSON")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display")] = False,
) -> None:
    """Measure one load point (fixed concurrency or request rate) and write its result JSON.

    Exits 1 when the point is invalid (too many failures, no output, wrong output lengths).
    """
    from pydantic import ValidationError

    from disagg.bench.metrics import parse_slo
    from disagg.bench.results import DETAILED_FIELDS, PointContext
    from disagg.bench.runner import ClientOptions, run_point
    from disagg.commands.options import out_dir
    from disagg.plan.model import BenchPlan, PointPlan

    check_url(url)
    if concurrency is None and request_rate is None:
        raise DisaggError(
            "give --concurrency C, --request-rate R, or both (a rate capped at C in flight)"
        )
    if request_rate is not None and request_rate <= 0:
        raise DisaggError(f"--request-rate must be positive, got {request_rate:g}")
    if burstiness <= 0:
        raise DisaggError(f"--burstiness must be positive, got {burstiness:g}")
    out_dir(str(out))
    try:
        point = PointPlan(
            concurrency=concurrency,
            request_rate=request_rate,
            num_prompts=num_prompts,
            warmup_requests=warmup,
        )
        plan = BenchPlan(
            endpoint=endpoint.value,
            model_name=model,
            isl=isl,
            osl=osl,
            random_range_ratio=range_ratio,
            ignore_eos=ignore_eos,
            use_chat_template=chat_template,
            tokenizer=tokenizer,
            prompt_format="text" if text_prompts else "token_ids",
            arrival=arrival.value,
            burstiness=burstiness,
            max_failure_ratio=max_failure_ratio,
            slo=parse_slo(slo, flag="--slo"),
            seed=seed,
            points=[point],
        )
    except ValidationError as exc:
        raise DisaggError(f"bad bench settings: {exc}") from exc
    ctx = PointContext(
        run_name=run_name,
        point=point,
        prefill_gpus=prefill_gpus,
        decode_gpus=decode_gpus,
        disaggregated=prefill_gpus > 0,
        simulated=False,
    )
    run = run_point(
        base_url=url,
        bench=plan,
        ctx=ctx,
        out_dir=out,
        options=ClientOptions(
            workers=workers,
            request_timeout_s=request_timeout,
            http=http.value,
            save_detailed=save_detailed,
            stall_timeout_s=stall_timeout,
            point_timeout_s=point_timeout,
        ),
        quiet=quiet or as_json,
    )
    if as_json:
        summary = {k: v for k, v in run.result.items() if k not in DETAILED_FIELDS}
        summary["path"] = str(run.path)
        print(json.dumps(summary, indent=2))
    else:
        _print_human(run.result, run.path)
    if not run.valid:
        raise typer.Exit(EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    """Add `disagg bench` to the app."""
    app.command("bench")(bench)
