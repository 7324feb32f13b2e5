"""report.html as a reader sees it: rendered by headless Chromium, checked on the page.

Three runs of different workloads and engines (SGLang on H200 at 1k/1k, vLLM on
MI355X at 8k/1k, TRT-LLM on B200 at 1k/8k) plus a second SGLang variant: the rendered
page must hold one Pareto chart per workload, each with its own legend naming model,
GPU, engine, topology and precision, and the per-point latency distributions.
Chromium comes from `scripts/browser-up` (Debian package `chromium`); the test skips
without it unless DISAGG_REQUIRE_BROWSER=1 (set by scripts/test), where it fails.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from disagg.report.aggregate import load_runs
from disagg.report.build import analyse
from disagg.report.model import short_model
from disagg.report.write import write_report

from .report_fixtures import TP8_DECODE, RunFactory


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "headless Chromium is missing: scripts/browser-up installs it (apt `chromium`)"
        if os.environ.get("DISAGG_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _render(browser: str, page: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run Chromium in its own process group; stop the whole group if it outlives its time."""
    proc = subprocess.Popen(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            f"--user-data-dir={out / 'profile'}",
            "--virtual-time-budget=20000",
            *extra,
            page.as_uri(),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"chromium did not finish rendering\n{stderr[-2000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _with_requests(run_dir: Path) -> Path:
    """Per-request records beside each result, as the load generator writes them."""
    for result in (run_dir / "results").glob("*.json"):
        data = json.loads(result.read_text())
        ttft, tpot = data["median_ttft_ms"], data["median_tpot_ms"]
        lines = [
            {
                "success": True,
                "ttft_ms": ttft * (0.7 + 0.05 * i),
                "e2el_ms": ttft + tpot * 15,
                "output_len": 16,
                "itls_ms": [tpot * (0.8 + 0.03 * j) for j in range(15)],
            }
            for i in range(12)
        ]
        result.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return run_dir


def _legend_texts(dom: str, div_id: str) -> list[str]:
    """The legend entries plotly drew in one figure's SVG."""
    start = dom.index(f'id="{div_id}"')
    following = re.compile(r'<div id="[^"]+" class="plotly-graph-div').search(dom, start + 1)
    figure = dom[start : following.start() if following else len(dom)]
    return [htmllib.unescape(t) for t in re.findall(r'class="legendtext"[^>]*>([^<]*)<', figure)]


@pytest.mark.slow
def test_the_rendered_page_has_one_chart_per_workload_with_readable_legends(
    make_run: RunFactory, tmp_path: Path
) -> None:
    browser = _chromium()
    runs = [
        _with_requests(make_run("sglang-h200", gpu_type="h200", framework="sglang")),
        _with_requests(
            make_run(
                "sglang-h200-tp8",
                gpu_type="h200",
                selector="recipes/h200/dsr1-1k1k.yaml:override_tp8",
                decode_args=TP8_DECODE,
                speed=1.2,
            )
        ),
        _with_requests(
            make_run("vllm-mi355x", gpu_type="mi355x", framework="vllm", isl=8192, speed=0.6)
        ),
        _with_requests(
            make_run(
                "trtllm-b200",
                gpu_type="b200",
                framework="trtllm",
                precision="fp4",
                osl=8192,
                model="nvidia/DeepSeek-R1-FP4",
                speed=1.4,
            )
        ),
    ]
    report = analyse(load_runs(runs), slo={"ttft": 200.0})
    out = tmp_path / "report"
    write_report(report, out)
    page = out / "report.html"

    dumped = _render(browser, page, tmp_path, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout

    charts = report.charts.charts
    assert len(charts) == 3
    for index, chart in enumerate(charts):
        # plotly drew the figure (an SVG with its title and legend), not only its data
        legend = _legend_texts(dom, f"pareto-{index}")
        expected = [chart.legend_label(series) for series in chart.series]
        assert legend[-len(expected) :] == expected, (index, legend)
        model = short_model(chart.workload.model if chart.workload else None)
        assert all(entry.startswith(model) for entry in expected)
        assert f"ISL {chart.workload.isl}" in chart.subtitle if chart.workload else False
        assert _legend_texts(dom, f"dist-{index}"), "no latency distribution drawn"
    assert _legend_texts(dom, "pareto-0")[0] == "Pareto frontier"  # two variants share it
    assert "Pareto frontier" not in _legend_texts(dom, "pareto-1")  # one run: no band
    text = htmllib.unescape(re.sub(r"<[^>]+>", " ", dom))
    for needle in (
        "DeepSeek-R1 · ISL 1024 · OSL 1024",
        "DeepSeek-R1 · ISL 8192 · OSL 1024",
        "DeepSeek-R1-FP4 · ISL 1024 · OSL 8192",
        "MI355X · vllm",
        "B200 · trtllm · 1P TP8 / 1D TP8·DPA · FP4",
        "Variants compared",
        "Config differences",
        "goodput req/s",
    ):
        assert needle in text, needle
    assert 'data-filter="hw"' in dom and 'data-filter="framework"' in dom

    shot = tmp_path / "page.png"
    taken = _render(browser, page, tmp_path, f"--screenshot={shot}", "--window-size=1400,5200")
    assert taken.returncode == 0 and shot.stat().st_size > 50_000, taken.stderr[-2000:]
    keep = os.environ.get("DISAGG_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
        shutil.copy(out / "pareto.png", Path(keep).with_name("pareto.png"))
