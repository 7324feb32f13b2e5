"""pareto.png: one series per variant, the frontier, simulated runs marked, a real image."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from disagg.report.aggregate import load_runs
from disagg.report.axes import YMetric
from disagg.report.chart import Chart, build_chart
from disagg.report.png import DPI, FRONTIER_LABEL, WATERMARK, build_figure, figure_size, write_png

from .report_fixtures import LEGEND, SIM_LEGEND, TP8_DECODE, TP8_LEGEND, RunFactory


def _chart(paths: list[Path], y: YMetric = YMetric.OUTPUT) -> Chart:
    return build_chart(load_runs(paths), y)


def _texts(fig: object) -> list[str]:
    return [text.get_text() for ax in fig.axes for text in ax.texts]  # type: ignore[attr-defined]


def test_one_series_per_variant_plus_the_frontier(make_run: RunFactory) -> None:
    chart = _chart(
        [
            make_run("dep8"),
            make_run(
                "tp8",
                selector="recipes/h200/dsr1-1k1k.yaml:override_tp8",
                speed=1.3,
                decode_args=TP8_DECODE,
            ),
        ]
    )
    fig = build_figure(chart)
    [ax] = fig.axes

    _, labels = ax.get_legend_handles_labels()
    assert labels == [FRONTIER_LABEL, LEGEND, TP8_LEGEND]
    lines = {line.get_label(): line for line in ax.get_lines()}
    frontier = lines[FRONTIER_LABEL]
    assert list(frontier.get_xdata()) == [cp.x for cp in chart.frontier]
    assert len(lines[LEGEND].get_xdata()) == 5
    assert WATERMARK not in _texts(fig)
    assert "Interactivity" in ax.get_xlabel() and "per user" in ax.get_xlabel()
    assert ax.get_ylabel() == "Output tokens/s per GPU (all GPUs)"
    # Concurrency annotations at every point (few points).
    assert {"1", "4", "16", "64", "256"} <= set(_texts(fig))


def test_simulated_runs_are_labelled_drawn_open_and_watermarked(make_run: RunFactory) -> None:
    chart = _chart([make_run("real"), make_run("sim", simulated=True, selector="r.yaml:base")])
    fig = build_figure(chart)
    [ax] = fig.axes

    lines = {line.get_label(): line for line in ax.get_lines()}
    sim = lines[f"{SIM_LEGEND} (simulated)"]
    assert sim.get_linestyle() == "--"
    assert sim.get_markerfacecolor() == "white"
    assert lines[LEGEND].get_linestyle() == "-"
    assert WATERMARK in _texts(fig)


def test_an_invalid_point_is_not_plotted(make_run: RunFactory) -> None:
    chart = _chart([make_run("r1", invalid=(64,))])
    [ax] = build_figure(chart).axes

    line = next(line for line in ax.get_lines() if line.get_label() != FRONTIER_LABEL)
    assert len(line.get_xdata()) == 4
    assert "64" not in _texts(build_figure(chart))


def test_the_png_decodes_at_the_figure_size(make_run: RunFactory, tmp_path: Path) -> None:
    chart = _chart([make_run("r1")])
    path = write_png(chart, tmp_path / "out" / "pareto.png")

    image = Image.open(io.BytesIO(path.read_bytes()))
    image.load()
    width, height = figure_size(chart)
    assert image.format == "PNG"
    assert image.size == (round(width * DPI), round(height * DPI))
    assert sum(1 for count in image.convert("L").histogram() if count) > 20  # not blank


def test_many_variants_move_the_legend_beside_the_plot(make_run: RunFactory) -> None:
    runs = [make_run(f"r{i}", selector=f"x.yaml:override_{i}", concs=(8,)) for i in range(9)]
    chart = _chart(runs)
    fig = build_figure(chart)

    assert figure_size(chart)[0] > 11.0
    [legend] = fig.legends
    assert len(legend.get_texts()) == 10  # nine series and the frontier


def test_simulated_points_do_not_set_the_frontier_of_real_runs(make_run: RunFactory) -> None:
    real = make_run("real")
    sim = make_run("sim", simulated=True, selector="r.yaml:base", speed=3.0)  # beats real
    chart = _chart([real, sim])

    assert chart.frontier and all(not cp.point.simulated for cp in chart.frontier)
    assert all(cp.point.simulated for cp in _chart([sim]).frontier)


def test_past_a_dozen_series_the_legend_goes_below_the_plot_and_keeps_what_differs(
    make_run: RunFactory,
) -> None:
    runs = [
        make_run(f"r{i}", selector=f"x.yaml:override_{i}", concs=(8, 64), speed=1 + i / 100)
        for i in range(200)
    ]
    chart = _chart(runs)
    fig = build_figure(chart)
    fig.draw_without_rendering()  # lay out, so that extents are where the PNG has them

    [ax] = fig.axes
    [legend] = fig.legends
    plot, box = ax.get_window_extent(), legend.get_window_extent()
    assert box.y1 <= plot.y0  # entirely below the plot area: it covers no point
    figure = fig.bbox
    assert figure.x0 <= box.x0 and box.x1 <= figure.x1 and figure.y0 <= box.y0
    texts = [text.get_text() for text in legend.get_texts()]
    assert len(texts) == 201 and "x.yaml:override_199" in texts
    assert all(len(text) < 40 for text in texts)  # the shared setup is said once, above
    assert any("every series: DeepSeek-R1" in text for text in _texts(fig))
