"""report.html shows each run's resolved config with secret-looking values redacted."""

from __future__ import annotations

from html import escape

from disagg.plan.model import Plan
from disagg.redact import REDACTED
from disagg.report.aggregate import load_runs
from disagg.report.axes import YMetric
from disagg.report.build import analyse
from disagg.report.html import render

from .report_fixtures import RunFactory


def test_secrets_in_a_runs_config_never_reach_the_report(make_run: RunFactory) -> None:
    runs = []
    for name, token in (("r1", "hf_FirstSecret1"), ("r2", "hf_OtherSecret2")):
        run_dir = make_run(name)
        plan = Plan.read(run_dir)
        plan.config["environment"] = {"HF_TOKEN": token, "NCCL_DEBUG": "INFO"}
        plan.config["backend"] = {"sglang_config": {"decode": {"api-key": "sk-Key3"}}}
        plan.write(run_dir)
        runs.append(run_dir)
    report = analyse(load_runs(runs), YMetric.OUTPUT)
    html = render(report)
    for secret in ("hf_FirstSecret1", "hf_OtherSecret2", "sk-Key3"):
        assert secret not in html
    assert "NCCL_DEBUG" in html and escape(REDACTED) in html


HF = "hf_" + "Ab1" * 12  # the shape Hugging Face issues: hf_ and 34 letters or digits
GH = "ghp_" + "Zx9" * 12


def test_tokens_under_any_key_and_pat_pass_key_names_never_reach_the_report(
    make_run: RunFactory,
) -> None:
    run_dir = make_run("r1")
    plan = Plan.read(run_dir)
    plan.config["environment"] = {
        "GITHUB_PAT": "github_pat_" + "x1" * 20,
        "DOCKER_PASS": "hunter2hunter2",
        "WANDB_KEY": "wb9f3e7c1d5b2a8e",
        "MODEL_SOURCE": HF,  # an ordinary key holding a Hugging Face token
        "NCCL_DEBUG": "INFO",
    }
    plan.config["benchmark"] = {"command": f"git clone https://x:{GH}@github.com/o/r && ./run"}
    plan.write(run_dir)

    html = render(analyse(load_runs([run_dir]), YMetric.OUTPUT))

    for secret in ("github_pat_x1x1", "hunter2hunter2", "wb9f3e7c1d5b2a8e", HF, GH):
        assert secret not in html
    assert "NCCL_DEBUG" in html and "INFO" in html
    assert "github.com/o/r" in html  # the rest of a command stays readable
